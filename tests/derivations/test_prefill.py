"""Prefill as it runs (derivations/prefill.py): the prompt's causal attention and the experts its
tokens touch, against counts made from first principles.

* Attention FLOPs per (query, key) pair and layer: 2 FLOP per multiply-accumulate, one product for
  the score and one for the value per dimension of each query head: 2·2·heads·d_head. A causal
  prompt of n tokens has about n²/2 pairs (Vaswani et al. 2017).
* Llama 3 8B / 70B (Llama 3 paper, Table 3): 32 / 80 layers, 32 / 64 query heads of 128, 8e9 /
  70e9 parameters. DeepSeek-V3: 256 routed experts of width 2048 in 58 MoE layers, 8 per token,
  d_model 7168, 37e9 active and 671e9 total parameters.
* H100 SXM: 989.5 TFLOP/s dense bf16; H200: 4.8 TB/s HBM.
"""
import pytest


def _sc(data, hw, model, **sets):
    from chalkboard.evaluation.evaluate import Scenario
    return Scenario(data, hw, model, {k: str(v) for k, v in sets.items()})


def attn_flops_per_pair(layers, heads, d_head):
    return 2 * 2 * layers * heads * d_head


def test_attention_share_of_a_2k_prompt_on_llama_3_8b(data):
    n = 2048
    att = 0.5 * n * n * attn_flops_per_pair(32, 32, 128)
    weights = 2 * n * 8e9
    sc = _sc(data, "h100-sxm", "llama-3-8b", pass_tokens=n)
    assert sc.mag("prefill_attention_flops", "FLOP/sequence") == pytest.approx(att, rel=1e-12)
    assert sc.mag("prefill_attention_share") == pytest.approx(att / (att + weights), rel=1e-12)
    assert 0.03 < sc.mag("prefill_attention_share") < 0.04      # a few percent at 2k


def test_attention_adds_about_a_third_at_32k_on_a_70b_model(data):
    n = 32768
    att = 0.5 * n * n * attn_flops_per_pair(80, 64, 128)
    sc = _sc(data, "h100-sxm", "llama-3-70b", pass_tokens=n)
    assert sc.mag("prefill_attention_flops", "FLOP/sequence") == pytest.approx(att, rel=1e-12)
    # the attention adds about 31% to the weights' 2·N FLOPs per token (the program's share, as a ratio)
    share = sc.mag("prefill_attention_share")
    assert share / (1 - share) == pytest.approx(0.307, abs=0.001)
    # the lecture's pass leaves it out: with it, a compute-bound prefill takes that much longer
    sc = _sc(data, "h100-sxm", "llama-3-70b", pass_tokens=n, batch=8, weight_format="bf16")
    expected = 8 * (2 * n * 70e9 + att) / (8 * 989.5e12)
    assert sc.mag("prefill_time", "s") == pytest.approx(expected, rel=1e-9)
    assert sc.mag("prefill_time", "s") / sc.mag("pass_time", "s") == pytest.approx(1 + att / (2 * n * 70e9), rel=1e-9)


def test_an_moe_prefill_reads_the_experts_all_its_tokens_touch(data):
    # DeepSeek-V3 on 8 H200 in fp8, one 1,024-token prompt: 1,024 tokens each pick 8 of 256
    # experts, so nearly all are read; the lecture's pass reads those of one token
    routed = 58 * 256 * 3 * 7168 * 2048
    always = 37e9 - 8 / 256 * routed
    touched = 1 - (1 - 8 / 256) ** 1024
    sc = _sc(data, "h200", "deepseek-v3", chips=8, batch=1, pass_tokens=1024, weight_format="fp8")
    assert sc.mag("prefill_expert_fraction") == pytest.approx(touched, rel=1e-12)
    reads = (always + routed * touched) * 1 / (8 * 4.8e12)
    assert sc.mag("prefill_weight_fetch_time", "s") == pytest.approx(reads, rel=1e-9)
    assert sc.mag("time_to_first_token", "ms") == pytest.approx(17.5, abs=0.1)
    assert sc.mag("pass_time", "ms") < 5     # the pass as the lecture reads it: one token's experts


