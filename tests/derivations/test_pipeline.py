"""Chapters 3 and 4: pipeline parallelism across racks, and memory, hops and scale-up under it.

Every expected number is worked out by hand in the comment above it, from the figures of
hardware.yaml and models.yaml (named there with the source each cites), never from the code
under test.
"""
import importlib.util
import json
import signal

import pytest
import sympy as sp

from chalkboard.evaluation.check import check_equation
from chalkboard.evaluation.evaluate import Scenario
from conftest import ROOT, run_cli
from derivations import REGISTRY as R

# DeepSeek-V3 (models.yaml, from the DeepSeek-V3 report and its inference config): 671e9 total
# and 37e9 active parameters, 61 layers of which 58 are MoE, d_model 7168, k = 8 of 256 routed
# experts, MLA with a 512-wide latent and a 64-wide RoPE key, fp8 weights, bf16 KV cache.
DSV3_TOTAL, DSV3_ACTIVE, DSV3_D, DSV3_K, DSV3_MOE = 671e9, 37e9, 7168, 8, 58
DSV3_KV_BYTES = 61 * (512 + 64) * 2          # = 70,272 byte/token (one latent + RoPE key per layer)
# GB200 NVL72 (hardware.yaml): 5 PFLOP/s dense fp8 and 8 TB/s HBM per GPU (NVIDIA's rack tables
# / 72), 186 GB HBM (Crusoe MLPerf node), NVLink 900 GB/s per direction, one 400 Gb/s NIC per GPU.
GB200_F, GB200_W, GB200_HBM, GB200_UP, GB200_OUT = 5e15, 8e12, 186e9, 900e9, 400e9 / 8
BF16_ACT = 2                                  # bytes_per_activation default: bf16 activations
CONTEXT = 8192                                # the lecture's default context (inputs.py)
# The balance batch on GB200 NVL72 in fp8: N_total·β_w·F/(2·N_active·W)
DSV3_GB200_BALANCE = DSV3_TOTAL * 1 * GB200_F / (2 * DSV3_ACTIVE * GB200_W)   # = 5,667.2 sequences


def _mag(sc, name, unit=""):
    return sc.value(name).to(unit).magnitude


@pytest.fixture(scope="module")
def dsv3_gb200(data):
    return Scenario(data, "gb200-nvl72", "deepseek-v3", {})


# -- chapter 3: what crosses a stage boundary ---------------------------------------------------

def test_stage_boundary_against_all_to_all_bytes(dsv3_gb200):
    # P-02: one residual vector crosses a boundary, d·β_a = 7168 · 2 = 14,336 bytes per token;
    # each MoE layer's all-to-all sends it to k = 8 experts and back, 2·8·7168·2 = 229,376.
    assert _mag(dsv3_gb200, "stage_boundary_bytes_per_token", "byte/token") == pytest.approx(14_336)
    assert _mag(dsv3_gb200, "a2a_bytes_per_token", "byte/token") == pytest.approx(229_376)
    assert _mag(dsv3_gb200, "a2a_to_boundary_bytes") == pytest.approx(2 * DSV3_K)


@pytest.mark.parametrize("hw, up, out, layers", [
    # W_up / (2·k·W_out) for DeepSeek-V3 (k = 8):
    ("gb200-nvl72", 900e9, 50e9, 18 / 16),    # NVLink 5, 900 GB/s; 400 Gb/s ConnectX-7: 1.125 layers
    ("h100-sxm", 450e9, 50e9, 9 / 16),        # NVLink 4, 450 GB/s (scaling-book); 400 Gb/s NIC: 0.5625
    ("gb300-nvl72", 900e9, 100e9, 9 / 16),    # 800 Gb/s ConnectX-8 (HGX B300 RA): 0.5625
    ("tpu-v5e", 200e9, 25e9 / 8, 4.0),        # ICI 200 GB/s, DCN 25 Gb/s per chip (Google docs): 64/16
])
def test_pipelining_condition_solved_for_layers_per_stage(data, hw, up, out, layers):
    sc = Scenario(data, hw, "deepseek-v3", {})
    assert up / (2 * DSV3_K * out) == pytest.approx(layers)   # the hand arithmetic itself
    assert _mag(sc, "min_moe_layers_per_stage") == pytest.approx(layers)
    # at exactly that depth (a fraction: the solved edge, not a depth one can set) the condition is
    # met with equality
    at_edge = sc.sweep(["pipelining_ratio"], "moe_layers_per_stage", [layers])["pipelining_ratio"]
    assert float(at_edge[0]) == pytest.approx(1.0)


