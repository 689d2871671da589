"""The report read on a phone and on paper, measured on what `python build.py` writes.

On a phone: the page opened in Debian's Chromium (driven by Playwright, as test_browser.py does) in a
390 px viewport, every folded part opened, and what is wider than the text column counted: display
formulas (at most 1% may scroll inside themselves), tables (none may) and the page itself (it
never scrolls sideways). Before this was built, 355 of 1,072 formulas and 6 of 7 tables were wider
than the column (the notation table 1,347 px).

On paper: the PDF's pages rendered by Typst at a low resolution and the share of each page's body
that is blank measured; where the parts start and where each figure and its heading are set is
asked of Typst. Before: page 2 held four lines of the contents, two pages of the middle of the
report held one half-page figure each, and the validation figure sat above its appendix's heading.
"""
import io
import json
import os
import re
import shutil

import pytest


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_browser = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="Chromium is not installed (apt-get install chromium); CI runs this test")
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def built(report_build):
    return report_build[0]


# the reference (330 pages) is measured the same way in the slow set
@pytest.fixture(scope="module", params=["report", pytest.param("reference", marks=pytest.mark.slow)])
def phone(built, request):
    """What each page measures at 390 px with every <details> open."""
    from playwright.sync_api import sync_playwright

    assert CHROMIUM, "CI must install Chromium"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        try:
            view = browser.new_page(viewport=PHONE)
            view.goto((built / f"{request.param}.html").as_uri(), wait_until="load")
            view.eval_on_selector_all("details", "els => els.forEach(e => e.open = true)")
            return {"doc": request.param} | view.evaluate("""() => {
                const shown = e => e.getClientRects().length > 0;
                const column = document.body.clientWidth - parseFloat(getComputedStyle(document.body).paddingLeft)
                    - parseFloat(getComputedStyle(document.body).paddingRight);
                const where = e => (e.closest('[id]') || {}).id;
                const maths = [...document.querySelectorAll('math[display=block]')].filter(shown);
                const wide = maths.filter(m => m.scrollWidth > m.clientWidth + 1
                                               || m.getBoundingClientRect().width > column + 1);
                const tables = [...document.querySelectorAll('table')].filter(shown);
                const wideTables = tables.filter(t => t.getBoundingClientRect().width > column + 1)
                    .map(t => where(t) + ' ' + Math.round(t.getBoundingClientRect().width));
                // text in a figure's SVG as set on the screen: matplotlib writes a text as glyph
                // outlines 100 units to the em, placed by <use> (a group a text), so a glyph's type
                // size in px is 100 times the scale from its units to the screen's; a text's size is
                // its largest glyph's (a subscript is smaller)
                const body = parseFloat(getComputedStyle(document.querySelector('p')).fontSize);
                const plots = [];
                for (const svg of document.querySelectorAll('figure svg')) {
                    if (!shown(svg)) continue;
                    const texts = [...svg.querySelectorAll('g[id*="text_"]')].filter(g => !g.parentElement.closest('g[id*="text_"]'));
                    const sizes = texts.map(g => Math.max(0, ...[...g.querySelectorAll('use')].map(u => {
                        const m = u.getScreenCTM();
                        return 100 * Math.sqrt(Math.abs(m.a * m.d - m.b * m.c)); })))
                        .filter(s => s > 0);
                    const box = svg.getBoundingClientRect();
                    plots.push({figure: where(svg), texts: sizes.length, smallest: Math.min(...sizes),
                                inside: box.left >= -0.5 && box.right <= window.innerWidth + 0.5});
                }
                return {column, formulas: maths.length, wide: wide.length,
                        wideAt: wide.slice(0, 8).map(m => where(m) + ' ' + m.scrollWidth),
                        tables: tables.length, wideTables, body, plots,
                        pageWidth: document.scrollingElement.scrollWidth, viewport: window.innerWidth};
            }""")
        finally:
            browser.close()


