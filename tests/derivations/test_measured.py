"""From a measurement to an efficiency (derivations/measured.py), against published runs.

* PaLM (Chowdhery et al. 2022), Table 3 and Appendix B: PaLM 540B (540.35e9 parameters, 118
  layers, 48 heads of 256, sequence 2048) trained at 238.3K tokens/s on 6144 TPU v4 chips of
  275 TFLOP/s (bf16): 46.2% MFU, counting 6·N FLOP per token plus the attention term 12·L·H·Q·T.
* Megatron-LM (Narayanan et al. 2021), sec. 5.1: GPT-3 (175e9 parameters, 300e9 tokens) on 1024
  A100s (312 TFLOP/s bf16) at 140 TFLOP/s per GPU takes about 34 days, by their estimate
  8·T·P / (n·X), which counts the forward pass recomputed (8 FLOP per parameter per token).
* DeepSeek-V3 technical report, sec. 1 and Table 1: 37e9 activated parameters, 14.8e12 tokens,
  180K H800 GPU-hours per trillion tokens, 2.664M GPU-hours of pre-training; H800 dense bf16 is
  the H100 SXM's 989.5 TFLOP/s (the H800 differs in its NVLink).
* Oracle's MI300X blog (measurements.yaml, oracle-mi300x-llama31-405b-b1): Llama 3.1 405B in
  fp8 on 8 MI300X (5.3 TB/s each, AMD CDNA 3 whitepaper), batch 1, 128 in / 128 out: 36 tokens/s.
"""
import pytest

from chalkboard.evaluation.evaluate import Scenario
from chalkboard.errors import NotGiven


def test_palm_540b_mfu_from_its_throughput(data):
    n, tokens_per_s, chips, peak = 540.35e9, 238.3e3, 6144, 275e12
    one_day = 86_400
    sc = Scenario(data, "custom", "custom", {
        "peak_flops": f"{peak} FLOP/s", "params_active": f"{n} parameter", "params_total": f"{n} parameter",
        "pretrain_tokens": f"{tokens_per_s * one_day} token",                 # the tokens of one day
        "measured_chip_hours": f"{chips * 24} chip*hour"})                     # ... on 6144 chips
    mfu = sc.mag("training_mfu_implied")
    assert mfu == pytest.approx(6 * n * tokens_per_s / (chips * peak), rel=1e-12)
    assert mfu == pytest.approx(0.457, abs=0.001)
    # PaLM's 46.2% adds its attention term, 12·L·H·Q·T FLOP per token, which 6·N leaves out
    attention = 12 * 118 * 48 * 256 * 2048
    assert mfu * (6 * n + attention) / (6 * n) == pytest.approx(0.462, abs=0.0005)


def test_gpt3_on_1024_a100s_hardware_utilisation_from_the_megatron_estimate(data):
    days = 34
    sc = Scenario(data, "a100-80gb", "custom", {
        "params_active": "175e9 parameter", "params_total": "175e9 parameter", "pretrain_tokens": "300e9 token",
        "measured_chip_hours": f"{1024 * days * 24} chip*hour", "weight_format": "bf16"})
    # 8·T·P/(n·X) = 34 days at X = 140 TFLOP/s: the recompute-counting utilisation is 140/312
    assert sc.mag("training_hfu_implied") == pytest.approx(140 / 312, rel=0.01)
    assert sc.mag("training_hfu_implied") / sc.mag("training_mfu_implied") == pytest.approx(8 / 6, rel=1e-12)


def test_deepseek_v3_pretraining_mfu_from_its_gpu_hours(data):
    hours = 14.8 * 180e3
    assert hours == pytest.approx(2.664e6, rel=1e-3)    # the report's two statements agree
    sc = Scenario(data, "h100-sxm", "deepseek-v3", {
        "pretrain_tokens": "14.8e12 token", "measured_chip_hours": f"{hours} chip*hour", "weight_format": "bf16"})
    expected = 6 * 37e9 * 14.8e12 / (hours * 3600 * 989.5e12)
    assert sc.mag("training_mfu_implied") == pytest.approx(expected, rel=1e-12)
    assert 0.33 < expected < 0.36      # at the bf16 peak; half that at the fp8 peak it trained in
    assert sc.mag("fleet_flops", "FLOP") == pytest.approx(hours * 3600 * 989.5e12, rel=1e-12)