def test_pipelining_ratio_at_four_stages(dsv3_gb200):
    # 58 MoE layers over 4 stages: the deepest holds ceil(58/4) = 15; 2·8·15·50/900 = 13.33.
    # The most stages with every boundary hidden: 58 / 1.125 = 51.56.
    assert _mag(dsv3_gb200, "moe_layers_per_stage") == 15
    assert _mag(dsv3_gb200, "pipelining_ratio") == pytest.approx(2 * 8 * 15 * 50 / 900)
    assert _mag(dsv3_gb200, "max_pipeline_stages") == pytest.approx(58 / 1.125)


def test_solved_depth_is_the_lecture_board_form():
    # SymPy's root of pipelining_ratio = 1 is W_up/(2·k·W_out) once the named constants are numbers
    # (c_a2a = 2 vectors per token and expert, c_res = 1 vector per token at a boundary).
    k, w_up, w_out = (R[n].sym for n in ("experts_per_token", "scaleup_bandwidth", "scaleout_bandwidth"))
    assert sp.simplify(R.board_form("min_moe_layers_per_stage") - w_up / (2 * k * w_out)) == 0
    assert check_equation(R, R.equations["min_layers_is_bandwidth_ratio_over_2k"]) is True


# -- chapter 3: idle time and the bubble ------------------------------------------------------

def test_idle_and_bubble_fractions(data):
    # P-09: 4 stages, one batch: each idles 3/4. With one micro-batch per stage (the default,
    # M-04) nothing idles; with 2 of 4 half the time. P-10: GPipe-style bubble
    # (P−1)/(m+P−1) = 3/7 at m = 4 and 3/19 at m = 16.
    sc = Scenario(data, "gb200-nvl72", "deepseek-v3", {"pipeline_stages": "4"})
    assert _mag(sc, "pipeline_idle_one_batch") == pytest.approx(0.75)
    assert _mag(sc, "micro_batches") == 4
    assert _mag(sc, "pipeline_idle_fraction") == 0
    assert _mag(sc, "training_bubble_fraction") == pytest.approx(3 / 7)
    two = Scenario(data, "gb200-nvl72", "deepseek-v3", {"pipeline_stages": "4", "micro_batches": "2"})
    assert _mag(two, "pipeline_idle_fraction") == pytest.approx(0.5)
    many = Scenario(data, "gb200-nvl72", "deepseek-v3", {"pipeline_stages": "4", "micro_batches": "16"})
    assert _mag(many, "training_bubble_fraction") == pytest.approx(3 / 19)


def test_weights_per_stage_and_rack(data):
    # P-12, P-13: DeepSeek-V3 in fp8 is 671 GB; over 4 racks 167.75 GB each, 2.33 GB per GPU of 72.
    # The rack has 72 · 186 GB = 13.39 TB of HBM, so the weights fill 671/13,392 = 5.0% of it.
    sc = Scenario(data, "gb200-nvl72", "deepseek-v3", {"pipeline_stages": "4"})
    assert _mag(sc, "weight_bytes", "GB") == pytest.approx(671)
    assert _mag(sc, "weights_per_stage", "GB") == pytest.approx(167.75)
    assert _mag(sc, "weights_per_chip_pipelined", "GB/chip") == pytest.approx(671 / 288)
    assert _mag(sc, "rack_hbm", "TB") == pytest.approx(72 * 0.186)
    assert _mag(sc, "weights_to_stage_hbm") == pytest.approx(671 / (72 * 186))


