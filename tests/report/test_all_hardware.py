"""`python build.py build --all-hardware`: one report per chip and an index of them."""
import html as htmlmod
import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout

import pytest
from markupsafe import escape

from conftest import ROOT, run_cli

QUANTITIES = ("balance_batch", "latency_floor", "cost_floor")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("all-hardware") / "out"
    r = run_cli("build", "--all-hardware", "--no-pdf", "--out", str(out))
    assert r.returncode == 0, r.stderr
    return out, r


def _rows(index: str) -> dict:
    """chip id -> {quantity: the cell's attributes} and the link, read from the index page."""
    rows = {}
    for m in re.finditer(r'<tr id="chip-([^"]+)" data-chip="[^"]+">(.*?)</tr>', index, re.S):
        cells = {}
        for c in re.finditer(r'<td data-quantity="(\w+)"([^>]*)>', m.group(2)):
            cells[c.group(1)] = {k: htmlmod.unescape(v) for k, v in re.findall(r'([\w-]+)="([^"]*)"', c.group(2))}
        link = re.search(r'<a href="([^"]+)">', m.group(2)).group(1)
        rows[m.group(1)] = {"cells": cells, "link": link}
    return rows


def _lecture_setup(chip: str) -> list[str]:
    """The set-up the index shows for a chip (the lecture's: its batch, context and a copy on the
    chip's scale-up domain), as --set flags: eval's own defaults are a serving set-up."""
    from chalkboard.data.loader import load
    from chalkboard.evaluation.evaluate import Scenario
    sc = Scenario(load(ROOT), chip, "deepseek-v3")
    return [x for n in ("batch", "context", "chips") for x in ("--set", f"{n}={sc.mag(n):g}")]


def _eval(quantity: str, chip: str):
    """What `build.py eval QUANTITY --hardware CHIP --json` prints for the index's set-up (run in
    this process: the same entry point as the command line, without starting Python 48 times):
    (status, JSON or stderr)."""
    import build
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = build.main(["eval", quantity, "--hardware", chip, "--json", "--layout", "even",
                             *_lecture_setup(chip)])
    return status, (json.loads(out.getvalue()) if status == 0 else err.getvalue())


def test_help_explains_all_hardware(cli):
    r = cli("build", "--help")
    assert r.returncode == 0
    assert "--all-hardware" in r.stdout and "hardware/index.html" in r.stdout.replace("\n", " ").replace("  ", "")
    assert "--chip-pdf" in r.stdout


def test_chip_pdf_needs_all_hardware(cli):
    r = cli("build", "--chip-pdf", "--out", "unused-folder-never-written")
    assert r.returncode == 2 and "--all-hardware" in r.stderr
    assert not (ROOT / "unused-folder-never-written").exists()


@pytest.mark.slow
def test_index_lists_every_chip_and_each_report_names_its_chip(built, data):
    out, r = built
    index = (out / "hardware" / "index.html").read_text()
    rows = _rows(index)
    assert set(rows) == set(data.hardware)
    assert f"{len(data.hardware)} chip reports" in r.stdout
    model = data.models["deepseek-v3"].name
    for hid, row in rows.items():
        assert row["link"] == f"{hid}/report.html"
        page = (out / "hardware" / row["link"]).read_text()
        name = data.hardware[hid].name
        assert f"<strong>{escape(name)}</strong>" in page, hid   # "Featured: <model> on <chip>"
        assert f"<strong>{model}</strong>" in page
        assert page.count("<svg") >= 4, hid                                            # its figures, inline
    # the featured chip's page is the featured report itself, its links to the reference two folders up
    featured = (out / "hardware" / "gb200-nvl72" / "report.html").read_text()
    assert featured.replace('href="../../', 'href="') == (out / "report.html").read_text()


@pytest.mark.slow
def test_figures_are_drawn_for_the_chip_of_each_report(built):
    out, _ = built
    h100 = (out / "hardware" / "h100-sxm" / "report.html").read_text()
    assert "drawn for" not in h100            # H100 has a price: its own cost figure
    rubin = (out / "hardware" / "rubin" / "report.html").read_text()
    assert "rubin has no public rental price" in rubin   # no price: the stand-in is named


@pytest.mark.slow
def test_index_numbers_equal_eval(built, data):
    rows = _rows((built[0] / "hardware" / "index.html").read_text())
    missing = 0
    for hid in data.hardware:
        for q in QUANTITIES:
            cell = rows[hid]["cells"][q]
            status, d = _eval(q, hid)
            if status != 0:            # eval refuses (no rental price): the index shows a dash, saying why
                assert cell["data-display"] == "–" and "rental_price" in cell["title"] and "rental_price" in d
                missing += 1
                continue
            assert cell["data-display"] == d["display"], (hid, q)
            assert cell["data-unit"] == d["unit"], (hid, q)
            assert float(cell["data-value"]) == pytest.approx(d["value"], rel=1e-9), (hid, q)
    priced = sum("rental_price" in h.values for h in data.hardware.values())
    assert missing == len(data.hardware) - priced


