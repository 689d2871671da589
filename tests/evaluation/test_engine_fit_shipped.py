"""The engine model a build reads (chalkboard/validation/engine_fit.json, shipped so a build need not
spend seconds on the held-out fits) is the fit of the runs measurements.yaml gives now, and `validate`'s
report card keeps the range's promise on every split it prints. After an edit to measurements.yaml,
hardware.yaml, models.yaml, the derivations or the fitting code, `python3 -m chalkboard.validation
--ship` writes it again."""
import json

import pytest

from chalkboard.validation import engine_fit

SHIPPED = json.loads(engine_fit.SHIPPED.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def runs(data):
    from chalkboard.runtime.home import ROOT
    from chalkboard.validation import calibration_runs, evaluate_all, load_measurements
    results = evaluate_all(data, load_measurements(ROOT, data))
    return calibration_runs(results, data), len(results)


def test_the_shipped_fit_was_made_from_todays_runs(runs):
    assert SHIPPED["key"] == engine_fit.key(*runs), "run `python3 -m chalkboard.validation --ship`"
    m = engine_fit.shipped_or_fit(*runs)
    assert m == engine_fit.Efficiency.from_dict(SHIPPED["fit"]) and m.n == len(runs[0])


@pytest.mark.slow
def test_the_shipped_fit_equals_a_fresh_fit(runs):
    fresh = engine_fit.fit(*runs)
    assert fresh.params == pytest.approx(
        tuple(SHIPPED["fit"]["params"]), rel=1e-9)
    assert fresh.band == pytest.approx(tuple(SHIPPED["fit"]["band"]), rel=1e-9)


def test_each_held_out_split_keeps_the_ranges_promise():
    # the bar: held out by source, by chip and by model, at least 75% of the runs at a published
    # batch inside the printed range and at least 70% within ×1.5
    m = engine_fit.Efficiency.from_dict(SHIPPED["fit"])
    by = {s.name: s for s in m.splits}
    for name in ("source", "chip", "model"):
        s = by[name]
        assert s.inside >= 0.75 and s.within >= 0.70 and s.n >= 40, s
        assert m.band[0] <= s.low and s.high <= m.band[1]
    assert m.band[0] < 1 < m.band[1]


def test_validate_prints_the_report_card(cli):
    out = cli("validate").stdout
    for name in ("source", "chip", "model", "engine"):
        assert f"    by {name}" in out
    assert "inside range" in out and "worst held-out predictions" in out
    worst = out.split("worst held-out predictions")[1].splitlines()[1:11]
    assert len(worst) == 10 and all(("bound" in w or "prefill" in w) for w in worst)
