"""The HTML report in a real headless browser (Debian's Chromium driven by Playwright).

No console errors, no network requests, MathML formulas laid out with non-zero size, and a
screenshot saved. CI installs Chromium (.ci/run); elsewhere the test is skipped without it.
"""
import os
import shutil

import pytest


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="Chromium is not installed (apt-get install chromium); CI runs this test")


@pytest.fixture(scope="module")
def report(report_build):
    return report_build[0] / "report.html"


def test_report_in_headless_chromium(report, tmp_path):
    from playwright.sync_api import sync_playwright

    assert CHROMIUM, "CI must install Chromium"
    errors, requests = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
                  "--disable-component-update", "--disable-sync"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(report.as_uri(), wait_until="load")
        page.eval_on_selector_all("details", "els => els.forEach(e => e.open = true)")
        # every formula shown at this width (a phone's layout of a wide one is hidden here)
        sizes = page.eval_on_selector_all(
            "math:not(.narrow)", "els => els.map(e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; })")
        n_svg = page.eval_on_selector_all("figure svg", "els => els.length")
        title = page.title()
        shot = tmp_path / "report.png"
        page.screenshot(path=str(shot), full_page=False)
        browser.close()
    assert errors == []
    assert [u for u in requests if not u.startswith("file://")] == []
    assert len(sizes) > 50
    assert all(w > 0 and h > 0 for w, h in sizes), [s for s in sizes if not (s[0] > 0 and s[1] > 0)][:5]
    assert n_svg >= 5
    assert "chalkboard" in title
    assert shot.stat().st_size > 10_000
    keep = os.environ.get("CHALKBOARD_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)
