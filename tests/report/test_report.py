"""`python build.py`: the HTML page and the PDF, built the way a user builds them."""
import calendar
import hashlib
import re
import shutil
import time

import pytest

from conftest import ROOT, run_cli



def _titles():
    from derivations import REGISTRY
    return [s.title for s in REGISTRY.sections.values()]


@pytest.fixture(scope="module")
def built(report_build):
    return report_build


def test_build_writes_every_output(built):
    out, r = built
    for f in ("report.html", "report.pdf", "reference.html", "reference.pdf", "results.json"):
        assert (out / f).stat().st_size > 1000, f
    svgs = sorted(p.name for p in (out / "figures").glob("*.svg"))
    assert {"step_time_vs_batch.svg", "cost_vs_batch.svg", "hardware_by_year.svg", "context_sweep.svg"} <= set(svgs)
    for stage in ("load", "check", "evaluate", "audit", "figures", "render", "pdf", "write"):
        # each stage's time, and what it computed or kept in brackets where it says
        assert re.search(rf"^\s+{stage}\s+\d+\.\d\d s(   \([^\n]+\))?$", r.stderr, re.M), stage


def test_html_is_self_contained(built):
    html = (built[0] / "report.html").read_text()
    # the only scripts are the explorer's, inline: its data, its printed functions, its page script
    assert html.lower().count("<script") == 3
    assert not re.search(r"<script[^>]*\bsrc\b", html, re.I)
    assert not re.search(r"fetch\(|XMLHttpRequest|import\(|WebSocket", html)   # scripts fetch nothing
    # nothing is fetched: no external src, stylesheet, import or url(); plain <a> links are fine
    assert not re.search(r"""\bsrc\s*=\s*["']?(https?:)?//""", html, re.I)
    assert "<link" not in html.lower() and "@import" not in html
    assert not re.search(r"url\((?!#)", html)  # SVG clip paths use url(#id): internal only
    assert html.count("<svg") >= 5          # figures inline
    assert html.count("<math") > 50          # formulas as MathML
    for t in _titles():
        assert t.replace("'", "&#39;") in html or t in html
    ref = (built[0] / "reference.html").read_text()   # the reference: no script at all, nothing fetched
    assert "<script" not in ref.lower() and "<link" not in ref.lower() and "@import" not in ref
    assert not re.search(r"""\bsrc\s*=""", ref, re.I) and not re.search(r"url\((?!#)", ref)
    assert ref.count("<math") > 500
    for t in _titles():
        assert t.replace("'", "&#39;") in ref or t in ref


def test_results_json_is_written_as_json_dumps_would_write_each_entry(built):
    """results.json's pairs are written as text directly (chalkboard/build.py, results_json_parts):
    each entry line must read back to the value json.dumps(..., sort_keys=True) writes, byte for byte."""
    import json
    text = (built[0] / "results.json").read_text()
    assert json.loads(text)["results"]
    lines = [ln for ln in text.splitlines() if ln.startswith('  "')]
    assert len(lines) > 128   # every pair, chip, model and quantity has its line
    for ln in lines:
        key, value = ln.strip().rstrip(",").split(": ", 1)
        assert json.dumps(json.loads(value), sort_keys=True, ensure_ascii=False) == value, key
    assert text.startswith("{\n \"hardware\": {\n") and text.endswith("\n }\n}\n")


def test_results_json_has_values_inputs_and_sources(built):
    import json
    d = json.loads((built[0] / "results.json").read_text())
    pair = d["results"]["h100-sxm|deepseek-v3"]
    assert pair["values"]["balance_batch"]["unit"] == "sequence"
    assert pair["inputs"]["hbm_bandwidth"]["source"].startswith("hardware.yaml: h100-sxm.hbm_bandwidth")
    assert "rental_price" in str(d["results"]["rubin|deepseek-v3"]["not_applicable"])  # no public price
    assert d["quantities"]["balance_batch"]["sympy"]


def test_pdf_text_has_sections_and_numbers(report_pdf_text):
    from chalkboard.data.loader import load
    from chalkboard.evaluation.evaluate import Scenario
    from chalkboard.typeset.fmt import fmt

    text = report_pdf_text
    flat = re.sub(r"\s+", " ", text)
    for t in _titles():
        assert re.sub(r"\s+", " ", t) in flat, t
    sc = Scenario(load(ROOT), "gb200-nvl72", "deepseek-v3")
    for n in ("step_time", "latency_floor", "balance_batch", "drain_time", "kv_bytes_per_token"):
        number = fmt(sc.value(n)).split(" ")[0]
        assert number in flat, (n, number)
    assert "Audit of the lecture" in flat or not (ROOT / "claims.yaml").exists()


