"""Defects a reader of the built report can see, checked on the report as `python build.py` writes it.

The report is built once for the module (HTML and PDF). Each test looks for one class of
defect in what a person reads: the HTML page's prose (formulas, figures, styles and code
stripped) and the PDF's extracted text; one renders the PDF's pages as images to find pages
left half empty. The last test opens the page at a phone's width in
Debian's Chromium (driven by Playwright, as tests/report/test_browser.py does) and checks that it
does not scroll sideways.
"""
import html as htmllib
import os
import re
import shutil

import pytest


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def built(report_build):
    return report_build[0]


@pytest.fixture(scope="module")
def page(built):
    """The two pages' HTML, the report's then the reference's: what they say together."""
    return (built / "report.html").read_text() + (built / "reference.html").read_text()


@pytest.fixture(scope="module")
def ref_page(built):
    return (built / "reference.html").read_text()


def _prose(page: str, keep_code: bool = False) -> str:
    """What the HTML page says in words: no styles, scripts, figures or formulas (nor code,
    unless asked)."""
    s = re.sub(r"<style.*?</style>", " ", page, flags=re.S)
    s = re.sub(r"<script\b.*?</script>", " ", s, flags=re.S)   # the explorer's code and data
    s = re.sub(r"<svg.*?</svg>", " ", s, flags=re.S)
    s = re.sub(r"<math.*?</math>", " ", s, flags=re.S)
    if not keep_code:
        s = re.sub(r"<code>.*?</code>", " ", s, flags=re.S)
    s = re.sub(r"<(p|div|li|tr|td|th|h\d|summary|figcaption|section)\b[^>]*>", "\n", s)
    s = re.sub(r"<[^>]+>", "", s)
    return htmllib.unescape(s)


@pytest.fixture(scope="module")
def prose(page):
    return _prose(page)


@pytest.fixture(scope="module")
def pdf_text(report_pdf_text):
    return report_pdf_text


def _hits(pattern, text, flags=0, width=50):
    return [text[max(0, m.start() - width):m.end() + width].replace("\n", " ")
            for m in re.finditer(pattern, text, flags)][:5]


# -- template leftovers --------------------------------------------------------------------
LEFTOVERS = r"\{\{|\}\}|\{%|%\}|<<|>>|<%|%>|\{[a-z_]+(?:![rs])?(?::[^{}]*)?\}"


# A parenthesis taller than the font's largest size is drawn from pieces (a hook, extenders, a hook):
# a PDF's text layer reads its top as "x…xy" and its bottom as "{…{|" (or, for a left one, its extenders and
# bottom as "}…}~"), which are not template syntax.
# A bracket taller still (a term's closed form in the reference) is read as "55556" and "<<<<=".
STRETCHED_DELIMITER = re.compile(r"\{{2,}\||x+y|\}+~|5{3,}6|<{3,}=")


def test_no_unfilled_placeholders_or_template_syntax(page, prose, pdf_text):
    assert _hits(LEFTOVERS, _prose(page, keep_code=True)) == []
    assert _hits(LEFTOVERS, STRETCHED_DELIMITER.sub("", pdf_text)) == []
    # nor a rendered "None" or "undefined" where a value should be (chapter 7's "an undefined
    # SymPy function" is the words for an arbitrary f, not a missing value)
    assert _hits(r"\bNone\b|\bundefined\b(?! (?:SymPy )?functions?)|\bnan\b", prose) == []


# -- numbers ---------------------------------------------------------------------------------
E_NOTATION = r"(?<![\w.])[-−]?\d+(?:\.\d+)?[eE][+-]?\d+\b"


def test_no_e_notation_in_prose(prose, pdf_text):
    """'6.71e11 parameters' is how a program prints; a report says 6.71 × 10¹¹. Code (input
    names, settings) may hold such text; the words, tables and typeset numbers may not."""
    assert _hits(E_NOTATION, prose) == []
    assert _hits(E_NOTATION, pdf_text) == []


def test_no_doubled_units(prose, pdf_text):
    """'70.3 kB/token per token of context': the unit already says per token."""
    doubled = r"/\s*(\w+)\s+per\s+\1\b|\bper\s+(\w+)\s+per\s+\2\b"
    for text in (prose, pdf_text):
        flat = re.sub(r"\s+", " ", text)
        assert _hits(doubled, flat) == []


