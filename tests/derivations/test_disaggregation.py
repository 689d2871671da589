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
    # in-flight, a prompt's chunks ride on the decode steps: its share of a pass that reads the weights for many
    # (its compute and collectives, overlapped in the strict form), less than a pass of its own
    share = sc.mag("prefill_time_pooled", "s")
    assert sc.mag("request_time_inflight", "s") == pytest.approx(1024 * step + 64 * share, rel=1e-12)
    assert share < pre and sc.mag("user_speed_inflight") > sc.mag("user_speed_colocated")


def test_a_prefill_pool_costs_the_same_chip_time_per_request(data):
    sc = Scenario(data, "h100-sxm", "llama-3-70b", SETUP)
    step, pre = sc.mag("step_time_layout", "s"), sc.mag("prefill_time_pooled", "s")
    # a decoding copy finishes 64 requests in 1,024 steps; each needs its share of a pass on a copy of the same chips
    assert sc.mag("prefill_pool_ratio") == pytest.approx(64 * pre / (1024 * step), rel=1e-12)
    # so at the same batch a token costs the same as with in-flight batching; what the pool buys is speed per user
    assert sc.mag("cost_per_token_disaggregated") == pytest.approx(sc.mag("cost_per_token_inflight"), rel=1e-9)
    # and the expected numbers keep the same identity
    from conftest import ROOT
    from chalkboard import validation as val
    sc.evidence = val.evidence(ROOT, data)
    assert sc.mag("cost_per_token_disaggregated_expected") == pytest.approx(
        sc.mag("cost_per_token_inflight_expected"), rel=1e-9)


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
    # in-flight, the prompt is one of many a pass: its as-run share at the fitted share, as whole requests are fitted
    assert sc.mag("request_time_inflight_expected", "s") == pytest.approx(
        1024 * sc.mag("step_time_expected_layout", "s") + 64 * sc.mag("prefill_time_pooled_as_run", "s") / share,
        rel=1e-12)
    # colocated, a prompt a pass: each pays the lone prompt's expected prefill
    assert sc.mag("request_time_colocated_expected", "s") == pytest.approx(
        1024 * sc.mag("step_time_expected_layout", "s") + 64 * sc.mag("prefill_time_one_expected", "s"), rel=1e-12)


def test_deepseeks_whole_service_cost_lies_between_the_bound_and_the_top_of_the_expected_range(data):
    """DeepSeek, 'Day 6: One More Thing, DeepSeek-V3/R1 Inference System Overview' (open-infra-index, Feb 2025):
    a day of the online service cost $87,072 of H800 time at $2 a GPU-hour and gave 168B output tokens, so
    $0.518 per million answer tokens; 608B input tokens, 342B of them (56.3%) cache hits; an average KV length
    of 4,989 per output token; decoding on units of 18 nodes (EP144), dispatch in FP8. The H800 is the H100 SXM's
    die and HBM (NVLink cut), so the H100's bound is a bound for it. Answer lengths are not published: only their
    ratio to the prompts (608 / 168) enters a cost per answer token; the batch is not either: the largest that fits."""
    from conftest import ROOT
    from chalkboard import validation as val
    measured = 87_072 / 168e9 * 1e6                        # USD per million answer tokens
    setup = {"rental_price": "2 USD/hour", "chips": "144", "context": "4989", "output_tokens": "1000",
             "pass_tokens": f"{1000 * 608 / 168:.0f}", "prefix_cache_share": f"{342 / 608}",
             "dispatch_bytes_per_activation": "1 B"}
    sc = Scenario(data, "h100-sxm", "deepseek-v3", setup)
    sc = Scenario(data, "h100-sxm", "deepseek-v3", {**setup, "batch": str(int(sc.mag("max_batch_engine")))})
    sc.evidence = val.evidence(ROOT, data)
    bound = sc.mag("cost_per_token_disaggregated", "USD/Mtoken")
    top = max(e.to("USD/Mtoken").magnitude for e in sc.spread("cost_per_token_disaggregated_expected"))
    assert bound < measured < top, (bound, measured, top)
    # the pools DeepSeek ran: about 73.7k input tokens/s a prefill node and 14.8k output tokens/s a decode node
    # give 608e9 / 73.7e3 : 168e9 / 14.8e3 node-seconds, 0.73 prefill chips per decoding chip
    assert sc.mag("prefill_pool_ratio") == pytest.approx((608e9 / 73.7e3) / (168e9 / 14.8e3), rel=0.25)
