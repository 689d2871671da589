"""Text a reader meets in the pages: a formula written in prose sets its declared symbols with
their subscripts (N<sub>active</sub>, not N_active), and the page never tells its reader to type a
--set flag (the command line takes it; a page reader has none)."""
import html
import re

from chalkboard.report.reader import prose_html, prose_typst


def _visible(page: str) -> str:
    for tag in ("script", "style", "math", "svg"):
        page = re.sub(fr"<{tag}\b.*?</{tag}>", " ", page, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def test_a_symbol_in_prose_is_set_with_its_subscript():
    # "c_F" (FLOP per multiply-accumulate) and "N_active" are declared symbols; pass_tokens is a name
    assert str(prose_html("c_F·N_active·W over pass_tokens")) == (
        "<i>c</i><sub>F</sub>·<i>N</i><sub>active</sub>·W over pass_tokens")
    typ = prose_typst("c_F·N_active", lambda s: '"' + s + '"')
    assert typ == '$c_"F"$#"·";$N_"active"$'


def test_the_main_page_writes_no_symbol_as_code_and_no_flag(report_build):
    text = _visible((report_build[0] / "report.html").read_text(encoding="utf-8"))
    assert not re.search(r"\b(c_F|N_active|N_total|L_thr|β_w)\b", text)
    assert "--set" not in text
