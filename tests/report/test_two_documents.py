"""The report in two documents: report.html/pdf reads like the lecture, within a phone's and a
printer's budget; reference.html/pdf beside it holds the rest; each links to the other."""
import os
import re
import shutil
from html.parser import HTMLParser

import pytest

MAX_PDF_PAGES = 80
MAX_PAGE_BYTES = 2_500_000
SCREEN = {"width": 390, "height": 844}   # a phone's screen
MAX_SCREENS = 80
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def out(report_build):
    return report_build[0]


class _Anchors(HTMLParser):
    """Every id of a page and every href of its links."""

    def __init__(self):
        super().__init__()
        self.ids, self.hrefs = set(), []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("href"):
            self.hrefs.append(a["href"])


def _anchors(path):
    p = _Anchors()
    p.feed(path.read_text(encoding="utf-8"))
    return p


@pytest.fixture(scope="module")
def pages(out):
    return {"report.html": _anchors(out / "report.html"), "reference.html": _anchors(out / "reference.html")}


def test_the_main_pdf_has_at_most_80_pages(out):
    from conftest import pdf_pages
    n = len(pdf_pages(out / "report.pdf"))
    assert n <= MAX_PDF_PAGES, n
    assert len(pdf_pages(out / "reference.pdf")) > n   # the rest is in the reference


def test_the_main_page_weighs_at_most_2_5_mb(out):
    size = (out / "report.html").stat().st_size
    assert size <= MAX_PAGE_BYTES, size


def test_every_link_between_the_two_documents_finds_its_anchor(pages):
    """report.html -> reference.html#ID and back: each ID is on the other page; a link within a
    page finds its ID there."""
    crossed = {"report.html": 0, "reference.html": 0}
    for name, page in pages.items():
        other = "reference.html" if name == "report.html" else "report.html"
        for h in page.hrefs:
            if h.startswith("#"):
                assert h[1:] in page.ids, (name, h)
            elif h.startswith(other):
                crossed[name] += 1
                frag = h[len(other):]
                assert frag == "" or (frag.startswith("#") and frag[1:] in pages[other].ids), (name, h)
            else:
                assert re.match(r"https?://", h), (name, h)   # nothing else: no file the folder lacks
    assert crossed["report.html"] > 300 and crossed["reference.html"] > 300, crossed


def test_each_verdict_is_one_line_in_the_report_linked_to_its_card(pages, out):
    html = (out / "report.html").read_text(encoding="utf-8")
    cards = {i[len("claim-"):] for i in pages["reference.html"].ids if i.startswith("claim-")}
    lines = {i[len("v-"):] for i in pages["report.html"].ids if i.startswith("v-")}
    assert cards and cards == lines
    for cid in cards:   # the line links to the card, the card back to the line
        assert f'href="reference.html#claim-{cid}"' in html
    ref = (out / "reference.html").read_text(encoding="utf-8")
    assert all(f'href="report.html#v-{cid}"' in ref for cid in cards)


def test_every_question_and_step_is_in_both_or_the_reference(pages):
    from derivations import REGISTRY
    for s in REGISTRY.sections.values():
        assert f"sec-{s.id}" in pages["report.html"].ids and f"sec-{s.id}" in pages["reference.html"].ids
        for n in s.quantities:
            if not REGISTRY[n].is_input:
                assert f"q-{n}" in pages["reference.html"].ids, n
    assert {"notation", "summary", "audit", "sources", "network"} <= pages["reference.html"].ids


def test_a_closed_form_longer_than_a_page_is_shown_by_its_named_terms(out):
    """step_time_layout's closed form once ran over more than a page: the reference shows its
    definition and each term's closed form, none longer than a page's worth of lines; a term
    still too long is its definition and a link to its own entry, where its terms are shown (once
    unfolded under every quantity that read it, the same terms filled 100 pages again and again)."""
    from chalkboard.report.terms import MAX_LINES, by_terms, line_count
    terms = by_terms("step_time_layout", "closed form")
    assert terms and terms[0]["name"] == "step_time_layout"
    assert {"compute_time_layout", "tp_comm_time", "ep_comm_time"} <= {t["name"] for t in terms}
    assert all(line_count(t["typst"]) <= MAX_LINES + 4 for t in terms)
    typ = (out / "reference.typ").read_text(encoding="utf-8")
    block = typ[typ.index('#raw("step_time_layout")]] #label'):]
    block = block[:block.index("#heading(level: 3")]
    assert 'raw("tp_comm_time")' in block
    # the cost under a layout reads the step under it: that term is a link, not its terms again
    terms = by_terms("cost_per_token_layout", "closed form")
    linked = [t["name"] for t in terms[1:] if t["role"] == "definition"]
    assert linked == ["step_time_layout"] and all(t["depth"] <= 1 for t in terms)
    block = typ[typ.index('#raw("cost_per_token_layout")]] #label'):]
    block = block[:block.index("#heading(level: 3")]
    assert '#link(label("q-step_time_layout"))[its own entry]' in block and 'raw("tp_comm_time")' not in block
    assert '#raw("step_time_layout")]] #label("q-step_time_layout")' in typ
    html = (out / "reference.html").read_text(encoding="utf-8")
    assert '<a href="#q-step_time_layout">its own entry</a>' in html


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"), reason="Chromium is not installed")
def test_the_main_page_is_at_most_80_screens_tall_on_a_phone(out):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        try:
            view = browser.new_page(viewport=SCREEN)
            view.goto((out / "report.html").as_uri(), wait_until="load")
            height = view.evaluate("() => document.documentElement.scrollHeight")
            width = view.evaluate("() => document.documentElement.scrollWidth")
        finally:
            browser.close()
    assert height <= MAX_SCREENS * SCREEN["height"], height / SCREEN["height"]
    assert width <= SCREEN["width"]