def _sha(p):
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_two_builds_are_byte_identical(built, tmp_path):
    """The PDF too (fixed dates, deterministic id), whatever the hash seed and time zone."""
    import os
    import subprocess
    import sys
    out = tmp_path / "again"
    env = {**os.environ, "PYTHONHASHSEED": "12345", "TZ": "Pacific/Kiritimati"}
    r = subprocess.run([sys.executable, str(ROOT / "build.py"), "--out", str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    for f in ("report.html", "report.pdf", "report.typ", "reference.html", "reference.pdf", "reference.typ",
              "results.json", "figures/step_time_vs_batch.svg"):
        assert _sha(built[0] / f) == _sha(out / f), f


@pytest.mark.slow
def test_a_build_is_the_same_from_shipped_kept_or_computed_sympy_work(tmp_path):
    """SymPy's work comes from derivations/solved.pickle (a fresh clone), from .cache/ (a later
    build) or is computed (no shipped file for these sources): the report is the same byte for byte.
    A form kept unevaluated (3*(L*a/2 + 2*N)) once came back distributed from the shipped file,
    and the two builds of a full test run printed three formulas differently."""
    proj = tmp_path / "proj"
    shutil.copytree(ROOT, proj, ignore=shutil.ignore_patterns(".git", "build", "__pycache__", ".pytest_cache",
                                                              ".cache"))
    outputs = ("report.html", "report.typ", "reference.html", "reference.typ", "results.json")

    def build(name):
        r = run_cli("--out", str(tmp_path / name), "--no-pdf", root=proj)
        assert r.returncode == 0, r.stderr
        return {f: _sha(tmp_path / name / f) for f in outputs}

    shipped = build("shipped")            # an empty .cache/: the shipped results
    kept = build("kept")                  # .cache/ as the first build left it
    shutil.rmtree(proj / ".cache")
    (proj / "derivations" / "solved.pickle").unlink()
    computed = build("computed")          # nothing kept, nothing shipped
    assert shipped == kept == computed


def test_pdf_is_dated_source_date_epoch(built, data, monkeypatch):
    """SOURCE_DATE_EPOCH dates the PDF (reproducible-builds.org): the build's timestamp is the
    variable's, and the report's source compiled with it carries that date; without it, the newest
    as-of date of the data. (That a build passes its timestamp to both documents is held by
    test_two_builds_are_byte_identical.)"""
    from chalkboard.report.pdf import compile_pdf, pdf_timestamp

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    assert pdf_timestamp(data) == 1700000000
    _, pdf = compile_pdf(built[0], pdf_timestamp(data), (built[0] / "report.typ").read_text())
    assert b"D:20231114221320" in pdf
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    dated = [str(s.as_of)[:10] for s in data.sources.values() if re.match(r"\d{4}-\d{2}-\d{2}", str(s.as_of))]
    assert pdf_timestamp(data) == calendar.timegm(time.strptime(max(dated), "%Y-%m-%d"))


def test_failed_build_leaves_previous_report_untouched(built, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(built[0], out)
    before = {p: _sha(p) for p in out.rglob("*") if p.is_file()}
    bad = tmp_path / "hardware.yaml"
    bad.write_text((ROOT / "hardware.yaml").read_text().replace('"3.35 TB/s"', '"3.35 TFLOP/s"', 1))
    r = run_cli("--out", str(out), "--hardware-file", str(bad))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    after = {p: _sha(p) for p in out.rglob("*") if p.is_file()}
    assert before == after


MARKUP = '<script>alert(1)</script> #set $x$ *b* @ref'


@pytest.mark.slow
def test_markup_in_names_is_shown_literally(tmp_path):
    proj = tmp_path / "proj"
    shutil.copytree(ROOT, proj, ignore=shutil.ignore_patterns(".git", "build", "__pycache__", ".pytest_cache"))
    hw = proj / "hardware.yaml"
    text = hw.read_text()
    text = re.sub(r'(\n  h100-sxm:\n    name: )"[^"\n]*"', lambda m: m.group(1) + '"' + MARKUP.replace('"', '\\"') + '"', text, count=1)
    assert MARKUP in text
    hw.write_text(text)
    r = run_cli("--hardware", "h100-sxm", "--out", str(tmp_path / "out"), root=proj)
    assert r.returncode == 0, r.stderr
    html = (tmp_path / "out" / "report.html").read_text()
    assert "<script>alert" not in html and "alert(1)</script>" not in html
    assert html.lower().count("<script") == 3   # the explorer's own three, nothing injected
    assert "&lt;script&gt;alert(1)&lt;/script&gt; #set $x$ *b* @ref" in html
    from conftest import pdf_pages
    pdf_text = " ".join(pdf_pages(tmp_path / "out" / "report.pdf"))
    assert "<script>alert(1)</script>" in pdf_text
    assert "#set $x$ *b* @ref" in re.sub(r"\s+", " ", pdf_text)


@pytest.mark.slow
def test_an_unchanged_rebuild_does_nothing_and_any_change_rebuilds(tmp_path):
    out = tmp_path / "out"
    assert run_cli("--out", str(out), "--no-pdf").returncode == 0
    stamp = (out / ".chalkboard-stamp").read_text()
    html = (out / "report.html").stat().st_mtime_ns
    r = run_cli("--out", str(out), "--no-pdf")
    assert r.returncode == 0 and "is up to date" in r.stderr
    assert (out / "report.html").stat().st_mtime_ns == html
    # an option changed, an output edited by hand, or --force: a full build
    r = run_cli("--out", str(out), "--no-pdf", "--set", "context=4096")
    assert r.returncode == 0 and "wrote" in r.stdout
    assert (out / ".chalkboard-stamp").read_text() != stamp
    (out / "report.html").write_text("edited")
    r = run_cli("--out", str(out), "--no-pdf", "--set", "context=4096")
    assert "wrote" in r.stdout and (out / "report.html").read_text() != "edited"
    r = run_cli("--out", str(out), "--no-pdf", "--set", "context=4096", "--force")
    assert "wrote" in r.stdout


@pytest.mark.slow   # two builds of a copy; tests/cache/test_stamp_inputs.py checks in the default run that every file a build reads is hashed
def test_an_edited_data_file_rebuilds(tmp_path):
    proj = tmp_path / "proj"
    shutil.copytree(ROOT, proj, ignore=shutil.ignore_patterns(".git", "build", "__pycache__", ".pytest_cache"))
    out = tmp_path / "out"
    assert run_cli("--out", str(out), "--no-pdf", root=proj).returncode == 0
    hw = proj / "hardware.yaml"
    hw.write_text(hw.read_text().replace('"3.35 TB/s"', '"3.36 TB/s"', 1))
    r = run_cli("--out", str(out), "--no-pdf", root=proj)
    assert r.returncode == 0 and "wrote" in r.stdout


@pytest.mark.slow
def test_a_program_file_edited_during_a_build_is_not_called_up_to_date(tmp_path):
    """The stamp's fingerprint is taken when the build starts, before the program's modules are
    imported, and again before the stamp is written: a module the build had already imported,
    edited while it ran, leaves no stamp, so the next build runs the edited program (rather than
    calling output made by the old one up to date)."""
    import subprocess
    import sys

    proj = tmp_path / "proj"
    shutil.copytree(ROOT, proj, ignore=shutil.ignore_patterns(".git", "build", "__pycache__", ".pytest_cache"))
    out = tmp_path / "out"
    edit_while_running = (
        "import sys, runpy; sys.path.insert(0, '.')\n"
        "from chalkboard.cache import symcache\n"
        "load = symcache.load\n"
        "def edited_then_loaded(root):\n"
        "    data = root / 'chalkboard' / 'data' / 'loader.py'   # imported by now: this run keeps the old code\n"
        "    data.write_text(data.read_text() + '\\n# edited while a build ran\\n')\n"
        "    return load(root)\n"
        "symcache.load = edited_then_loaded\n"
        f"sys.argv = ['build.py', '--out', {str(out)!r}, '--no-pdf']\n"
        "runpy.run_path('build.py', run_name='__main__')\n")
    r = subprocess.run([sys.executable, "-c", edit_while_running], cwd=proj, capture_output=True, text=True)
    assert r.returncode == 0 and "wrote" in r.stdout, r.stderr
    r = run_cli("--out", str(out), "--no-pdf", root=proj)
    assert r.returncode == 0 and "wrote" in r.stdout, r.stderr
    r = run_cli("--out", str(out), "--no-pdf", root=proj)
    assert "is up to date" in r.stderr