def test_reciprocal_units_read_per(prose, pdf_text):
    """A count per chip reads '4 per chip': neither '4 1/chip' nor '4 /chip' beside a number."""
    assert _hits(r"\d\s+1/[A-Za-z]", prose) == []
    assert _hits(r"\d\s+/[A-Za-z]", prose) == []
    assert _hits(r"\d\s+1/[A-Za-z]", pdf_text) == []


# -- structure -------------------------------------------------------------------------------
def test_no_empty_numbering_level(page, pdf_text):
    """Steps numbered 1.0.1 … 7.0.17 have an empty middle level. A release a source names
    (TensorRT-LLM 1.0.0rc6, a table under trtllm/1.0.0rc6/) is not a step."""
    assert _hits(r"(?<![\d./])\d+\.0\.\d+(?![\d/]|rc)", pdf_text) == []
    headings = " ".join(re.findall(r"<h\d[^>]*>(.*?)</h\d>", page, flags=re.S))
    assert _hits(r"(?<![\d.])\d+\.0\.\d+", headings) == []


def test_sentences_do_not_run_on(pdf_text):
    """Each note under a formula is its own line: 'solved … for batch With the named …' is one
    note run into the next."""
    assert _hits(r"[a-z0-9)\]] With the named constants", pdf_text) == []
    assert _hits(r"[a-z0-9)\]] Closed form \(", pdf_text) == []


def test_lecture_times_cannot_be_read_as_seconds(prose, pdf_text):
    """A chapter starting '(0:32)' into a two-hour lecture reads as 32 seconds."""
    for text in (prose, pdf_text):
        flat = re.sub(r"\s+", " ", text)
        assert _hits(r"\(\d:\d\d\)|from \d+:\d\d into", flat) == []


# the reference (330 pages) is checked the same way in the slow set
@pytest.mark.parametrize("doc, least, lines", [("report", 40, 2),
                                               pytest.param("reference", 500, 50, marks=pytest.mark.slow)])
def test_no_display_formula_is_wider_than_the_text(built, tmp_path, doc, least, lines):
    """A display formula wider than the text is set over lines, broken at its top-level operators
    (chalkboard/typeset/linebreak.py); one still wider is scaled down to the text's width (measured by
    Typst before report.typ is written), never below 80%. A formula set as it is must fit in the
    17 cm between the margins, a scaled one must fit and must have needed it. Every display
    formula of the report is measured by Typst itself."""
    import json

    import typst

    src = (built / f"{doc}.typ").read_text()
    measured, shown, scaled, broken, percents = [], 0, 0, 0, []
    for line in src.split("\n"):
        small = re.fullmatch(r"#\[#set text\(size: ([\d.]+)em\); \$ (.*) \$\]", line)
        if small:   # a formula set over lines, in smaller type (so that it may break across pages)
            shown += 1
            broken += " \\ " in small.group(2)
            percents.append(float(small.group(1)) * 100)
            scaled += 1
            formula = f"$ {small.group(2)} $"
            measured.append(f"#context {{ let w = measure([#set text(size: {small.group(1)}em); {formula}]).width; "
                            f"let n = measure({formula}).width; [#metadata((w.pt(), n.pt())) <width>] }}")
            continue
        m = re.fullmatch(r"(#scale\(([\d.]+)%, reflow: true\)\[)?\$ (.*) \$\]?", line)
        if m:
            shown += 1
            broken += " \\ " in m.group(3)
            if m.group(1):
                percents.append(float(m.group(2)))
            formula = f"$ {m.group(3)} $"
            if m.group(1):   # scaled: measured as set, and as it would be unscaled
                scaled += 1
                line = (f"#context {{ let w = measure(scale({m.group(2)}%, reflow: true)[{formula}]).width; "
                        f"let n = measure({formula}).width; [#metadata((w.pt(), n.pt())) <width>] }}")
            else:
                line = f"#context {{ let w = measure({formula}).width; [#metadata((w.pt(), w.pt())) <width>] }}"
        measured.append(line)
    here = tmp_path / "report"   # the probe sits beside the report's figures, in a copy of the shared build
    shutil.copytree(built, here)
    probe = here / "widths.typ"
    probe.write_text("\n".join(measured))
    widths = [r["value"] for r in json.loads(typst.query(str(probe), "<width>", root=str(here)))]
    text_width = (21 - 2 * 2) / 2.54 * 72   # A4 less two 2 cm margins, in points
    assert shown > least and len(widths) == shown and broken > lines
    assert min(percents, default=100) >= 80, f"{len([p for p in percents if p < 80])} formulas scaled below 80%"
    widest = max(w for w, _ in widths)
    assert widest <= text_width, f"a formula is set {widest / text_width:.2f}x the text width"
    needless = [n for w, n in widths if w < n <= text_width]
    assert not needless, f"{len(needless)} formulas scaled that fit as they are"


