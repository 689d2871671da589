"""How one copy is laid out (derivations/layout.py): what each chip holds and reads, the
tensor-parallel all-reduces and the expert all-to-all, checked against numbers worked by hand
from published figures.

Figures used (each also in hardware.yaml / models.yaml with its source):
* H100 SXM / H200: 3.35 / 4.8 TB/s HBM; NVLink 4 at 450 GB/s per direction (the datasheets'
  900 GB/s is the bidirectional total); 8 GPUs per NVLink domain.
* Llama 3 70B (Llama 3 paper, Table 3): 70e9 parameters, 80 layers, d_model 8192, 8 KV heads of
  128, so 2·80·8·128·2 = 327,680 KV bytes per token in bf16.
* DeepSeek-V3 (technical report, config.json): 61 layers, an MLA cache of one 512 + 64 latent per
  layer per token (kv_lora_rank 512, qk_rope_head_dim 64); 256 routed experts of width 2048 in 58
  MoE layers, 8 per token, d_model 7168; 671e9 total and 37e9 active parameters.
* Megatron-LM (Shoeybi et al. 2019, sec. 3): two all-reduces of the residual stream per layer in
  the forward pass; a ring all-reduce moves 2·(n−1)/n of the buffer and makes 2·(n−1) hops.
* On an NVSwitch node every GPU reaches every other in one hop, and the serving libraries run the
  faster of a one-shot all-reduce (one step; each GPU sends its whole buffer to the n−1 others) and
  a two-shot one (a reduce-scatter and an all-gather of one step each, the ring's 2·(n−1)/n of the
  buffer): TensorRT-LLM's AllReduceStrategy ONESHOT/TWOSHOT; NVIDIA, "3x Faster AllReduce with
  NVSwitch and TensorRT-LLM MultiShot" (2024).
"""
import json

import pytest


H100_W, NVLINK, HOP = 3.35e12, 450e9, 1e-6            # B/s, B/s per direction, s (the default hop latency)
# each step of a one- or two-shot all-reduce on H100: TensorRT-LLM's fastest measured call (AIConfigurator
# 0.4.0, h100_sxm/trtllm/0.20.0/custom_allreduce_perf.txt: 0.00319 ms at TP2, 128 elements)
STEP = 3.19e-6
LLAMA70_KV = 2 * 80 * 8 * 128 * 2                      # bytes per token, bf16


def nvswitch_allreduces(layers, tp, tokens, link=NVLINK, per_layer=2, width=8192, number=2):
    """Megatron's all-reduces of ``tokens`` residual vectors, ``per_layer`` a layer, on one NVSwitch
    node: the faster of one-shot and two-shot, worked from the buffer's bytes."""
    buffer = per_layer * tokens * width * number                       # bytes a GPU all-reduces a layer
    one = per_layer * STEP + (tp - 1) * buffer / link
    two = 2 * (per_layer * STEP + (tp - 1) / tp * buffer / link)
    return layers * min(one, two)


def ring_allreduces(layers, tp, tokens, link=NVLINK, per_layer=2, width=8192, number=2):
    """The same all-reduces as rings: 2·(tp − 1) steps each, 2·(tp − 1)/tp of the buffer."""
    return layers * per_layer * 2 * (tp - 1) * (HOP + tokens * width * number / (tp * link))


def _sc(data, hardware, model, *sets):
    from chalkboard.evaluation.evaluate import Scenario
    return Scenario(data, hardware, model, dict(x.split("=", 1) for x in sets))


