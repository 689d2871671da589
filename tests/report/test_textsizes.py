"""Each text measured once per process (chalkboard/report/textsizes.py): the figures drawn with the
sizes kept are the figures drawn without them, byte for byte, and a second drawing measures nothing
new."""
from __future__ import annotations

from pathlib import Path

import pytest

from chalkboard import FEATURED_HARDWARE as HW, FEATURED_MODEL as MODEL
from chalkboard.data.loader import load
from chalkboard.report import textsizes
from chalkboard.report.figures import draw_all

ROOT = Path(__file__).resolve().parents[2]
SOME = {"step_time_vs_batch", "plan_frontier", "hardware_by_year"}   # log axes, fixed ticks thinned, a chip a row


def _drawn(data) -> dict:
    return {n: (str(svg), svg.phone) for n, (svg, _) in draw_all(data, HW, MODEL, only=SOME).items()}


@pytest.mark.slow   # draws every figure twice; test_a_second_drawing_measures_nothing_new keeps the sizes in the default run
def test_kept_sizes_draw_the_same_figures(monkeypatch):
    import matplotlib.text as mtext

    data = load(ROOT, "hardware.yaml", "models.yaml", "prices.yaml")
    kept = _drawn(data)   # (drawing imports matplotlib, and installs the kept sizes)
    if not hasattr(mtext, "_get_text_metrics_with_cache"):
        pytest.skip("this matplotlib has no per-renderer text measure to replace")
    assert getattr(mtext._get_text_metrics_with_cache, "per_process", False)
    assert textsizes.SIZES
    # matplotlib's own measure, per renderer, as it was before
    def per_renderer(renderer, text, fontprop, ismath, dpi):
        return renderer.get_text_width_height_descent(text, fontprop.copy(), ismath)
    monkeypatch.setattr(mtext, "_get_text_metrics_with_cache", per_renderer)
    assert _drawn(data) == kept


def test_a_second_drawing_measures_nothing_new():
    data = load(ROOT, "hardware.yaml", "models.yaml", "prices.yaml")
    _drawn(data)
    measured = len(textsizes.SIZES)
    _drawn(data)
    assert len(textsizes.SIZES) == measured