@pytest.mark.parametrize("doc, parts, figures", [("report", 8, 12),
                                                 pytest.param("reference", 11, 2, marks=pytest.mark.slow)])
def test_no_half_empty_pdf_pages(built, tmp_path, doc, parts, figures):
    """Every PDF page but the last is written down to near its foot: a section start, a figure
    or a formula block that does not fit must not leave half a page blank. A part starts a page,
    so the end of a part may leave one: its last page of text, and the pages after it that only
    a part's last figures fill (floats set before the break), are not counted. The report's Typst
    source is rendered as images (at a low resolution) and the lowest inked row of each page's
    body measured; the page number in the bottom margin is not counted. Where the parts start,
    where each figure is anchored in the text and where it is set is asked of Typst."""
    import io
    import json

    import matplotlib.image as mpimg
    import numpy as np
    import typst

    pages = typst.compile(str(built / f"{doc}.typ"), root=str(built), format="png", ppi=20)
    here = tmp_path / "report"   # the probe sits beside the report's figures, in a copy of the shared build
    shutil.copytree(built, here)
    probe = here / "parts.typ"
    # a figure's location is where its float is anchored in the text; its image's, the page it is set on
    probe.write_text((built / f"{doc}.typ").read_text() + "\n#context [#metadata((query(heading.where("
                     "level: 1)), query(figure), query(image)).map(q => q.map(e => e.location().page()))) <pages>]\n")
    starts, anchors, placed = json.loads(typst.query(str(probe), "<pages>", field="value", root=str(here)))[0]
    assert len(starts) >= parts and max(starts) <= len(pages) and len(anchors) == len(placed) >= figures, (starts, anchors)
    assert all(b > a for a, b in zip(starts, starts[1:])), f"two parts start on one page: {starts}"
    # a part's end: the page before the next part starts; and a page q of the part after which
    # every page up to that start holds a figure anchored on q or before (pushed past q: q is
    # where the part's text ends, the pages after it hold its last floats)
    part_ends = set()
    for first, start in zip([1, *starts], starts):
        part_ends.add(start - 1)
        for q in range(first, start - 1):
            if all(any(page == later and anchor <= q for anchor, page in zip(anchors, placed))
                   for later in range(q + 1, start)):
                part_ends.add(q)
    short = []
    for i, png in enumerate(pages[:-1], start=1):
        if i in part_ends or i == 1:   # the title page: the contents start on page 2
            continue
        grey = mpimg.imread(io.BytesIO(png), format="png")[..., :3].mean(axis=2)
        height = grey.shape[0]
        inked = np.where((grey < 0.9).any(axis=1))[0]
        body = inked[inked < 0.9 * height]  # the page number sits below 90% of the height
        low = body.max() / height if len(body) else 0.0
        if low < 0.7:
            short.append((i, round(float(low), 2)))
    assert short == [], f"pages (number, lowest text as a share of the height): {short}"


# -- the page at a phone's width -------------------------------------------------------------
@pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"),
                    reason="Chromium is not installed (apt-get install chromium); CI runs this test")
