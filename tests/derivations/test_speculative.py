"""Speculative decoding and multi-token prediction (derivations/speculative.py), against counts made
by hand and published figures.

* Leviathan, Kalman and Matias 2023 ("Fast Inference from Transformers via Speculative Decoding",
  eq. 1): with k drafted tokens each accepted with probability a, a step gains 1 + a + ... + a^k
  tokens on average.
* DeepSeek-V3 Technical Report (arXiv:2412.19437) sec. 5.4.3: one MTP module drafts the second
  token, accepted 85-90% of the time, "1.8 times TPS". README_WEIGHTS.md: the MTP module has 11.5B
  unique parameters, 2.4B of them active per token.
* H200: 4.8 TB/s HBM, 989.5 TFLOP/s dense bf16 (the hardware.yaml figures the scenario reads).
"""
import itertools
import os

import pytest

import warm
from conftest import ROOT


def _sc(data, hw, model, **sets):
    from chalkboard.evaluation.evaluate import Scenario
    return Scenario(data, hw, model, {k: str(v) for k, v in sets.items()})


def test_deepseek_mtp_gains_one_plus_its_published_acceptance(data):
    # one drafted token accepted 85% of the time (the low end DeepSeek publishes): 1 + 0.85 tokens
    sc = _sc(data, "h200", "deepseek-v3", batch=64, context=4096)
    assert sc.mag("draft_tokens", "token/sequence") == 1
    assert sc.mag("accepted_tokens_per_step", "token/sequence") == pytest.approx(1.85, rel=1e-12)
    # at the top of the published range, 1.9: the published 1.8 times TPS is below what the
    # accepted tokens allow, as it must be (a step with a draft is never shorter than one without)
    sc90 = _sc(data, "h200", "deepseek-v3", batch=64, context=4096, draft_acceptance=0.9)
    assert sc90.mag("accepted_tokens_per_step", "token/sequence") == pytest.approx(1.9, rel=1e-12)
    assert 1.8 <= sc90.mag("accepted_tokens_per_step", "token/sequence")
    assert sc90.mag("spec_speedup") <= sc90.mag("accepted_tokens_per_step", "token/sequence")


def test_three_drafted_tokens_by_hand(data):
    # k = 3, a = 0.8: 1 + 0.8 + 0.64 + 0.512 = 2.952 tokens a step
    sc = _sc(data, "h200", "llama-3-70b", batch=1, context=2048, draft_tokens=3, draft_acceptance=0.8,
             draft_params=1.24e9, draft_params_active=1.24e9)
    assert sc.mag("accepted_tokens_per_step", "token/sequence") == pytest.approx(2.952, rel=1e-12)
    # the draft: three passes of a 1.24B-parameter bf16 model reading its weights over the copy's
    # 8 H200s (batch 1: a pass reads what one token uses, all 1.24B), 2.48 GB / (8 · 4.8 TB/s) each
    assert sc.mag("draft_time", "s") == pytest.approx(3 * 1.24e9 * 2 / (8 * 4.8e12), rel=1e-9)
    # the verifying pass reads the weights once: at batch 1 it costs about one plain step (the four
    # tokens' compute and all-reduce bytes are small beside 140 GB of weights)
    ratio = sc.mag("verify_step_time", "s") / sc.mag("step_time_layout", "s")
    assert 1 < ratio < 1.05
    speed = sc.mag("user_speed_spec", "token/s/sequence")
    assert speed == pytest.approx(2.952 / sc.mag("spec_step_time", "s"), rel=1e-12)


def test_no_draft_is_a_plain_step(data):
    sc = _sc(data, "h100-sxm", "llama-3-70b", batch=32, context=4096, draft_tokens=0, draft_acceptance=0.5,
             draft_params=1e9, draft_params_active=1e9)
    assert sc.mag("accepted_tokens_per_step", "token/sequence") == pytest.approx(1, rel=1e-12)
    assert sc.mag("spec_step_time", "s") == pytest.approx(sc.mag("step_time_layout", "s"), rel=1e-12)
    assert sc.mag("spec_speedup") == pytest.approx(1, rel=1e-12)


def test_the_strict_bound_stays_strict_for_any_acceptance(data):
    for a, k, b in itertools.product((0.05, 0.5, 0.9, 0.999), (1, 2, 4, 8), (1, 64, 1024)):
        sc = _sc(data, "h200", "deepseek-v3", batch=b, context=4096, draft_acceptance=a, draft_tokens=k)
        assert sc.mag("user_speed_spec", "token/s/sequence") <= sc.mag("user_speed_spec_max", "token/s/sequence")
        # and the plain strict bound of one token a step is what k = 0 gives
    sc = _sc(data, "h200", "deepseek-v3", batch=8, context=4096, draft_tokens=0)
    assert sc.mag("user_speed_spec_max", "token/s/sequence") == pytest.approx(
        1 / sc.mag("step_time_layout_min", "s"), rel=1e-12)


@pytest.mark.parametrize("args, must", [
    (["eval", "user_speed_spec", "--model", "deepseek-v3", "--set", "draft_acceptance=1"], "below 1"),
    (["eval", "user_speed_spec", "--model", "llama-3-70b", "--hardware", "h100-sxm"], "--set draft_acceptance"),
])
def test_refusals_are_one_line(args, must):
    r = warm.run(ROOT / "build.py", args, cwd=ROOT, env=dict(os.environ), timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    err = [ln for ln in r.stderr.splitlines() if ln.startswith("error")]
    assert len(err) == 1 and must in err[0], r.stderr


def test_an_acceptance_of_one_in_models_yaml_is_refused(tmp_path):
    from chalkboard.data.loader import DataError, load
    for f in ("hardware.yaml", "prices.yaml"):
        (tmp_path / f).write_text((ROOT / f).read_text(encoding="utf-8"), encoding="utf-8")
    text = (ROOT / "models.yaml").read_text(encoding="utf-8")
    (tmp_path / "models.yaml").write_text(text.replace('mtp_acceptance: {value: "0.85"', 'mtp_acceptance: {value: "1"'),
                                          encoding="utf-8")
    with pytest.raises(DataError, match="deepseek-v3.*mtp_acceptance.*below 1"):
        load(tmp_path)
