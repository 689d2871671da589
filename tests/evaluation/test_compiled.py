"""The compiled float path gives the same numbers as the Pint walk, everywhere."""
import math
from pathlib import Path

import numpy as np
import pytest

from chalkboard.errors import MissingInput
from chalkboard.evaluation.evaluate import Scenario
from derivations import REGISTRY


def _chips():
    """Every chip of hardware.yaml; the README's test command compares three (an NVIDIA rack, an
    8-GPU box, a TPU), CI every one (marked slow: about 13 s)."""
    import yaml

    from chalkboard.data.featured import FEATURED_HARDWARE

    ids = list(yaml.safe_load((Path(__file__).parents[2] / "hardware.yaml").read_text())["hardware"])
    quick = {FEATURED_HARDWARE, "h100-sxm", "tpu-v5p"}
    return [pytest.param(h, marks=() if h in quick else pytest.mark.slow) for h in ids]


@pytest.mark.parametrize("hid", _chips())
def test_compiled_path_equals_the_pint_walk_on_every_quantity_and_pair(data, hid):
    compared = 0
    for mid in data.models:
        fast, slow = Scenario(data, hid, mid), Scenario(data, hid, mid)
        for q in REGISTRY.derived_quantities():
            try:
                a = fast.value(q.name)
            except MissingInput:
                with pytest.raises(MissingInput):  # the Pint path fails the same way
                    slow.pint_value(q.name)
                continue
            b = slow.pint_value(q.name)
            assert a.units == b.units, (hid, mid, q.name)
            assert math.isclose(a.magnitude, b.magnitude, rel_tol=1e-12, abs_tol=0), (hid, mid, q.name)
            compared += 1
    assert compared > 200


def test_sweep_equals_pointwise_evaluation(data):
    base = Scenario(data, "gb200-nvl72", "deepseek-v3")
    batches = [1, 2, 7, 64, 145, 1000, 2000, 30_000]
    names = ("step_time", "weight_fetch_time", "cost_per_token" if "rental_price" in data.hardware["gb200-nvl72"].values
             else "throughput", "max_batch_capacity")
    swept = base.sweep(names, "batch", batches)
    for i, b in enumerate(batches):
        one = Scenario(data, "gb200-nvl72", "deepseek-v3", {"batch": str(b)})
        for n in names:
            assert swept[n][i] == pytest.approx(one.value(n).magnitude, rel=1e-12), (n, b)


def test_sweep_marks_values_outside_the_domain_as_nan(data):
    base = Scenario(data, "h100-sxm", "llama-3-70b")
    # the KV-inclusive balance batch exists only below the context crossover
    out = base.sweep(("balance_batch_kv",), "context", [100, 10**6], "token/sequence")["balance_batch_kv"]
    assert out[0] > 0 and np.isnan(out[1])


def test_a_long_sweep_is_fused_and_still_equals_pointwise_evaluation(data):
    from chalkboard.evaluation.dependence import FUSE_FROM

    base = Scenario(data, "gb200-nvl72", "deepseek-v3")
    batches = np.arange(1, FUSE_FROM + 1, dtype=float)
    fused = base.sweep(("step_time", "throughput"), "batch", batches)
    short = base.sweep(("step_time", "throughput"), "batch", batches[:100])
    for n in ("step_time", "throughput"):
        assert np.allclose(fused[n][:100], short[n], rtol=1e-12, atol=0)
    for b in (1, 145, 2000, FUSE_FROM):
        one = Scenario(data, "gb200-nvl72", "deepseek-v3", {"batch": str(b)})
        assert fused["step_time"][b - 1] == pytest.approx(one.value("step_time").magnitude, rel=1e-12)


@pytest.mark.parametrize("overrides", [{}, {"context": "1024", "batch": "64"}, {"format": "bf16"}])
def test_all_pairs_at_once_equal_each_pair_on_its_own(data, overrides):
    """evaluate_all evaluates each definition over every chip x model at once; it must give what
    each pair evaluated on its own gives: the values, why a value is missing, the inputs read
    (with their sources), the fit and the flags."""
    from chalkboard.evaluation.results import evaluate_all

    one = evaluate_all(data, overrides, vectorised=False)
    every = evaluate_all(data, overrides)
    assert one.errors == every.errors == [] and one.count_ok > 10_000 and one.count_na > 0
    assert (one.count_ok, one.count_na) == (every.count_ok, every.count_na)
    for pair, vals in one.values.items():
        assert list(every.values[pair]) == list(vals)
        for name, v in vals.items():
            assert every.values[pair][name] == pytest.approx(v, rel=1e-12, abs=0), (pair, name)
        assert every.missing[pair] == one.missing[pair]
        assert every.inputs[pair] == one.inputs[pair]
        assert (every.fit[pair], every.flags[pair]) == (one.fit[pair], one.flags[pair])


def test_an_input_is_read_once_per_chip_model_or_evaluation_it_depends_on(data):
    """evaluate_all and the explorer read an input once per chip if it is the chip's, once per model
    if the model's, once in all if neither's (evaluate.read_shared), and per pair for the FLOP/s,
    whose format the chip and the model choose together."""
    from chalkboard.evaluation.dependence import read_shared

    pairs = [(h, m) for h in data.hardware for m in data.models]
    scenarios = [Scenario(data, h, m) for h, m in pairs]
    expected = {"hbm_bandwidth": ("hardware", len(data.hardware)), "d_model": ("model", len(data.models)),
                "bytes_per_weight": ("model", len(data.models)), "batch": ("all", 1),
                "peak_flops": ("pair", len(pairs))}
    for name, (scope, reads) in expected.items():
        assert scenarios[0].input_scope(name) == scope, name
        calls = []

        def read(sc, name=name):
            calls.append(sc)
            try:
                return sc.base_value(name), sc.records[name].source
            except MissingInput as e:   # a chip with no rate at the model's format
                return str(e)
        got = read_shared(scenarios, name, read)
        assert len(calls) == reads, name
        for sc, v in zip(scenarios, got):   # what each pair reads on its own, from the same source
            assert v == read(Scenario(data, sc.hw.id, sc.model.id)), (name, sc.hw.id, sc.model.id)
    # set for the evaluation, an input is the same everywhere; a default copied from an input has its scope
    assert Scenario(data, "h100-sxm", "deepseek-v3", {"hbm_bandwidth": "3 TB/s"}).input_scope("hbm_bandwidth") == "all"
    copied = [q.name for q in REGISTRY.inputs() if q.origin == "workload" and (q.default or "") == "=d_model"]
    assert copied and all(scenarios[0].input_scope(n) == "model" for n in copied)
