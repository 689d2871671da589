"""The expert all-to-all under the layout (derivations/layout.py, ep_comm_time): worked by hand.

With uniform routing each of a token's k experts sits on any of the ep chips of the group alike, so
1/ep of a chip's dispatch and combine goes to its own experts and crosses no link (an all-to-all
copies a rank's own split in place; Megatron-Core's all_to_all returns its input untouched on an
expert group of one, megatron/core/tensor_parallel/mappings.py). At ep = 1 (every expert on the chip
that holds the token) nothing is sent and no hop is waited for: the time is 0.

Figures used (each also in hardware.yaml / models.yaml with its source):
* DeepSeek-V3 (technical report, sec. 4.2): 58 MoE layers, 8 routed experts per token, d_model 7168.
* H100 SXM / H200: NVLink 4 at 450 GB/s per direction (900 GB/s is the bidirectional total), 8 GPUs
  per NVLink domain; the default hop latency is 1 µs (scaling-book).
* Dispatch and combine: each token sends 2 activation vectors per expert (one out, one back), bf16
  (2 bytes a number) by default: 2 · 8 · 7168 · 2 = 229,376 bytes per token per MoE layer.
"""
import json

import pytest

NVLINK, HOP = 450e9, 1e-6
A2A_TOKEN = 2 * 8 * 7168 * 2          # bytes a DeepSeek-V3 token dispatches and combines per MoE layer
MOE_LAYERS = 58


def _sc(data, hardware, model, **sets):
    from chalkboard.evaluation.evaluate import Scenario
    return Scenario(data, hardware, model, {k: str(v) for k, v in sets.items()})


def _by_definition(sc, name):
    """``name`` from its SymPy definition, every input read (no short cut for ep = 1)."""
    from chalkboard.evaluation import compiled
    fn, args = compiled.scalar(name)
    return float(fn(*[sc._mag(a) for a in args]))