@needs_browser
def test_at_most_one_percent_of_formulas_scroll_on_a_phone(phone):
    assert phone["formulas"] > (500 if phone["doc"] == "reference" else 40)
    assert phone["wide"] <= 0.01 * phone["formulas"], (
        f"{phone['wide']} of {phone['formulas']} display formulas are wider than a {phone['column']:.0f} px "
        f"column, e.g. {phone['wideAt']}")


@needs_browser
def test_no_table_is_wider_than_a_phone(phone):
    assert phone["tables"] >= 6
    assert phone["wideTables"] == [], phone["wideTables"]


@needs_browser
def test_the_page_never_scrolls_sideways_on_a_phone(phone):
    assert phone["pageWidth"] <= phone["viewport"]


def test_tables_carry_labels_for_their_cards(built):
    """On a phone each row of a table of cards is a card of label-value pairs: every data cell names
    its column (a table by generation, two or three narrow columns, stays a table)."""
    page = (built / "reference.html").read_text() + (built / "report.html").read_text()
    cards = re.findall(r'<table class="cards[^"]*">(.*?)</table>', page, re.S)
    cells = [c for t in cards for c in re.findall(r"<td\b[^>]*>", t)]
    assert len(cells) > 1000
    unlabelled = [c for c in cells if "data-label=" not in c]
    assert unlabelled == [], unlabelled[:5]


# -- the PDF ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pdf_pages(built, tmp_path_factory):
    """The PDF's pages as images (Typst, 20 ppi) and where Typst sets the part headings, the
    figures and the heading each figure follows."""
    import typst

    pages = typst.compile(str(built / "report.typ"), root=str(built), format="png", ppi=20)
    here = tmp_path_factory.mktemp("pdfprobe") / "report"   # beside the figures, in a copy
    shutil.copytree(built, here)
    probe = here / "probe.typ"
    probe.write_text((built / "report.typ").read_text() + """
#context {
  let at(l) = (l.page(), l.position().y.pt())
  let starts = query(heading.where(level: 1)).map(h => h.location().page())
  // a float's own location is where it is anchored in the text; its image's, where it is set
  let figs = query(figure).zip(query(image)).map(((f, img)) => {
    let head = query(selector(heading).before(f.location())).last()
    (at(img.location()), repr(head.body).clusters().slice(0, calc.min(60, repr(head.body).clusters().len())).join(), at(head.location()))
  })
  [#metadata((starts, figs)) <probe>]
}
""")
    starts, figs = json.loads(typst.query(str(probe), "<probe>", field="value", root=str(here)))[0]
    return pages, starts, figs


def _filled(png) -> float:
    """The share of a page's body (between the margins) that is not blank: rows without ink in runs
    of three lines' height or more count as blank."""
    import matplotlib.image as mpimg
    import numpy as np

    grey = mpimg.imread(io.BytesIO(png), format="png")[..., :3].mean(axis=2)
    h = grey.shape[0]
    rows = (grey[int(0.07 * h):int(0.925 * h)] < 0.9).any(axis=1)   # the page number below
    blank, run = 0, 0
    for inked in list(rows) + [True]:
        if inked:
            blank += run if run >= 4 else 0
            run = 0
        else:
            run += 1
    return 1 - blank / len(rows)


def test_no_page_is_less_than_half_full_inside_a_part(pdf_pages):
    """Every page but the title page, the last page of a part (a part starts a page) and the last
    page is at least half full: the contents start on page 2 and fill it, and a figure does not
    leave the rest of its page blank."""
    pages, starts, _ = pdf_pages
    assert len(starts) >= 8 and len(pages) > 30
    ends = {s - 1 for s in starts} | {1, len(pages)}
    short = [(i, round(_filled(png), 2)) for i, png in enumerate(pages, start=1) if i not in ends]
    short = [s for s in short if s[1] < 0.5]
    assert short == [], f"pages (number, share filled): {short}"


