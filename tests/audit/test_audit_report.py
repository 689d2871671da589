"""The whole report, rendered: no `{placeholder}` of a note, reading, why or takeaway is left
unfilled in the HTML page or in the PDF's text, and the audit section shows its evidence."""
import re

import pytest


UNFILLED = re.compile(r"\{[a-z][a-z0-9_]*\}")


@pytest.fixture(scope="module")
def built(report_build):
    return report_build[0]


def _html_text(html: str) -> str:
    html = re.sub(r"<style.*?</style>", " ", html, flags=re.S)   # CSS braces are not placeholders
    return re.sub(r"<[^>]+>", " ", html)


def test_no_unfilled_placeholder_in_the_html(built):
    text = _html_text((built / "report.html").read_text())
    assert UNFILLED.findall(text) == []


def test_no_unfilled_placeholder_in_the_pdf(report_pdf_text):
    text = report_pdf_text
    assert "Audit of the lecture" in text
    assert UNFILLED.findall(text) == []


def test_the_detector_would_catch_one():
    assert UNFILLED.findall(_html_text("<p>costs {rental_price} per hour</p><style>a {color: red}</style>")) \
        == ["{rental_price}"]


def test_audit_rows_show_band_scope_inputs_and_flips(built):
    text = _html_text((built / "reference.html").read_text())   # the claims' cards are in the reference
    for label in ("Band:", "Scope:", "Inputs:", "Flips if", "Distinct lecture errors"):
        assert label in text, label