def test_mbu_and_mfu_of_a_published_decode_measurement(data):
    sets = {"measured_throughput": "36 token/s", "batch": "1", "context": "192", "chips": "8",
            "weight_format": "fp8", "kv_format": "fp8", "compute_format": "fp8"}
    sc = Scenario(data, "mi300x", "llama-3-405b", sets)
    kv_per_token = 2 * 126 * 8 * 128 * 1                 # fp8 KV (not published: the narrowest)
    step_bytes = 405e9 * 1 + 192 * kv_per_token         # the weights and one sequence's cache
    assert sc.mag("measured_step_time_from_throughput", "s") == pytest.approx(1 / 36, rel=1e-12)
    assert sc.mag("mbu_measured") == pytest.approx(step_bytes * 36 / (8 * 5.3e12), rel=1e-9)
    assert sc.mag("mbu_measured") == pytest.approx(0.344, abs=0.001)
    assert sc.mag("mfu_measured") == pytest.approx(36 * 2 * 405e9 / (8 * 2614.9e12), rel=1e-9)
    # the measured system ran: no fit is judged for it (not the one-sequence fit of a set-up)
    from chalkboard.evaluation.results import feasibility
    assert sc.flag("mbu_measured") is None
    assert feasibility(sc, "mbu_measured") == {"feasible": None, "reason": "a measured system: it ran, so its fit is not judged"}


def test_expected_numbers_use_only_the_efficiencies_given(data):
    sc = Scenario(data, "h100-sxm", "llama-3-70b", {"batch": "64", "context": "4096"})
    with pytest.raises(NotGiven) as e:
        sc.mag("step_time_expected")
    assert e.value.name in ("expected_mfu", "expected_mbu", "expected_sync_time") and "--set" in str(e.value)
    sc = Scenario(data, "h100-sxm", "llama-3-70b", {"batch": "64", "context": "4096", "expected_mfu": "0.5",
                                                   "expected_mbu": "0.8", "expected_sync_time": "0.1 ms"})
    expected = sc.mag("compute_time", "s") / 0.5 + sc.mag("memory_time", "s") / 0.8 + 80 * 1e-4
    assert sc.mag("step_time_expected", "s") == pytest.approx(expected, rel=1e-12)
    assert sc.mag("step_time_expected", "s") > sc.mag("step_time", "s")


def test_a_measured_quantity_without_its_measurement_is_one_line(cli):
    r = cli("eval", "mfu_measured", "--hardware", "h100-sxm", "--model", "llama-3-70b")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "measured_throughput" in lines[0] and "--set" in lines[0]


def test_expected_inputs_default_to_the_engine_model_fitted_to_the_published_measurements(data):
    """Not given, expected_mfu, expected_mbu and expected_sync_time are the engine model fitted to the
    published runs (chalkboard/validation/engine_fit.py); the expected step under the layout is, by hand, the
    layout's compute at the first, its reads at the second, its collectives, and every layer's fixed time."""
    from conftest import ROOT
    from chalkboard import validation as val

    sc = Scenario(data, "h100-sxm", "llama-3-70b", {"batch": "64", "context": "4096"})
    sc.evidence = val.evidence(ROOT, data)
    model = sc.evidence()
    mfu, mbu, sync, _ = model.params
    assert (sc.mag("expected_mfu"), sc.mag("expected_mbu"), sc.mag("expected_sync_time", "s")) == pytest.approx(
        (mfu, mbu, sync), rel=1e-12)
    assert f"fitted to {model.n} published runs" in sc.records["expected_mbu"].source
    by_hand = (sc.mag("compute_time_layout", "s") / mfu
               + (sc.mag("weight_fetch_time_layout", "s") + sc.mag("kv_fetch_time_layout", "s")) / mbu
               + sc.mag("tp_comm_time", "s") + 80 * sync)          # Llama 3 70B: 80 layers (Table 3)
    assert sc.mag("step_time_expected_layout", "s") == pytest.approx(by_hand, rel=1e-9)
    # never faster than the layout's own step as it runs
    assert sc.mag("step_time_expected_layout", "s") >= sc.mag("step_time_layout", "s")


def test_eval_prints_the_evidence_behind_an_expected_number(cli):
    r = cli("eval", "step_time_expected", "--hardware", "h100-sxm", "--model", "llama-3-70b",
            "--set", "batch=64", "--set", "context=4096", "--explain")
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.strip().startswith("expected_mbu"))
    assert "the engine model fitted to" in line and "10th–90th percentile" in line
    # its terms (the layout's compute, reads and collectives, and every layer's fixed time), and one
    # line that says what was assumed and from which measurements
    text = r.stdout
    breakdown = next(ln for ln in text.splitlines() if ln.strip().startswith("breakdown"))
    for term in ("compute_time_layout", "weight_fetch_time_layout", "tp_comm_time", "sync_time_expected"):
        assert term in breakdown
    assumed = next(ln for ln in text.splitlines() if ln.strip().startswith("assumed"))
    assert "expected_mfu = " in assumed and "published runs" in assumed