def test_the_contents_start_on_page_2_and_fill_it(built, pdf_pages):
    from conftest import pdf_pages as text_of_pages

    pages, _, _ = pdf_pages
    second = text_of_pages(built / "report.pdf")[1]
    assert second.lstrip().startswith("Contents") and second.count("\n") > 30, second[:200]
    assert _filled(pages[1]) >= 0.5


def test_every_figure_is_set_after_its_heading(pdf_pages):
    """A figure floats, but never above the heading of the section it belongs to."""
    _, _, figs = pdf_pages
    assert len(figs) >= 12
    before = [(head, fig, at) for fig, head, at in figs if tuple(fig) < tuple(at)]
    assert before == [], before


def test_a_chip_id_is_not_broken_at_its_hyphen_in_running_text(built, data, tmp_path):
    """The PDF's settings keep every chip's and model's id on one line: a paragraph of ids in a
    column a few words wide, set with those settings, breaks between the ids, never inside one (it
    set 'gb200-' at the end of a line and 'nvl72' at the start of the next)."""
    import typst
    from conftest import pdf_pages

    settings = (built / "report.typ").read_text().split("// -- end of settings --")[0]
    ids = [i for i in (*data.hardware, *data.models) if "-" in i]
    assert len(ids) >= 10
    (tmp_path / "p.typ").write_text(settings + "#set page(width: 7cm, height: auto)\n"
                                    + " ".join(f"the {i}" for i in ids * 3) + "\n")
    (tmp_path / "p.pdf").write_bytes(typst.compile(str(tmp_path / "p.typ")))
    text = pdf_pages(tmp_path / "p.pdf")[0]
    assert text.count("\n") > 10   # set over many lines
    broken = {m for m in re.findall(r"([\w.]+)-\s*\n\s*([\w.-]+)", text) if "-".join(m) in " ".join(ids)}
    assert broken == set(), broken
    assert all(text.count(i) == 3 for i in ids), [i for i in ids if text.count(i) != 3]


# -- figures -----------------------------------------------------------------------------------------
@needs_browser
def test_plot_text_is_at_least_the_body_size_on_a_phone(phone):
    """Every text of every figure (axis labels, ticks, legends, notes) is set at least at the body
    text's size in a 390 px column, where the figures drawn for a desktop are scaled to about 60%
    (their text was 4-7 px against 16 px)."""
    plots = phone["plots"]   # the report's figures; the reference's one, the measurements'
    least = 14 if phone["doc"] == "report" else 1
    assert len(plots) >= least and sum(p["texts"] for p in plots) > 15 * least
    assert all(p["inside"] for p in plots), [p["figure"] for p in plots if not p["inside"]]
    small = [(p["figure"], round(p["smallest"], 1)) for p in plots if p["smallest"] < phone["body"] - 0.05]
    assert small == [], f"plot text smaller than the body's {phone['body']} px: {small}"


def _svg_text_sizes(svg: str) -> tuple[float, list[float]]:
    """An SVG figure's view box width and the type size of each of its texts, in its own units (pt),
    read from the file: each <use> of a glyph (100 units to the em) scaled by the transforms above it."""
    import math
    import xml.etree.ElementTree as ET

    def scale(transform: str) -> float:
        k = 1.0
        for op, args in re.findall(r"(\w+)\(([^)]*)\)", transform or ""):
            v = [float(a) for a in re.split(r"[\s,]+", args.strip())]
            if op == "scale":
                k *= math.sqrt(abs(v[0] * (v[1] if len(v) > 1 else v[0])))
            elif op == "matrix":
                k *= math.sqrt(abs(v[0] * v[3] - v[1] * v[2]))
        return k

    root = ET.fromstring(svg)
    sizes = []

    def walk(el, k, text):
        k *= scale(el.get("transform"))
        tag = el.tag.rsplit("}", 1)[-1]
        is_text = text is None and re.fullmatch(r"text_\d+", el.get("id") or "")
        if is_text:
            text = [0.0]
        if tag == "use" and text is not None:
            text[0] = max(text[0], 100 * k)
        for child in el:
            walk(child, k, text)
        if is_text and text[0] > 0:
            sizes.append(text[0])

    walk(root, 1.0, None)
    return float(root.get("viewBox").split()[2]), sizes