# -- chapter 4: memory per chip under pipelining ------------------------------------------------

def test_pipelined_memory_per_chip_by_hand(dsv3_gb200):
    # M-04/M-05 on GB200 NVL72, 4 stages of 72 GPUs, micro-batch = balance batch 5,667.2:
    #   weights per chip = 671e9 / (72 · 4)            = 2.330 GB
    #   KV per chip      = 5,667.2 · 8192 · 70,272 / 72 = 45.31 GB (one micro-batch over one stage)
    kv = DSV3_GB200_BALANCE * CONTEXT * DSV3_KV_BYTES / 72
    assert DSV3_GB200_BALANCE == pytest.approx(5667.2, rel=1e-4)
    assert _mag(dsv3_gb200, "balance_batch", "sequence") == pytest.approx(DSV3_GB200_BALANCE)
    assert _mag(dsv3_gb200, "pipeline_batch", "sequence") == pytest.approx(4 * DSV3_GB200_BALANCE)
    assert _mag(dsv3_gb200, "kv_per_chip_pipelined", "byte/chip") == pytest.approx(kv)
    assert kv == pytest.approx(45.31e9, rel=1e-3)
    assert _mag(dsv3_gb200, "memory_per_chip_pipelined", "byte/chip") == pytest.approx(671e9 / 288 + kv)
    assert _mag(dsv3_gb200, "hbm_fill_pipelined") == pytest.approx((671e9 / 288 + kv) / GB200_HBM)


@pytest.mark.parametrize("stages", ["1", "2", "8"])
def test_kv_term_is_the_same_at_every_depth(data, stages):
    # M-05, M-07: only the weight term moves with P.
    sc = Scenario(data, "gb200-nvl72", "deepseek-v3", {"pipeline_stages": stages})
    kv = DSV3_GB200_BALANCE * CONTEXT * DSV3_KV_BYTES / 72
    assert _mag(sc, "kv_per_chip_pipelined", "byte/chip") == pytest.approx(kv)
    assert _mag(sc, "weights_per_chip_pipelined", "byte/chip") == pytest.approx(671e9 / (72 * int(stages)))


def test_kv_term_independent_of_depth_symbolically():
    # The identity SymPy verifies: d(KV term)/dP = 0, and the weight term is ∝ 1/P.
    P = R["pipeline_stages"].sym
    kv = R.expand(R["kv_per_chip_pipelined"].sym)
    w = R.expand(R["weights_per_chip_pipelined"].sym)
    assert P in R.expand(R["pipeline_batch"].sym).free_symbols   # P micro-batches are in flight ...
    assert sp.diff(kv, P) == 0                                     # ... and P still cancels
    assert sp.simplify(P * sp.diff(w, P) + w) == 0
    for name in ("pipelined_kv_is_one_micro_batch", "pipelined_memory_is_system_over_chips"):
        assert check_equation(R, R.equations[name]) is True


def test_depth_at_which_kv_dominates(dsv3_gb200, data):
    # M-06: weights/(S·P) = B_*·L·b_kv/S at P = 671e9 / (5,667.2 · 8192 · 70,272) = 0.2057: the KV
    # term is the larger even unpipelined. At a 1,024-token context it is 8 times that, 1.645.
    p_kv = DSV3_TOTAL / (DSV3_GB200_BALANCE * CONTEXT * DSV3_KV_BYTES)
    assert p_kv == pytest.approx(0.2057, rel=1e-3)
    assert _mag(dsv3_gb200, "kv_dominance_depth") == pytest.approx(p_kv)
    short = Scenario(data, "gb200-nvl72", "deepseek-v3", {"context": "1024"})
    assert _mag(short, "kv_dominance_depth") == pytest.approx(8 * p_kv)
    # and at that depth the two terms are equal
    at = Scenario(data, "gb200-nvl72", "deepseek-v3", {"pipeline_stages": "1"})
    w1 = _mag(at, "weights_per_chip_pipelined", "byte/chip")
    assert w1 / p_kv == pytest.approx(_mag(at, "kv_per_chip_pipelined", "byte/chip"))


