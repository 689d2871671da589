"""The validation section's measured-against-expected figure (chalkboard/report/figures_validation.py,
held_out_points and held_out_svg): each decode run at a published batch against the speed the engine
model predicts for it with its source left out of the fit (Efficiency.held_out, shipped in
engine_fit.json), drawn in the reference beside the measured-against-bound figure."""
import math
import re

import pytest

from chalkboard.validation import engine_fit


@pytest.fixture(scope="module")
def fitted(data):
    from chalkboard.runtime.home import ROOT
    from chalkboard.validation import calibration_runs, efficiency_model, evaluate_all, load_measurements
    results = evaluate_all(data, load_measurements(ROOT, data))
    return results, calibration_runs(results, data), efficiency_model(results, data)


def test_the_fit_keeps_every_run_predicted_held_out_by_source(fitted):
    _, runs, m = fitted
    by_source = next(s for s in m.splits if s.name == "source")
    assert len(m.held_out) == by_source.n == m.cv_n
    # the runs at a published batch, each once, none of them a one-sided bound
    published = {r.id for r in runs if not r.upper}
    assert {i for i, _, _ in m.held_out} <= published and len({i for i, _, _ in m.held_out}) == len(m.held_out)
    # the scored errors are these very predictions: the median error is theirs
    errors = sorted(abs(math.log(measured / predicted)) for _, measured, predicted in m.held_out)
    mid = len(errors) // 2
    median = errors[mid] if len(errors) % 2 else (errors[mid - 1] + errors[mid]) / 2
    assert median == pytest.approx(m.cv_median, rel=1e-9)
    assert sum(e <= math.log(engine_fit.WITHIN) for e in errors) == round(m.cv_within * m.cv_n)
    assert engine_fit.Efficiency.from_dict(m.as_dict()) == m


def test_the_points_are_the_decode_runs_with_their_held_out_predictions(fitted):
    from chalkboard.evaluation.regimes import REGIMES
    from chalkboard.report.figures_validation import held_out_points
    results, _, m = fitted
    by_id = {r.record.id: r for r in results}
    pts = held_out_points(results, m)
    decode = [h for h in m.held_out if by_id[h[0]].regime in REGIMES]
    assert len(pts) == len(decode) >= 40
    for (expected, measured, regime), (i, run_measured, run_predicted) in zip(pts, decode):
        assert measured == by_id[i].measured_chip_rate and regime == by_id[i].regime
        assert measured / expected == pytest.approx(run_measured / run_predicted, rel=1e-12)
    # the points inside the band are the runs the by-source split counts inside the printed range
    low, high = m.band
    inside = [i for (x, y, _), (i, *_) in zip(pts, decode) if low <= y / x <= high]
    by_source = next(s for s in m.splits if s.name == "source")
    assert len(inside) + sum(1 for i, a, b in m.held_out if by_id[i].regime not in REGIMES
                             and low <= a / b <= high) == round(by_source.inside * by_source.n)

def test_the_reference_shows_the_figure(report_build, fitted):
    from chalkboard.report.figures_validation import held_out_points, held_out_svg
    out, _ = report_build
    results, _, m = fitted
    ref = (out / "reference.html").read_text(encoding="utf-8")
    fig = re.search(r'<figure id="fig-validation-held-out">(.*?)</figure>', ref, re.S)
    assert fig and "<svg" in fig.group(1) and "Measured against expected" in fig.group(1)
    assert ref.index('id="fig-validation"') < fig.start()   # beside the measured-against-bound figure
    svg = (out / "figures" / "validation_held_out.svg").read_text(encoding="utf-8")
    assert svg == str(held_out_svg((held_out_points(results, m), m.band)))   # drawn from these very points
    assert "fig-validation-held-out" not in (out / "report.html").read_text(encoding="utf-8")
    assert "validation_held_out.svg" in (out / "reference.typ").read_text(encoding="utf-8")