@pytest.mark.parametrize("doc", ["report", pytest.param("reference", marks=pytest.mark.slow)])
def test_page_does_not_scroll_sideways_at_390_px(built, doc):
    from playwright.sync_api import sync_playwright

    assert CHROMIUM, "CI must install Chromium"
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
                  "--disable-component-update", "--disable-sync"])
        try:
            view = browser.new_page(viewport={"width": 390, "height": 844})
            view.goto((built / f"{doc}.html").as_uri(), wait_until="load")
            width = view.evaluate("document.scrollingElement.scrollWidth")
            # what sticks out, to say where the page is too wide
            wide = view.evaluate("""() => [...document.querySelectorAll('body *')]
                .filter(e => e.getBoundingClientRect().right > 391)
                .filter(e => !e.parentElement.closest('.scroll, math'))
                .slice(0, 5).map(e => e.tagName + (e.id ? '#' + e.id : '') + ' ' +
                                 Math.round(e.getBoundingClientRect().right))""")
        finally:
            browser.close()
    assert width <= 390 + 1, wide


@pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"),
                    reason="Chromium is not installed (apt-get install chromium); CI runs this test")
@pytest.mark.parametrize("doc, least", [("report", 40), pytest.param("reference", 500, marks=pytest.mark.slow)])
def test_no_display_formula_is_cut_off_at_1280_px(built, doc, least):
    """On a desktop every display formula fits its column (a long one is set over lines,
    chalkboard/typeset/linebreak.py); none is cut off at the right edge. Measured in Chromium, whose
    MathML fonts differ from Typst's. On a phone (390 px) a formula still wider than the screen
    scrolls, and shows a shadow at the edge that says so."""
    from playwright.sync_api import sync_playwright

    assert CHROMIUM, "CI must install Chromium"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        try:
            view = browser.new_page(viewport={"width": 1280, "height": 900})
            view.goto((built / f"{doc}.html").as_uri(), wait_until="load")
            shown, lines, cut = view.evaluate("""() => {
                const all = [...document.querySelectorAll('math[display=block]')];
                const cut = all.filter(e => e.scrollWidth > e.clientWidth + 1)
                    .map(e => (e.closest('[id]') || {}).id + ' ' + e.scrollWidth + '/' + e.clientWidth);
                return [all.length, all.filter(e => e.classList.contains('lines')).length, cut.slice(0, 5)]; }""")
            view.set_viewport_size({"width": 390, "height": 844})
            wide, unmarked = view.evaluate("""() => {
                const wide = [...document.querySelectorAll('math[display=block]')]
                    .filter(e => e.scrollWidth > e.clientWidth + 1);
                const marked = e => { const s = getComputedStyle(e);
                    return s.overflowX === 'auto' && s.backgroundImage.includes('radial-gradient'); };
                return [wide.length, wide.filter(e => !marked(e)).length]; }""")
        finally:
            browser.close()
    assert shown > least and lines > least // 10
    assert cut == [], cut
    # (a formula wider than a phone has a narrower layout there: test_phone_and_print.py counts the few left)
    assert unmarked == 0, f"{unmarked} of {wide} formulas wider than a phone have no scroll cue"


# -- the lecture's seven chapters as the report's parts --------------------------------------------
@pytest.mark.parametrize("doc", ["report", "reference"])
def test_parts_and_questions_share_one_numbering(built, doc):
    """Each document's HTML contents, its HTML headings and its PDF outline number the same parts
    (the lecture's seven chapters, derivations/core.py CHAPTERS) and questions (part.question);
    the report's contents start with the explorer, the reference's with the notation and its
    appendices are lettered."""
    import html as html_mod

    from conftest import pdf_outline

    from derivations.core import CHAPTERS

    page = (built / f"{doc}.html").read_text()
    nav = page[page.index('<ul class="toc">'):page.index("</nav>")]
    toc = [html_mod.unescape(re.sub(r"<[^>]+>", "", t)).strip() for t in re.findall(r'<a href="#[^"]+">(.*?)</a>', nav)]
    assert toc[0] == ("Explorer" if doc == "report" else "Notation")
    body = page[page.index("</nav>"):]
    heads = [html_mod.unescape(re.sub(r"<[^>]+>", "", h)).strip()
             for h in re.findall(r"<h2[^>]*>(.*?)</h2>", body, re.S)]
    numbered = [h for h in heads if re.match(r"(Part \d+\.|\d+\.\d+ |Appendix [A-Z]\.)", h)]
    assert [t for t in toc if re.match(r"(Part \d+\.|\d+\.\d+ |Appendix [A-Z]\.)", t)] == numbered
    parts = [h for h in numbered if h.startswith("Part ")]
    assert parts == [f"Part {i}. {t}" for i, (t, _) in enumerate(CHAPTERS.values(), start=1)]
    assert [h.split(".")[0] for h in numbered if h.startswith("Appendix")] == (
        ["Appendix A", "Appendix B", "Appendix C", "Appendix D"] if doc == "reference" else [])

    outline = [t for t in pdf_outline(built / f"{doc}.pdf")
               if re.match(r"(Part \d+\.|\d+\.\d+ |Appendix [A-Z]\.)", t)]
    assert outline == numbered
    # questions are numbered within their part, from 1, in order
    for part in range(1, len(parts) + 1):
        qs = [int(h.split()[0].split(".")[1]) for h in numbered if re.match(rf"{part}\.\d+ ", h)]
        assert qs == list(range(1, len(qs) + 1)), part


