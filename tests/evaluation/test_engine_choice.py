"""`--set engine=NAME`: the expected numbers from the engine model fitted to one engine's published
runs alone (chalkboard/validation/engine_fit.py, Efficiency.engines), where that engine has enough
runs at a published batch; every other expected number keeps the fit to every engine's runs."""
import dataclasses
import re

import pytest

from chalkboard.validation import engine_fit
from test_calibration import _runs


def _engine(runs, name):
    return [dataclasses.replace(r, engine=name, source=f"{name}-{r.source}") for r in runs]


def test_each_engine_with_runs_enough_gets_its_own_fit_and_recovers_its_engine():
    fast, slow = (0.5, 0.9, 5e-5, 0.8), (0.2, 0.6, 2e-4, 0.3)   # mfu, mbu, s a layer, prefill share
    runs = _engine(_runs(fast, n=40, seed=1), "fast") + _engine(_runs(slow, n=40, seed=2), "slow") \
        + _engine(_runs(slow, n=engine_fit.ENGINE_RUNS - 1, seed=3), "few")
    m = engine_fit.fit(runs, splits=("source",))
    got = {e.name: e for e in m.engines}
    assert set(got) == {"fast", "slow"}   # "few" has too few runs for a fit of its own
    assert got["fast"].params == pytest.approx(fast, rel=1e-3)
    assert got["slow"].params == pytest.approx(slow, rel=1e-3)
    assert got["slow"].n == 40 and got["slow"].sources == 6 and got["slow"].held_out == 40
    # its range is never narrower than the whole model's
    for e in m.engines:
        assert e.band[0] <= m.band[0] and e.band[1] >= m.band[1]
    chosen = m.for_engine("slow")
    assert chosen.params == got["slow"].params and chosen.engine == "slow" and "alone" in chosen.text()
    assert chosen.for_engine("slow") == chosen
    with pytest.raises(ValueError, match="fast, slow"):
        m.for_engine("few")
    # shipped and read back whole
    assert engine_fit.Efficiency.from_dict(m.as_dict()) == m


def _assumed(stdout: str) -> dict[str, float]:
    line = next(x for x in stdout.splitlines() if x.strip().startswith("assumed"))
    return {k: float(v) for k, v in re.findall(r"(expected_\w+) = ([\d.]+)", line)}


def test_eval_takes_the_engines_own_fit_and_the_library_the_same(cli):
    from chalkboard.validation.engine_fit import Efficiency, SHIPPED
    import json
    m = Efficiency.from_dict(json.loads(SHIPPED.read_text(encoding="utf-8"))["fit"])
    assert {e.name for e in m.engines} >= {"trtllm", "vllm"}
    vllm = m.for_engine("vllm")
    q = ["eval", "step_time_expected_layout", "--hardware", "h100-sxm", "--model", "llama-3-70b"]
    every, own = cli(*q), cli(*q, "--set", "engine=vLLM")
    assert every.returncode == 0 and own.returncode == 0, own.stderr
    assert _assumed(every.stdout)["expected_mfu"] == pytest.approx(m.params[0], rel=2e-3)
    assert _assumed(own.stdout)["expected_mfu"] == pytest.approx(vllm.params[0], rel=2e-3)
    assert "runs of vllm alone" in own.stdout and "--set engine=vllm" in own.stdout
    value = float(re.search(r"= ([\d.]+) ms", own.stdout).group(1))
    lo, hi = (float(x) for x in re.search(r"range\s*: ([\d.]+) ms – ([\d.]+) ms", own.stdout).groups())
    assert lo <= value <= hi and value != float(re.search(r"= ([\d.]+) ms", every.stdout).group(1))

    import chalkboard as cb
    got = cb.scenario("h100-sxm", "llama-3-70b", engine="vllm").evaluate("step_time_expected_layout")
    assert got.unit == "ms" and float(got) == pytest.approx(value, rel=2e-3)
    from chalkboard.errors import InputError
    with pytest.raises(InputError, match="^engine=tgi: no engine fit"):
        cb.scenario("h100-sxm", "llama-3-70b", engine="tgi")


def test_an_engine_without_a_fit_is_refused_in_one_line_even_where_nothing_expected_is_read(cli):
    for q in ("step_time_expected_layout", "step_time"):
        r = cli("eval", q, "--set", "engine=tgi")
        assert r.returncode == 2 and "Traceback" not in r.stderr
        assert r.stderr.strip().splitlines() == [
            "error: --set engine=tgi: no engine fit for 'tgi': the published runs fit one for trtllm, vllm "
            f"(an engine needs {engine_fit.ENGINE_RUNS} runs at a published batch)"]
    r = cli("eval", "step_time", "--set", "engine=")
    assert r.returncode == 2 and "give an engine" in r.stderr


def test_validate_lists_each_engines_fit(cli):
    r = cli("validate")
    assert r.returncode == 0, r.stderr
    assert "fitted to vllm's runs alone (--set engine=vllm): step = compute/" in r.stdout
    import json
    from chalkboard.validation.engine_fit import Efficiency, SHIPPED
    vllm = Efficiency.from_dict(json.loads(SHIPPED.read_text(encoding="utf-8"))["fit"]).for_engine("vllm")
    shown = float(re.search(r"compute/([\d.]+)", r.stdout.split("vllm's runs alone")[1]).group(1))
    assert shown == pytest.approx(vllm.params[0], rel=2e-3) and shown != pytest.approx(
        float(re.search(r"compute/([\d.]+)", r.stdout).group(1)), rel=2e-3)   # not the whole model's
