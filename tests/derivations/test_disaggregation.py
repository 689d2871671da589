"""Colocated and disaggregated deployments (derivations/disaggregation.py), worked by hand."""
import pytest

from chalkboard.evaluation.evaluate import Scenario

SETUP = {"batch": "64", "context": "4096", "pass_tokens": "4096 token/sequence", "output_tokens": "1024 token/sequence"}


def test_a_colocated_copy_stops_its_decoding_for_every_prompt_it_admits(data):
    sc = Scenario(data, "h100-sxm", "llama-3-70b", SETUP)
    step, pre = sc.mag("step_time_layout", "s"), sc.mag("prefill_time_one", "s")
    # per turnover of the batch: 1,024 decode steps, and 64 prefills of one prompt each
    assert sc.mag("request_time_colocated", "s") == pytest.approx(1024 * step + 64 * pre, rel=1e-12)
    assert sc.mag("user_speed_colocated") == pytest.approx(1024 / (1024 * step + 64 * pre), rel=1e-12)
    # slower per user than the same copy decoding without prefills
    assert sc.mag("user_speed_colocated") < sc.mag("user_speed_layout")
    # one prompt's prefill is the layout's prefill at a batch of one
    one = Scenario(data, "h100-sxm", "llama-3-70b", {**SETUP, "batch": "1"})
    assert pre == pytest.approx(one.mag("prefill_time_layout", "s"), rel=1e-12)


def test_a_prefill_pool_costs_the_same_chip_time_per_request(data):
    sc = Scenario(data, "h100-sxm", "llama-3-70b", SETUP)
    step, pre = sc.mag("step_time_layout", "s"), sc.mag("prefill_time_one", "s")
    # a decoding copy finishes 64 requests in 1,024 steps; each needs one prefill on a copy of the same chips
    assert sc.mag("prefill_pool_ratio") == pytest.approx(64 * pre / (1024 * step), rel=1e-12)
    # so at the same batch a token costs the same either way; what the pool buys is speed per user
    assert sc.mag("cost_per_token_disaggregated") == pytest.approx(sc.mag("cost_per_token_colocated"), rel=1e-9)
    # and the expected numbers keep the same identity
    from conftest import ROOT
    from chalkboard import validation as val
    sc.evidence = val.evidence(ROOT, data)
    assert sc.mag("cost_per_token_disaggregated_expected") == pytest.approx(
        sc.mag("cost_per_token_colocated_expected"), rel=1e-9)


def test_the_kv_cache_crosses_the_network_before_the_first_token(data):
    sc = Scenario(data, "h100-sxm", "llama-3-70b", SETUP)
    # Llama 3 70B: 80 layers x 8 KV heads x 128 dims x (K and V) x 2 bytes = 327,680 bytes a token
    # (Llama 3 paper, Table 3); 4,096 tokens over 8 H100 NICs of 400 Gb/s (50 GB/s) each
    kv = 80 * 8 * 128 * 2 * 2 * 4096
    assert sc.mag("kv_transfer_time", "s") == pytest.approx(kv / (8 * 50e9), rel=1e-9)
    assert sc.mag("time_to_first_token_disaggregated", "s") == pytest.approx(
        sc.mag("prefill_time_one", "s") + kv / (8 * 50e9), rel=1e-9)


def test_an_engine_plans_within_its_share_of_the_hbm(data):
    # Llama 3 70B (Table 3: 80 layers, 8 KV heads of 128) in bf16 on 8 H100s of 80 GB, 4,096 tokens of
    # context: 327,680 KV bytes a token; vLLM gives weights and KV 90% of the HBM by default
    sc = Scenario(data, "h100-sxm", "llama-3-70b", {"context": "4096", "weight_format": "bf16"})
    weights = sc.mag("params_total") * 2
    per_seq = 4096 * 80 * 8 * 128 * 2 * 2
    assert sc.mag("max_batch_engine") == (8 * 80e9 * 0.9 - weights) // per_seq
    assert sc.mag("max_batch_engine") < sc.mag("max_batch_capacity") == (8 * 80e9 - weights) // per_seq
    from chalkboard.errors import InputError
    with pytest.raises(InputError, match="engine_memory_share"):
        Scenario(data, "h100-sxm", "llama-3-70b", {"engine_memory_share": "1.2"})


def test_a_prompt_alone_pays_every_layers_fixed_time_once_and_a_batched_one_does_not(data):
    from conftest import ROOT
    from chalkboard import validation as val
    sc = Scenario(data, "h100-sxm", "llama-3-70b", SETUP)
    sc.evidence = val.evidence(ROOT, data)
    bound, share, sync = (sc.mag("prefill_time_one", "s"), sc.mag("expected_prefill_efficiency"),
                          sc.mag("expected_sync_time", "s"))
    # a time to first token is one pass through Llama 3 70B's 80 layers (config.json: num_hidden_layers 80):
    # the engine model fits a measured one as bound / share + 80 fixed times, so the expected time is not the bound
    assert sc.mag("prefill_time_one_expected", "s") == pytest.approx(bound / share + 80 * sync, rel=1e-12)
    assert sc.mag("prefill_time_one_expected", "s") > bound
    # within a colocated request the prompt is one of a batch's: its bound at the share, as whole requests are fitted
    assert sc.mag("request_time_colocated_expected", "s") == pytest.approx(
        1024 * sc.mag("step_time_expected_layout", "s") + 64 * bound / share, rel=1e-12)