# -- chapter 4: hops and the weight read --------------------------------------------------------

def test_hop_latency_per_token(data):
    # H-01: t_token = t_step + P·t_hop; the lecture's own numbers, a 20 ms step and 4 hops of
    # 2.5 ms ("a few ms", ~10 ms over ~4 stages), give 30 ms.
    sc = Scenario(data, "gb200-nvl72", "deepseek-v3", {"pipeline_stages": "4"})
    sc.fix("micro_batch_step_time", "20 ms")
    assert _mag(sc, "pipeline_token_latency", "ms") == pytest.approx(30)
    longer = Scenario(data, "gb200-nvl72", "deepseek-v3", {"pipeline_stages": "8", "hop_latency": "5 ms"})
    longer.fix("micro_batch_step_time", "20 ms")
    assert _mag(longer, "pipeline_token_latency", "ms") == pytest.approx(60)


def test_hop_transfer_time_by_hand(dsv3_gb200):
    # One micro-batch's residual vectors over the stage's 72 NICs of 50 GB/s:
    # 5,667.2 · 7168 · 2 / (72 · 50e9) = 22.57 µs.
    t = DSV3_GB200_BALANCE * DSV3_D * BF16_ACT / (72 * GB200_OUT)
    assert t == pytest.approx(22.57e-6, rel=1e-3)
    assert _mag(dsv3_gb200, "hop_transfer_time", "s") == pytest.approx(t)


def test_micro_batch_step_is_the_step_at_the_balance_batch(data, dsv3_gb200):
    # The roofline step of one micro-batch of the balance batch (5,667.2 sequences of 8,192 tokens),
    # worked by hand: memory-bound at 8k context, so the KV read plus the weights read. At that
    # batch uniform routing touches every expert, so every weight of the config's split is read
    # (16,565,350,912 always-read + 653,908,770,816 routed, fp8: 1 byte each; test_serving.py).
    kv = DSV3_GB200_BALANCE * 8192 * DSV3_KV_BYTES / (72 * GB200_W)          # 5.664 ms
    weights = (16_565_350_912 + 653_908_770_816) / (72 * GB200_W)              # 1.164 ms
    assert _mag(dsv3_gb200, "micro_batch_step_time", "s") == pytest.approx(kv + weights, rel=1e-6)
    # and it is the step time of a scenario held at that batch
    at_balance = Scenario(data, "gb200-nvl72", "deepseek-v3", {})
    at_balance.fix("batch", f"{DSV3_GB200_BALANCE!r} sequence")
    assert _mag(at_balance, "step_time", "s") == pytest.approx(kv + weights, rel=1e-6)


def test_large_sparse_model_on_an_8_gpu_h100_box(data):
    # H-06: Kimi K2 (1.04e12 parameters, fp8; Kimi K2 report) on one HGX H100 box of 8 GPUs with
    # 3.35 TB/s and 80 GB each (H100 datasheet): reading every weight takes
    # 1.04e12 / (8 · 3.35e12) = 38.8 ms, and the weights need 1.04e12 / (8 · 80e9) = 1.625 boxes.
    sc = Scenario(data, "h100-sxm", "kimi-k2", {})
    assert _mag(sc, "chips", "chip") == 8
    assert _mag(sc, "weight_fetch_time_all", "ms") == pytest.approx(1.04e12 / (8 * 3.35e12) * 1e3)
    assert _mag(sc, "weights_to_stage_hbm") == pytest.approx(1.625)
    assert sc.flag("weight_fetch_time_all") is not None   # the box cannot hold the model at all


# -- the command line ---------------------------------------------------------------------------

CHAPTER_QUANTITIES = [q for s in ("pipeline_boundary", "pipeline_schedule", "pipeline_weights",
                                  "pipeline_memory", "pipeline_latency")
                      for q in R.sections[s].quantities]