def test_plot_text_is_at_least_the_body_size_in_the_pdf(built):
    """A figure in the PDF is set the text's width wide (A4 less 2 cm margins: 170 mm); each of its
    texts, at that scale, is at least the body text's size (it was 6-9 pt against 10 pt)."""
    typ = (built / "report.typ").read_text()
    body = float(re.search(r"#set text\(font: [^\n]*size: ([\d.]+)pt", typ).group(1))   # the body's, in the settings
    assert re.search(r"#set page\(paper: \"a4\", margin: \(x: 2cm", typ)
    width = (210 - 2 * 20) / 25.4 * 72   # pt
    placed = re.findall(r'image\("(figures/[\w.]+\.svg)", width: ([\d.]+)%\)', typ)
    assert len(placed) >= 14
    small = []
    for path, share in placed:
        view, sizes = _svg_text_sizes((built / path).read_text())
        assert len(sizes) >= 5, path
        shown = min(sizes) * width * float(share) / 100 / view
        if shown < body - 0.01:
            small.append((path, round(shown, 2)))
    assert small == [], f"plot text below the body's {body} pt: {small}"


def test_captions_are_text_not_markdown(built, report_pdf_text):
    """A caption's `code` is set as code: no literal backtick in the page's or the PDF's captions."""
    page = (built / "report.html").read_text()
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", page, re.S)
    assert len(captions) >= 12
    assert [c for c in captions if "`" in c] == []
    assert "<code>build.py plan</code>" in page
    typ = (built / "report.typ").read_text()
    assert [c for c in re.findall(r"caption: \[(.*?)\]\)$", typ, re.M) if "`" in c] == []
    assert "`build.py plan`" not in report_pdf_text and "build.py plan" in report_pdf_text


def test_one_palette_a_chip_in_every_figure_and_the_explorer(built, data):
    """Each chip has one colour (and dash) from the colour-blind-safe palette, the same in the cost
    frontier figure and the explorer; the chips drawn together (those with a price) all differ."""
    from chalkboard.report.drawing import CHIP_PALETTE, chip_styles

    styles = chip_styles(data.hardware)
    assert set(styles) == set(data.hardware) and {c for c, _ in styles.values()} <= set(CHIP_PALETTE)
    priced = [h for h, e in data.hardware.items() if e.get("rental_price") is not None]
    assert len(priced) >= 5 and len({styles[h] for h in priced}) == len(priced)
    assert len({styles[h][0] for h in priced}) >= min(len(priced), len(CHIP_PALETTE))
    page = (built / "report.html").read_text()
    shown = json.loads(re.search(r'<script type="application/json" id="explorer-data">(.*?)</script>',
                                 page, re.S).group(1))["chip_styles"]
    assert {h: tuple(v) for h, v in shown.items()} == styles
    # the cost frontier's curves: black (the featured chip) or the palette's
    frontier = (built / "figures" / "plan_frontier.svg").read_text().lower()
    curves = set(re.findall(r"stroke: (#[0-9a-f]{6})", frontier)) - {"#000000", "#111111", "#ffffff", "#b0b0b0"}
    assert len(curves) >= 5 and curves <= {c.lower() for c in CHIP_PALETTE}, curves