def test_a_prefix_cache_hit_leaves_only_the_rest_of_the_prompt_to_compute(data):
    # 32k tokens, the first 3/4 cached: 8k tokens through the weights, and those 8k attend to every
    # token before them: (n² − (3n/4)²)/2 pairs
    n, h = 32768, 0.75
    att = 0.5 * (n * n - (h * n) ** 2) * attn_flops_per_pair(80, 64, 128)
    sc = _sc(data, "h100-sxm", "llama-3-70b", pass_tokens=n, batch=8, weight_format="bf16", prefix_cache_share=h)
    assert sc.mag("prefill_attention_flops", "FLOP/sequence") == pytest.approx(att, rel=1e-12)
    expected = 8 * (2 * (1 - h) * n * 70e9 + att) / (8 * 989.5e12)
    assert sc.mag("prefill_time", "s") == pytest.approx(expected, rel=1e-9)
    # a share of 1 would leave nothing to prefill: refused in one line
    from chalkboard.errors import InputError
    with pytest.raises(InputError, match="prefix_cache_share"):
        _sc(data, "h100-sxm", "llama-3-70b", prefix_cache_share=1)


# -- the strict prefill under multi-node expert parallelism --------------------------------------
# DeepSeek-V3 on 4 nodes of 8 H100 (EP32, attention data-parallel over 32), as SGLang's large-scale EP
# blog (LMSYS, 2025-05-05) and DeepSeek's inference system (open-infra-index, day 6) run prefill: 128
# prompts of 4,096 tokens, FP8 dispatch and BF16 combine (DeepEP's README). Each H100 has one 400 Gb/s
# (50 GB/s) network card; 58 MoE layers of d_model 7168, 8 of 256 experts a token.
EP32 = dict(chips=32, tp=1, dp_attention=32, ep=32, pp=1, batch=128, pass_tokens=4096,
            weight_format="fp8", compute_format="fp8")


def _remote_nodes(nodes=4, k=8):
    # a token's 8 experts, each on one of the 4 nodes at random: the other nodes holding at least one
    return (nodes - 1) * (1 - (1 - 1 / nodes) ** k)


def test_a_token_crosses_the_network_once_to_each_other_node_holding_its_experts(data):
    sc = _sc(data, "h100-sxm", "deepseek-v3", **EP32, dispatch_bytes_per_activation="1 byte")
    assert sc.mag("ep_remote_domains_per_token") == pytest.approx(_remote_nodes(), rel=1e-12)
    assert _remote_nodes() < 8 * 3 / 4          # fewer than the routed copies that leave the node
    # 16,384 prompt tokens a chip, each to 2.70 other nodes, 1 byte out and 2 back a number, over 50 GB/s;
    # one hop each way a layer
    wire = 128 * 4096 / 32 * 7168 * (1 + 2) * _remote_nodes() / 50e9
    expected = 58 * (2 * 1e-6 + wire)
    assert sc.mag("prefill_ep_comm_time_min", "s") == pytest.approx(expected, rel=1e-9)


def test_the_strict_prefill_overlaps_what_the_as_run_one_adds(data):
    sc = _sc(data, "h100-sxm", "deepseek-v3", **EP32, dispatch_bytes_per_activation="1 byte")
    compute, comm = sc.mag("prefill_compute_time_layout", "s"), sc.mag("prefill_ep_comm_time_min", "s")
    assert comm > compute        # multi-node EP32 prefill: the network, not the tensor cores, sets it
    assert sc.mag("prefill_time_layout_min", "s") == pytest.approx(max(compute, comm), rel=1e-12)
    assert sc.mag("prefill_time_layout", "s") > compute + comm   # serial, every routed copy sent
    # the dispatch format is an input: FP8 halves the dispatch's bytes against BF16 both ways
    bf16 = _sc(data, "h100-sxm", "deepseek-v3", **EP32)
    ratio = (bf16.mag("prefill_ep_comm_time_min", "s") - 58 * 2e-6) / (comm - 58 * 2e-6)
    assert ratio == pytest.approx((2 + 2) / (1 + 2), rel=1e-9)