def _main():
    spec = importlib.util.spec_from_file_location("chalkboard_cli", ROOT / "build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.main


def test_eval_answers_every_chapter_quantity(capsys):
    # Each quantity of chapters 3 and 4 through the CLI's own entry point, as `eval --json`.
    assert {R.sections[s].chapter for s in ("pipeline_boundary", "pipeline_memory")} == {"pipeline", "memory"}
    assert len(CHAPTER_QUANTITIES) >= 25
    main, old = _main(), signal.getsignal(signal.SIGTERM)
    try:
        for name in CHAPTER_QUANTITIES:
            rc = main(["eval", name, "--hardware", "gb200-nvl72", "--model", "deepseek-v3", "--json"])
            out = capsys.readouterr().out
            assert rc == 0, name
            doc = json.loads(out)
            assert doc["quantity"] == name and doc["value"] is not None, name
    finally:
        signal.signal(signal.SIGTERM, old)


def test_eval_subprocess_and_set():
    r = run_cli("eval", "min_moe_layers_per_stage", "--hardware", "h100-sxm", "--model", "deepseek-v3", "--explain")
    assert r.returncode == 0, r.stderr
    assert "0.562" in r.stdout and "W_up/(2·k·W_out)" in r.stdout
    r = run_cli("eval", "pipeline_idle_fraction", "--hardware", "gb200-nvl72", "--model", "deepseek-v3",
                "--set", "pipeline_stages=4", "--set", "micro_batches=1", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)   # a share, in percent as every output gives one
    assert d["unit"] == "%" and d["value"] == pytest.approx(75)


def test_fractional_stage_count_is_refused():
    r = run_cli("eval", "weights_per_stage", "--hardware", "gb200-nvl72", "--model", "deepseek-v3",
                "--set", "pipeline_stages=2.5")
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "pipeline_stages" in r.stderr and "Traceback" not in r.stderr


def test_memory_figure_is_registered_and_drawn(data):
    from chalkboard.report.figures import FIGURES
    from chalkboard.report.figures_pipeline import memory_vs_stages
    title, fn, section = FIGURES["memory_vs_stages"]
    assert fn is memory_vs_stages and section == "pipeline_memory" and section in R.sections
    svg = memory_vs_stages(data, "gb200-nvl72", "deepseek-v3")
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg


def test_pipelined_set_up_is_judged_by_the_pipelined_fit(data, dsv3_gb200):
    # Kimi K2 on 4 stages of one 8-GPU H100 box each, fp8 (H100: 1,979 TFLOP/s dense fp8,
    # 3.35 TB/s, 80 GB). Balance batch 1.04e12 · 1979e12 / (2 · 32e9 · 3.35e12) = 9,599.6 sequences;
    # its KV cache (MLA, 61 · 576 · 2 = 70,272 byte/token) at 8,192 tokens over 8 GPUs is
    # 9,599.6 · 8192 · 70,272 / 8 = 690.8 GB per GPU, beside 1.04e12 / 32 = 32.5 GB of weights:
    # no depth makes that fit. DeepSeek-V3 on GB200 NVL72 fills (2.33 + 45.31) / 186 = 26%.
    b_star = 1.04e12 * 1979e12 / (2 * 32e9 * 3.35e12)
    kv = b_star * 8192 * 70272 / 8
    sc = Scenario(data, "h100-sxm", "kimi-k2", {})
    assert _mag(sc, "balance_batch", "sequence") == pytest.approx(b_star)
    assert kv == pytest.approx(690.8e9, rel=1e-3)
    assert _mag(sc, "kv_per_chip_pipelined", "byte/chip") == pytest.approx(kv)
    assert _mag(sc, "hbm_fill_pipelined") == pytest.approx((32.5e9 + kv) / 80e9)
    why = sc.flag("pipeline_token_latency")
    assert why is not None and "does not fit" in why and "4 pipeline stages" in why
    assert sc.flag("pipeline_idle_fraction") is None          # schedule arithmetic, not a set-up
    assert dsv3_gb200.flag("pipeline_token_latency") is None
    assert dsv3_gb200.value("hbm_fill_pipelined").magnitude == pytest.approx((671e9 / 288 + 45.31e9) / 186e9,
                                                                            rel=1e-3)