def test_llama_70b_tp8_decode_step_adds_two_allreduces_per_layer(data, cli):
    sets = ("tp=8", "batch=1", "context=2048", "weight_format=bf16", "kv_format=bf16")
    sc = _sc(data, "h100-sxm", "llama-3-70b", *sets)
    # one token's residual (8192 bf16 numbers), two all-reduces a layer over 8 GPUs on NVSwitch: one-shot,
    # 2 measured steps of 3.19 µs and 7 · 32,768 bytes at 450 GB/s (6.89 µs a layer) beats two-shot
    # (13.3 µs) and the ring's 2·7 hops (28.1 µs): 80 layers, 551 µs
    allreduces = nvswitch_allreduces(80, 8, 1)
    assert allreduces == pytest.approx(80 * (2 * 3.19e-6 + 7 * 32768 / 450e9), rel=1e-12)
    assert sc.mag("tp_comm_time", "s") == pytest.approx(allreduces, rel=1e-9)
    assert sc.mag("tp_allreduce_time_ring", "s") == pytest.approx(ring_allreduces(80, 8, 1), rel=1e-9)
    reads = (70e9 * 2 + 2048 * LLAMA70_KV) / 8 / H100_W                          # weights and KV, per GPU
    assert sc.mag("step_time_layout", "s") == pytest.approx(reads + allreduces, rel=1e-9)
    # the lecture's even spread has the same reads and no communication
    assert sc.mag("step_time", "s") == pytest.approx(reads, rel=1e-9)
    # the command line says the same, and names the layout it used
    r = cli("eval", "step_time_layout", "--hardware", "h100-sxm", "--model", "llama-3-70b",
            *[a for x in sets for a in ("--set", x)], "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["unit"] == "ms" and d["value"] * 1e-3 == pytest.approx(reads + allreduces, rel=1e-9)
    assert {i["name"]: i["value"] for i in d["inputs"]}["tp"] == 8


def test_deepseek_mla_cache_sits_whole_on_every_tensor_parallel_rank(data):
    sc = _sc(data, "h200", "deepseek-v3", "tp=8", "batch=16", "context=4096", "kv_format=bf16")
    per_token = 61 * (512 + 64) * 2                      # 70,272 bytes: one latent per layer, bf16
    whole = 16 * 4096 * per_token
    assert sc.mag("kv_per_chip_layout", "byte/chip") == pytest.approx(whole, rel=1e-9)
    assert sc.mag("kv_per_chip", "byte/chip") == pytest.approx(whole / 8, rel=1e-9)   # the even spread


def test_gqa_cache_is_replicated_past_its_kv_heads(data):
    # Llama 3 8B has 8 KV heads: over 16 tensor-parallel ranks each holds one whole head, not half of one
    kv_bytes = 2 * 32 * 8 * 128 * 2
    sc = _sc(data, "h100-sxm", "llama-3-8b", "chips=16", "tp=16", "batch=4", "context=1000", "kv_format=bf16")
    assert sc.mag("kv_per_chip_layout", "byte/chip") == pytest.approx(4 * 1000 * kv_bytes / 8, rel=1e-9)
    sc = _sc(data, "h100-sxm", "llama-3-8b", "chips=8", "tp=8", "batch=4", "context=1000", "kv_format=bf16")
    assert sc.mag("kv_per_chip_layout", "byte/chip") == pytest.approx(4 * 1000 * kv_bytes / 8, rel=1e-9)


def test_default_moe_layout_replicates_attention_and_spreads_experts(data):
    # DeepSeek-V3 on a GB200 NVL72 rack, fp8 weights: expert-parallel over 64 GPUs (the largest
    # divisor of 256 experts within 72), attention data-parallel over all 72
    routed = 58 * 256 * 3 * 7168 * 2048
    always = 37e9 - 8 / 256 * routed
    sc = _sc(data, "gb200-nvl72", "deepseek-v3", "weight_format=fp8", "kv_format=bf16")
    assert sc.mag("ep") == 64 and sc.mag("tp") == 1 and sc.mag("dp_attention") == 72
    assert sc.mag("weights_per_chip_layout", "byte/chip") == pytest.approx(always + routed / 64, rel=1e-9)
    # at batch 1 each layer waits for a GPU reading the attention and shared weights whole and one
    # expert: far above the even spread's floor of 8 experts spread over 72 GPUs
    one_gpu = (always + routed / 256) / 8e12 + 8192 * 61 * 576 * 2 / 8e12   # GB200: 8 TB/s; one latent cache
    assert sc.mag("latency_floor_layout", "s") >= one_gpu * (1 - 1e-9)
    assert sc.mag("latency_floor_layout", "s") > 5 * sc.mag("latency_floor", "s")


def test_the_strict_bound_is_below_the_step_it_bounds(data):
    from chalkboard.evaluation.evaluate import Scenario

    for hw in ("h100-sxm", "h200", "gb200-nvl72", "mi300x", "tpu-v5p"):
        for model in data.models:
            for batch in ("1", "64", "2000"):
                sc = Scenario(data, hw, model, {"batch": batch})
                assert sc.mag("step_time_layout_min") <= sc.mag("step_time_layout") * (1 + 1e-12), (hw, model, batch)


def test_a_layout_sets_the_chips_and_one_that_does_not_divide_them_is_one_line(cli):
    r = cli("eval", "step_time_layout", "--hardware", "h100-sxm", "--model", "llama-3-70b", "--set", "tp=16",
            "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)   # two H100 boxes of 8: the chips follow from the layout
    assert d["layout"] == {"tp": 16, "dp_attention": 1, "ep": 1, "pp": 1, "chips": 16}
    r = cli("eval", "step_time_layout", "--hardware", "h100-sxm", "--model", "llama-3-70b", "--set", "tp=16",
            "--set", "chips=8")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "tp · pp = 16" in lines[0] and "chips = 8" in lines[0], r.stderr
    r = cli("eval", "step_time_layout", "--hardware", "h100-sxm", "--model", "llama-3-70b", "--set", "tp=2.5")
    assert r.returncode == 2 and "whole number" in r.stderr


def test_no_published_measurement_beats_the_bound_of_its_own_layout(data):
    """validate's records that state their layout (TensorRT-LLM's "TP4", "TP8 with expert
    parallelism and attention data parallelism", vLLM's TP8) are bounded by step_time_layout_min
    under that layout too: none is faster than it."""
    from conftest import ROOT
    from chalkboard import validation as val

    results = val.evaluate_all(data, val.load_measurements(ROOT, data, "measurements.yaml"))
    laid_out = [r for r in results if r.layout_efficiency is not None]
    assert len(laid_out) >= 25
    assert {val.layout_sets(r.record)["tp"] for r in laid_out} >= {"1", "2", "4", "8"}
    assert any(val.layout_sets(r.record)["dp_attention"] == "8" for r in laid_out)   # the DeepSeek-style ones
    worst = max(laid_out, key=lambda r: r.layout_efficiency)
    assert worst.layout_efficiency <= 1 + val.TOLERANCE, (worst.record.id, worst.layout_efficiency)
    # the layout bound is never looser than the even spread's for the same record
    assert all(r.layout_efficiency >= max(r.efficiencies.values()) * (1 - 1e-9) for r in laid_out)


@pytest.mark.parametrize("sets,must", [
    (("tp=3", "chips=3"), ("tp=3", "n_heads (64)", "whole query heads")),
    (("pp=3", "chips=24"), ("pp=3", "layers (80)", "whole layers")),
    (("pp=5", "chips=32"), ("chips = 32", "pp = 5")),
])
def test_a_layout_that_does_not_divide_the_model_is_one_line(cli, sets, must):
    args = ["eval", "step_time_layout", "--hardware", "h100-sxm", "--model", "llama-3-70b"]
    r = cli(*args, *[a for x in sets for a in ("--set", x)])
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and all(m in lines[0] for m in must), r.stderr


def test_experts_must_divide_over_the_expert_parallel_chips(cli):
    r = cli("eval", "step_time_layout", "--hardware", "gb200-nvl72", "--model", "deepseek-v3", "--set", "ep=48")
    assert r.returncode == 2 and "experts (256)" in r.stderr and "whole experts" in r.stderr


def test_a_dense_model_over_pipeline_stages_is_tensor_parallel_within_each(data):
    sc = _sc(data, "h100-sxm", "llama-3-70b", "pp=4", "chips=32")
    assert (sc.mag("tp"), sc.mag("dp_attention"), sc.mag("pp")) == (8, 1, 4)
    assert sc.mag("layout_chips", "chip") == 32


def test_eval_answers_the_lecture_name_under_the_deployed_layout(cli):
    # The check: `eval step_time ... --set tp=8` includes the all-reduces and shows them
    sets = ("tp=8", "batch=1", "context=2048", "weight_format=bf16", "kv_format=bf16")
    argv = ("eval", "step_time", "--hardware", "h100-sxm", "--model", "llama-3-70b",
            *[a for x in sets for a in ("--set", x)])
    d = json.loads(cli(*argv, "--json").stdout)
    allreduces = nvswitch_allreduces(80, 8, 1)
    reads = (70e9 * 2 + 2048 * LLAMA70_KV) / 8 / H100_W
    assert d["quantity"] == "step_time_layout" and d["asked"] == "step_time"
    assert d["value"] * 1e-3 == pytest.approx(reads + allreduces, rel=1e-9)
    terms = {b["name"]: b["display"] for b in d["breakdown"]}
    assert set(terms) >= {"tp_comm_time", "weight_fetch_time_layout", "compute_time_layout", "ep_comm_time"}
    assert terms["tp_comm_time"] == "551 µs"        # 80 · (2 · 3.19 µs + 7 · 32,768 B / 450 GB/s)
    text = cli(*argv).stdout
    assert "tp_comm_time 551 µs" in text and "tp 8 · dp_attention 1 · ep 1 · pp 1 = 8 chips" in text
    # and it names the algorithm and the network the all-reduces run on
    assert "collectives: tensor-parallel all-reduces over 8 chips: one-shot (1 step each), within one " \
           "scale-up domain" in text
    # the lecture's even spread: by name, and beside the answer
    even = json.loads(cli(*argv, "--json", "--layout", "even").stdout)
    assert even["quantity"] == "step_time" and even["value"] * 1e-3 == pytest.approx(reads, rel=1e-9)
    assert "asked" not in even and d["even_spread"]["quantity"] == "step_time"


def test_eval_kv_per_chip_of_deepseek_under_tp8_is_the_whole_latent_cache(cli):
    r = cli("eval", "kv_per_chip", "--hardware", "h200", "--model", "deepseek-v3", "--set", "tp=8",
            "--set", "batch=16", "--set", "context=4096", "--set", "kv_format=bf16", "--json")
    d = json.loads(r.stdout)
    whole = 16 * 4096 * 61 * (512 + 64) * 2         # bytes: one 576-number latent per layer per token
    assert d["quantity"] == "kv_per_chip_layout" and d["unit"] == "GB/chip"
    assert d["value"] * 1e9 == pytest.approx(whole, rel=1e-9)
    assert d["layout"] == {"tp": 8, "dp_attention": 1, "ep": 8, "pp": 1, "chips": 8}


def test_default_dense_layout_splits_by_whole_heads(data):
    # Llama 3 70B has 64 query heads: on a 72-GPU rack, 9 groups of tensor parallelism 8 (the
    # largest divisor of 64 that divides 72), not tp = 72 (which no head count allows)
    sc = _sc(data, "gb200-nvl72", "llama-3-70b")
    assert (sc.mag("tp"), sc.mag("dp_attention"), sc.mag("layout_chips")) == (8, 9, 72)
    sc = _sc(data, "h100-sxm", "llama-3-70b")
    assert (sc.mag("tp"), sc.mag("dp_attention")) == (8, 1)


def test_sweeping_a_layout_degree_chooses_the_layout_at_each_point(cli):
    r = cli("eval", "step_time", "--hardware", "h100-sxm", "--model", "llama-3-70b", "--sweep", "tp=1,2,4,8",
            "--set", "batch=1", "--set", "context=2048", "--set", "weight_format=bf16", "--json")
    pts = {p["tp"]: p for p in json.loads(r.stdout)["points"]}
    # tp = 1 is one chip holding all 140 GB of bf16 weights: it cannot fit
    assert pts[1]["feasible"] is False and pts[8]["feasible"] is True
    allreduces = nvswitch_allreduces(80, 8, 1)
    assert pts[8]["step_time"] == pytest.approx(((70e9 * 2 + 2048 * LLAMA70_KV) / 8 / H100_W + allreduces) * 1e3,
                                                rel=1e-9)


def test_a_prefill_under_tensor_parallelism_adds_its_all_reduces(data):
    # One 2,048-token prompt of Llama 3 70B over 8 H100s (tp 8), bf16: every prompt token through 1/8 of
    # the 70e9 weights at 2 FLOP each, plus the causal attention, half the 2048² (query, key) pairs at
    # 4 · 80 layers · 64 heads · 128 FLOP a pair (Kaplan et al. 2020, Table 1), on 989.5 TFLOP/s dense
    # bf16 each (H100 datasheet); then Megatron's two all-reduces a layer, now of 2,048 residual vectors.
    sc = _sc(data, "h100-sxm", "llama-3-70b", "tp=8", "batch=1", "pass_tokens=2048", "weight_format=bf16")
    attention = 0.5 * 2048 ** 2 * 4 * 80 * 64 * 128
    compute = (2 * 70e9 * 2048 + attention) / 8 / 989.5e12
    reads = 70e9 * 2 / 8 / H100_W
    # 2,048 tokens' residuals are a 64 MiB buffer a layer: two-shot (the ring's bytes in 2 steps) wins
    allreduces = nvswitch_allreduces(80, 8, 2048)
    assert allreduces == pytest.approx(80 * 2 * (2 * STEP + 7 / 8 * 2048 * 2 * 8192 * 2 / NVLINK), rel=1e-12)
    assert compute > reads   # a prompt this long is compute-bound
    assert sc.mag("prefill_tp_comm_time", "s") == pytest.approx(allreduces, rel=1e-9)
    assert sc.mag("time_to_first_token_layout", "s") == pytest.approx(compute + allreduces, rel=1e-9)
    # the even spread has the same compute and no all-reduces
    assert sc.mag("time_to_first_token", "s") == pytest.approx(compute, rel=1e-9)


def test_an_nvswitch_allreduce_of_a_small_message_is_one_step_not_a_ring(data):
    # Issue check: one token of Llama 3 70B (16 KiB a residual) all-reduced over 8 H100s: one-shot takes
    # a measured step (3.19 µs) and 7 buffers at 450 GB/s per all-reduce; a torus (TPU v6e, 2D torus per its
    # docs) runs the ring's 2·7 steps. The strict bound takes the fastest algorithm on any fabric.
    sets = ("tp=8", "batch=1", "context=2048", "weight_format=bf16")
    h100 = _sc(data, "h100-sxm", "llama-3-70b", *sets)
    one_allreduce = STEP + 7 * 8192 * 2 / NVLINK           # 3.44 µs
    assert h100.mag("tp_comm_time", "s") == pytest.approx(80 * 2 * one_allreduce, rel=1e-9)
    ring = 2 * 7 * (1e-6 + 8192 * 2 / (8 * NVLINK))         # 14.06 µs
    assert h100.mag("tp_allreduce_time_ring", "s") == pytest.approx(80 * 2 * ring, rel=1e-9)
    v6e = _sc(data, "tpu-v6e", "llama-3-70b", *sets)
    assert v6e.mag("direct_collectives") == 0
    assert v6e.mag("tp_comm_time", "s") == pytest.approx(v6e.mag("tp_allreduce_time_ring", "s"), rel=1e-12)
    assert v6e.mag("tp_comm_time_min", "s") < v6e.mag("tp_comm_time", "s") / 5
    # a chip that publishes no topology runs the ring, and says why
    v7 = _sc(data, "tpu-v7", "llama-3-70b", *sets)
    assert v7.mag("direct_collectives") == 0
    assert "ring all-reduce assumed" in v7.records["direct_collectives"].source


def test_a_two_node_expert_group_sends_its_offnode_share_over_the_network(data, cli):
    # DeepSeek-V3 expert-parallel over 16 H100s on two 8-GPU NVLink nodes (ep 16, dp_attention 16), batch
    # 256: each MoE layer sends every token's 8 activations (7168 bf16 numbers) out and back, spread over
    # 16 GPUs; uniform routing sends half of them to the other node, over one 400 Gb/s ConnectX-7 NIC per
    # GPU (50 GB/s), in parallel with the 7/16 for the other GPUs of its node over NVLink (450 GB/s; the
    # 1/16 for its own experts stays on it), one 1 µs step each way.
    sc = _sc(data, "h100-sxm", "deepseek-v3", "ep=16", "dp_attention=16", "batch=256", "context=4096")
    per_chip = 256 * 2 * 8 * 7168 * 2 / 16                  # bytes a GPU sends per MoE layer
    by_hand = 58 * (2 * 1e-6 + max(7 / 16 * per_chip / 450e9, 0.5 * per_chip / 50e9))
    assert sc.mag("ep_offdomain_share") == 0.5
    assert sc.mag("ep_comm_time", "s") == pytest.approx(by_hand, rel=1e-9)
    # charged at NVLink speed, as if one node held the group, it would be 3.8 times shorter
    assert sc.mag("ep_comm_time", "s") > 3.5 * 58 * (2 * 1e-6 + per_chip / 450e9)
    r = cli("eval", "ep_comm_time", "--hardware", "h100-sxm", "--model", "deepseek-v3", "--set", "ep=16",
            "--set", "dp_attention=16", "--set", "batch=256")
    assert "44% of its bytes over the scale-up link" in r.stdout and "50% over the scale-out network" in r.stdout
    assert "the 6% for the chip's own experts stays on it" in r.stdout, r.stdout


def test_a_group_that_spans_domains_needs_the_network_bandwidth(cli):
    # MI300X publishes no scale-out bandwidth (hardware.yaml): tp 16 spans two 8-GPU nodes, refused
    r = cli("eval", "step_time", "--hardware", "mi300x", "--model", "llama-3-70b", "--set", "tp=16")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "spans more than one scale-up domain" in r.stderr and "--set scaleout_bandwidth" in r.stderr
    ok = cli("eval", "step_time", "--hardware", "mi300x", "--model", "llama-3-70b", "--set", "tp=16",
             "--set", "scaleout_bandwidth=400 Gb/s", "--set", "batch=8", "--set", "context=2048")
    assert ok.returncode == 0 and "over the scale-out network at" in ok.stdout