def test_the_pdf_lists_each_lecture_error_as_its_own_item(built):
    """Each distinct lecture error is one list item with its evidence (claimed, computed, the
    miss): the template's block tags once swallowed the line ends and ran them into one bullet."""
    from conftest import run_cli

    typ = (built / "reference.typ").read_text(encoding="utf-8")
    listed = typ[typ.index("Distinct lecture errors"):].split("\n\n", 1)[0].splitlines()[1:]
    assert len(listed) >= 5 and all(line.startswith("- ") and "claimed" in line and "computed" in line for line in listed)
    r = run_cli("audit")
    assert len(listed) == sum(1 for line in r.stdout.splitlines() if line.startswith("  error  "))


@pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"),
                    reason="Chromium is not installed (apt-get install chromium); CI runs this test")
def test_the_audit_list_fits_its_column_on_a_desktop_and_a_phone(built):
    """The audit's claims are cards that wrap: no claim pushes its verdict off-screen or squeezes the
    words (the table they replace was 1,254 px wide in a 992 px column, 1,912 px on a phone)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"])
        try:
            for width in (1280, 390):
                view = browser.new_page(viewport={"width": width, "height": 900})
                view.goto((built / "reference.html").as_uri(), wait_until="load")
                view.eval_on_selector_all("#audit details.claim", "els => els.forEach(e => e.open = true)")
                box = view.evaluate("""() => { const c = document.querySelector('#audit .claims');
                    return [c.scrollWidth, c.clientWidth, document.querySelectorAll('#audit details.claim').length]; }""")
                wide = view.evaluate("""() => [...document.querySelectorAll('#audit details.claim summary')]
                    .filter(s => s.getBoundingClientRect().right > s.parentElement.getBoundingClientRect().right + 1)
                    .map(s => s.parentElement.id).slice(0, 5)""")
                assert box[2] > 100 and box[0] <= box[1] + 1 and wide == [], (width, box, wide)
                view.close()
        finally:
            browser.close()


def test_every_dagger_in_the_summary_says_why_without_hovering(ref_page):
    """A phone cannot hover: each † of the chips' table has its reason listed under the table."""
    page = ref_page
    sec = page[page.index('<section id="summary">'):]
    sec = sec[:sec.index("</section>")]
    table = sec[:sec.index("</table>")]
    daggers = len(re.findall(r"<td[^>]*>[^<]*(?:<a [^>]*>)?[^<]*†", table))
    reasons = sec[sec.index('class="unfit-reasons"'):] if 'class="unfit-reasons"' in sec else ""
    assert daggers >= 1 and len(re.findall(r"<li>", reasons)) == daggers
    assert "hover" not in sec


def test_every_dagger_by_generation_says_why_without_hovering(built):
    """Each table by generation in the report lists the reason of each † under it, as the summary does."""
    page = (built / "report.html").read_text()
    tables = re.findall(r'<table class="gen">(.*?)</table>(.*?)</div>\s*(<details class="unfit-reasons">.*?</details>)?', page, re.S)
    assert len(tables) >= 10
    for table, _, reasons in tables:
        daggers = len(re.findall(r"<td[^>]*>[^<]*†", table))
        assert len(re.findall(r"<li>", reasons or "")) == daggers