def test_at_ep_1_no_expert_traffic_leaves_the_chip(data, cli):
    # DeepSeek-V3 with every expert on each chip (ep = 1): no dispatch, no combine, no hop. The hop
    # latency set to a millisecond would add 58 · 2 ms = 116 ms if any were charged.
    sc = _sc(data, "h200", "deepseek-v3", ep=1, dp_attention=8, batch=64, ring_hop_latency="1 ms")
    assert sc.mag("ep") == 1
    assert sc.mag("ep_comm_time", "s") == 0.0
    assert _by_definition(sc, "ep_comm_time") == 0.0          # the derivation itself, not only the short cut
    assert _by_definition(sc, "prefill_ep_comm_time") == 0.0
    r = cli("eval", "ep_comm_time", "--model", "deepseek-v3", "--set", "ep=1", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["value"] == 0.0
    # the short cut reads ep alone: no link bandwidth is needed to say that nothing crosses one
    assert sc.reads("ep_comm_time") == {"ep"}


def test_a_sweep_over_ep_starts_at_zero_and_halves_the_home_share_at_2(data, cli):
    # DeepSeek-V3 on H200, 8 attention groups, batch 64, swept over ep (the array path, as plan runs it).
    # At ep = 2 each GPU holds 64 · 229,376 / 2 = 7,340,032 bytes of a layer's traffic, half of it for its
    # own experts: 3,670,016 bytes over NVLink at 450 GB/s = 8.156 µs, and 2 hops of 1 µs; 58 layers.
    r = cli("eval", "ep_comm_time", "--hardware", "h200", "--model", "deepseek-v3", "--sweep", "ep=1,2",
            "--set", "dp_attention=8", "--set", "batch=64", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["units"]["ep_comm_time"] == "µs"
    at = {p["ep"]: p["ep_comm_time"] for p in d["points"]}
    assert at[1] == 0.0
    assert 64 * A2A_TOKEN / 2 / 2 == 3_670_016
    assert at[2] == pytest.approx(MOE_LAYERS * (2 * HOP + 3_670_016 / NVLINK) * 1e6, rel=1e-9)   # 589.02 µs
    assert at[2] == pytest.approx(589.0243, rel=1e-6)


def test_ep_8_in_one_nvlink_node_sends_seven_eighths_by_hand(data):
    # DeepSeek-V3 expert-parallel over the 8 H200s of one node (ep 8, dp_attention 8), batch 64: a GPU holds
    # 64 · 229,376 / 8 = 1,835,008 bytes of each layer's traffic; 7/8 of it (1,605,632 bytes) goes to the
    # 7 other GPUs at 450 GB/s (3.568 µs), with one 1 µs hop each way: 58 · 5.568 µs = 322.95 µs.
    sc = _sc(data, "h200", "deepseek-v3", ep=8, dp_attention=8, batch=64, context=4096)
    assert sc.mag("ep_offdomain_share") == 0
    assert 64 * A2A_TOKEN / 8 == 1_835_008 and 1_835_008 * 7 / 8 == 1_605_632
    by_hand = MOE_LAYERS * (2 * HOP + 1_605_632 / NVLINK)
    assert by_hand == pytest.approx(322.95e-6, rel=1e-4)
    assert sc.mag("ep_comm_time", "s") == pytest.approx(by_hand, rel=1e-9)
    # charging the whole 1,835,008 bytes to the link (the 1/8 for a GPU's own experts too) would be 9% more
    assert sc.mag("ep_comm_time", "s") < MOE_LAYERS * (2 * HOP + 1_835_008 / NVLINK) / 1.08


def test_across_two_nodes_the_scaleup_link_carries_the_rest_but_the_home_share(data):
    # DeepSeek-V3 over 16 H100s on two NVLink nodes (ep 16, dp_attention 16), batch 256, with a scale-out
    # network set as fast as 900 GB/s per GPU so that NVLink is the slower of the two: of a GPU's
    # 256 · 229,376 / 16 = 3,670,016 bytes a layer, 8/16 go to the other node (1,835,008 bytes at 900 GB/s,
    # 2.039 µs), 7/16 to the 7 other GPUs of its own node (1,605,632 bytes at 450 GB/s, 3.568 µs), and
    # 1/16 to its own experts; the two networks run in parallel: 58 · (2 µs + 3.568 µs) = 322.95 µs.
    sc = _sc(data, "h100-sxm", "deepseek-v3", ep=16, dp_attention=16, batch=256, context=4096,
             scaleout_bandwidth="900 GB/s")
    assert sc.mag("ep_offdomain_share") == 0.5
    assert 256 * A2A_TOKEN / 16 == 3_670_016
    by_hand = MOE_LAYERS * (2 * HOP + max(1_605_632 / NVLINK, 1_835_008 / 900e9))
    assert sc.mag("ep_comm_time", "s") == pytest.approx(by_hand, rel=1e-9)
    assert by_hand == pytest.approx(322.95e-6, rel=1e-4)


def test_a_one_chip_moe_step_has_no_communication(data):
    # Mixtral 8x22B on one B200 (fp8): the layout is tp 1, ep 1 (chips = 1), so a decode step is its
    # compute and its reads overlapped, and nothing else: no all-reduce, no all-to-all.
    sc = _sc(data, "b200", "mixtral-8x22b", chips=1, batch=32, context=4096, weight_format="fp8")
    assert (sc.mag("tp"), sc.mag("ep"), sc.mag("pp")) == (1, 1, 1)
    assert sc.mag("ep_comm_time") == 0 and sc.mag("comm_time_layout") == 0
    reads = sc.mag("weight_fetch_time_layout", "s") + sc.mag("kv_fetch_time_layout", "s")
    assert sc.mag("step_time_layout", "s") == pytest.approx(max(sc.mag("compute_time_layout", "s"), reads),
                                                           rel=1e-12)


def test_plan_charges_no_all_to_all_to_its_one_chip_moe_candidates(data):
    # plan's candidates for an MoE include one chip (ep = 1); evaluated together, as plan evaluates them,
    # that candidate's expert all-to-all is 0 and every larger group's is not.
    import numpy as np

    from chalkboard.planner.search import layouts
    sc = _sc(data, "b200", "mixtral-8x22b", weight_format="fp8", context=4096)
    lays = layouts(sc)
    assert {"tp": 1, "dp_attention": 1, "ep": 1, "pp": 1, "chips": 1} in lays
    grid = {k: np.array([float(x[k]) for x in lays]) for k in lays[0]}
    grid["batch"] = np.full(len(lays), 32.0)
    got = sc.sweep_many(["ep_comm_time"], {k: (v, None) for k, v in grid.items()})["ep_comm_time"]
    for lay, t in zip(lays, got):
        assert (t == 0) == (lay["ep"] == 1), (lay, t)
