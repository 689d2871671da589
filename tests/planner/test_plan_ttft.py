"""`plan` judges the time to the first token as it judges the rest: by the expected numbers (the
prompt's prefill at the engine model's fitted efficiency, its layers' fixed time, the queue's load at
the expected times) unless --by bound. Judged by the bound, a --max-ttft between the bound and what
the engines reach never bound."""
import pytest

import chalkboard as cb


def _sets(b: dict) -> dict:
    return {"weight_format": b["weight_format"], "kv_format": b["kv_format"], "context": 4096, "pass_tokens": 4096,
            "output_tokens": 1024, "tp": b["tp"], "dp_attention": b["dp_attention"], "ep": b["ep"], "pp": b["pp"],
            "chips": b["chips"], "batch": b["batch"]}


@pytest.fixture(scope="module")
def best():
    return cb.plan("llama-3-70b", 30, context=4096)["best"]


def test_the_first_token_is_the_expected_one_where_the_expected_numbers_judge(best):
    assert best["deployment"] == "disaggregated"
    setup = cb.scenario(best["hardware"], "llama-3-70b", **_sets(best))
    expected = float(setup.evaluate("time_to_first_token_disaggregated_expected"))
    bound = float(setup.evaluate("time_to_first_token_disaggregated"))
    assert setup.evaluate("time_to_first_token_disaggregated_expected").unit == "ms"
    assert best["ttft_s"] * 1e3 == pytest.approx(expected, rel=1e-6)
    # the prompt alone is one more pass through the model's layers (models.yaml), each with the engine
    # model's fixed time, and its prefill at the fitted share of its bound
    import json

    import yaml
    from chalkboard.validation.engine_fit import SHIPPED
    from conftest import ROOT
    from units import parse
    mfu, mbu, sync, prefill_share = json.loads(SHIPPED.read_text(encoding="utf-8"))["fit"]["params"]
    layers = int(yaml.safe_load((ROOT / "models.yaml").read_text())["models"]["llama-3-70b"]["layers"]["value"])
    got = setup.evaluate("kv_transfer_time")
    kv = parse(f"{got.value} {got.unit}").to("ms").magnitude
    assert expected == pytest.approx((bound - kv) / prefill_share + layers * sync * 1e3 + kv, rel=1e-3)
    assert expected > bound


def test_a_limit_between_the_bound_and_the_expected_first_token_binds(best):
    setup = cb.scenario(best["hardware"], "llama-3-70b", **_sets(best))
    bound = float(setup.evaluate("time_to_first_token_disaggregated")) / 1e3
    limit = (bound + best["ttft_s"]) / 2
    within = cb.plan("llama-3-70b", 30, context=4096, max_ttft=limit)["best"]
    assert within is not None and within["ttft_s"] <= limit
    assert (within["hardware"], within["chips"], within["batch"]) != (best["hardware"], best["chips"], best["batch"])
    by_bound = cb.plan("llama-3-70b", 30, context=4096, max_ttft=limit, by="bound")["best"]
    assert by_bound["ttft_s"] <= limit