@pytest.mark.slow
def test_index_agrees_with_the_command_line(built):
    """The same two numbers through a real `build.py eval` process."""
    rows = _rows((built[0] / "hardware" / "index.html").read_text())
    for hid in ("gb200-nvl72", "tpu-v6e"):
        r = run_cli("eval", "cost_floor", "--hardware", hid, "--json", *_lecture_setup(hid))
        assert r.returncode == 0, r.stderr
        assert rows[hid]["cells"]["cost_floor"]["data-display"] == json.loads(r.stdout)["display"]


@pytest.mark.slow
def test_featured_cost_floor_against_published_numbers(built):
    """GB200 NVL72 x DeepSeek-V3 at 8,192 tokens: the cost floor is set by the KV fetch,
    price x L x b_kv / W, from published figures: CoreWeave on-demand GB200 NVL72 $42.00 per hour
    for a 4-GPU instance (coreweave.com/pricing, read 2026-09-20); MLA cache per token
    (kv_lora_rank 512 + qk_rope_head_dim 64) x 61 layers x 2 bytes (DeepSeek-V3 config.json);
    8 TB/s per GPU (NVIDIA GB200 NVL72 spec: 576 TB/s / 72)."""
    price_per_s = 42.00 / 4 / 3600
    kv_bytes = (512 + 64) * 61 * 2
    expected = price_per_s * 8192 * kv_bytes / 8e12 * 1e6     # USD per million tokens
    rows = _rows((built[0] / "hardware" / "index.html").read_text())
    cell = rows["gb200-nvl72"]["cells"]["cost_floor"]
    assert cell["data-unit"] == "USD/Mtoken"
    assert float(cell["data-value"]) == pytest.approx(expected, rel=0.01)


@pytest.mark.slow
def test_unchanged_rebuild_is_up_to_date(built):
    out, _ = built
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    assert any(p.relative_to(out).parts[0] == "hardware" for p in before)
    r = run_cli("build", "--all-hardware", "--no-pdf", "--out", str(out))
    assert r.returncode == 0 and "up to date" in r.stderr
    # nothing rewritten: the same files, each untouched
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == before


def _figure_blocks(page: str) -> dict:
    return dict(re.findall(r'<figure id="fig-(\w+)">(.*?)</figure>', page, re.S))


@pytest.mark.slow
def test_a_chip_reports_figures_are_for_paper_and_shown_on_a_phone(built):
    """Each chip's own figures are drawn for paper alone and shown in a phone's column as well
    (no second, hidden rendering); the featured chip's report keeps both renderings."""
    out, _ = built
    from chalkboard.report.chip_reports import CHIP_INDEPENDENT_FIGURES
    h100 = _figure_blocks((out / "hardware" / "h100-sxm" / "report.html").read_text())
    own = {n: b for n, b in h100.items() if n not in CHIP_INDEPENDENT_FIGURES}   # (those are the featured report's)
    assert len(own) >= 10 and len(own) < len(h100)
    assert all('<div class="fig-wide" style="display: block">' in b and 'class="fig-phone"' not in b
               for b in own.values())
    featured = _figure_blocks((out / "hardware" / "gb200-nvl72" / "report.html").read_text())
    assert all('class="fig-phone"' in b for b in featured.values())


@pytest.mark.slow
def test_a_cost_figure_drawn_for_a_stand_in_is_the_stand_ins_own(built, data):
    """A chip without a price shows its priced stand-in's cost figure: the stand-in's own, byte
    for byte (drawn once for every chip that shows it)."""
    from chalkboard.report.figures import priced_stand_in
    out, _ = built
    stand_in = priced_stand_in(data, "rubin")
    assert stand_in not in (None, "rubin", "gb200-nvl72")   # (the featured report's is drawn for both media)

    def cost(chip):
        page = (out / "hardware" / chip / "report.html").read_text()
        return re.search(r"<svg.*?</svg>", _figure_blocks(page)["cost_vs_batch"], re.S).group(0)
    assert cost("rubin") == cost(stand_in)


def test_a_figure_for_paper_alone_is_the_paper_rendering_of_both(data):
    """A chip report's figure (drawing.for_paper) is the featured report's rendering for paper,
    byte for byte, without the phone's."""
    from chalkboard.report.drawing import for_paper
    from chalkboard.report.figures import step_breakdown

    both = step_breakdown(data, "h100-sxm", "deepseek-v3")
    with for_paper():
        paper = step_breakdown(data, "h100-sxm", "deepseek-v3")
    assert both.phone and paper.phone == ""
    assert str(paper) == str(both)
    assert step_breakdown(data, "h100-sxm", "deepseek-v3").phone   # both again once it is left