@needs_browser
def test_the_explorers_plots_keep_their_labels_inside_and_the_others_text_size(built):
    """No label of the explorer's plots runs off the picture (the frontier's '100,000' did), and the
    frontier's text is set at about the size of the other plots' (it was three times it on a desktop)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        try:
            for width in (1280, 390):
                view = browser.new_page(viewport={"width": width, "height": 900})
                view.goto((built / "report.html").as_uri(), wait_until="load")
                out, sizes = view.evaluate("""() => {
                    const out = [], sizes = {};
                    for (const svg of document.querySelectorAll('#explorer svg')) {
                        const vb = svg.viewBox.baseVal, box = svg.getBoundingClientRect(), k = box.width / vb.width;
                        for (const t of svg.querySelectorAll('text')) {   // as set, rotation included
                            const b = t.getBoundingClientRect();
                            if (b.left < box.left - 0.5 || b.top < box.top - 0.5 || b.right > box.right + 0.5
                                || b.bottom > box.bottom + 0.5) out.push(svg.id + ' ' + t.textContent);
                        }
                        const t = svg.querySelector('text[font-size]');   // drawn at the page's size since
                        if (t) sizes[svg.id] = parseFloat(t.getAttribute('font-size')) * k;   // one body size
                    }
                    return [out, sizes]; }""")
                view.close()
                assert out == [], (width, out)
                assert "x-frontier" in sizes and len(sizes) >= 2
                others = [v for k, v in sizes.items() if k != "x-frontier"]
                assert sizes["x-frontier"] <= 1.4 * max(others), (width, sizes)
        finally:
            browser.close()


# -- content ---------------------------------------------------------------------------------------------
def test_the_summary_has_no_two_equal_columns_and_r_is_the_dense_balance_batch(data):
    """Appendix A showed 'R at bf16' and 'B* dense' equal in every row: one column says both, and the
    equality it claims holds for every chip (evaluated here, not read from the table)."""
    from chalkboard.errors import MissingInput
    from chalkboard.evaluation.evaluate import Scenario
    from chalkboard.data.featured import DENSE_REFERENCE_MODEL
    from chalkboard.report.context import summary

    s = summary(data, "deepseek-v3")
    columns = list(zip(*[[c["text"] for c in r["cells"]] for r in s["rows"]]))
    assert len(columns) == len(s["columns"]) - 1
    assert all(a != b for i, a in enumerate(columns) for b in columns[i + 1:])
    checked = 0
    for h in data.hardware:
        sc = Scenario(data, h, DENSE_REFERENCE_MODEL, {"format": "bf16"})
        try:
            r, b = sc.value("hardware_ratio").to("token").magnitude, sc.value("balance_batch").to("sequence").magnitude
        except MissingInput:
            continue
        assert abs(r - b) <= 1e-9 * r, h
        checked += 1
    assert checked >= 10


def test_reader_text_names_no_internal_file(built, report_pdf_text):
    """The lecture's notes are cited by their time in the lecture, not as 'chapters-3-7.md#P-05'."""
    page = (built / "report.html").read_text()
    page = re.sub(r"<script\b.*?</script>|<[^>]*>", " ", page, flags=re.S)   # text, not addresses in links
    pdf = re.sub(r"https?://\S+", " ", report_pdf_text)
    notes = r"chapters-3-7\.md|\d{3}_[0-9a-f]{16}\.txt"   # the lecture's notes and seeds (lecture/)
    assert re.findall(notes, page) == [] and re.findall(notes, pdf) == []
    assert "lecture ~0:56" in page


def test_the_h100s_core_figures_come_from_nvidia(data):
    """The H100's compute, memory and bandwidth cite NVIDIA's own pages (they cited a reseller's
    copy of the datasheet, marked secondary); the figures are NVIDIA's sparse headline halved."""
    h100 = data.hardware["h100-sxm"].values
    for field in ("flops_bf16", "flops_fp8", "hbm_capacity", "hbm_bandwidth"):
        src = h100[field].source
        assert not src.secondary and re.match(r"https://(www|docs)\.nvidia\.com/", src.url), (field, src.url)
    # NVIDIA's product page: BF16 1,979 and FP8 3,958 teraFLOPS with sparsity, 3.35 TB/s
    assert h100["flops_bf16"].quantity.to("TFLOP/s/chip").magnitude == pytest.approx(1979 / 2)
    assert h100["flops_fp8"].quantity.to("TFLOP/s/chip").magnitude == pytest.approx(3958 / 2, rel=1e-3)
    assert h100["hbm_bandwidth"].quantity.to("TB/s/chip").magnitude == pytest.approx(3.35)
