"""The figures of chapters 3, 4 and 5: registered in their sections, drawn for the featured chip and
model, left out cleanly where they do not apply, and plotting the numbers ``Scenario`` gives.

Each figure draws from a ``*_data`` function; the tests read those arrays. Expected numbers are
worked out by hand in the comment above them from hardware.yaml and models.yaml (the sources
named there), never from the code under test; where a test also compares a point with
``Scenario``, that checks the figure plots the declared quantity, not the number itself.
"""
import math
import warnings

import numpy as np
import pytest

from chalkboard.errors import MissingInput, NotApplicable

from chalkboard.evaluation.evaluate import Scenario
from chalkboard.report.figures import FIGURES, draw_all
from chalkboard.report import figures_chapters as fc
from derivations import REGISTRY as R

HW, MODEL, DENSE = "gb200-nvl72", "deepseek-v3", "llama-3-70b"
NAMES = {"pipelining_by_chip", "token_latency_vs_stages", "lifecycle_compute_vs_tokens"}
# GB200 NVL72 (hardware.yaml, NVIDIA's rack tables / 72 and the Crusoe MLPerf node): NVLink
# 900 GB/s per direction, one 400 Gb/s NIC (50 GB/s) per GPU, 72 GPUs per NVLink domain.
GB200_UP, GB200_OUT, GB200_S = 900e9, 400e9 / 8, 72
# DeepSeek-V3 (models.yaml, DeepSeek-V3 report and inference config): k = 8 routed experts per
# token, 58 MoE layers, d_model 7168, 37e9 active parameters.
DSV3_K, DSV3_MOE, DSV3_D, DSV3_ACTIVE = 8, 58, 7168, 37e9


def _mag(sc, name, unit):
    return sc.value(name).to(unit).magnitude


def test_registered_in_the_chapters_sections():
    want = {"pipelining_by_chip": ("pipeline_boundary", "pipeline", fc.pipelining_by_chip),
            "token_latency_vs_stages": ("pipeline_latency", "memory", fc.token_latency_vs_stages),
            "lifecycle_compute_vs_tokens": ("training_compute", "training", fc.lifecycle_compute_vs_tokens)}
    for name, (section, chapter, fn) in want.items():
        title, drawn_by, sec = FIGURES[name]
        assert drawn_by is fn and sec == section and R.sections[sec].chapter == chapter
        assert title and not title.endswith(".")


def test_each_figure_draws_for_the_featured_pair_without_warnings(data):
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # as the per-chip reports draw them
        out = draw_all(data, HW, MODEL, None, None, NAMES)
    assert set(out) == NAMES
    for svg, chip in out.values():
        assert chip == HW and svg.lstrip().startswith("<?xml") and "<svg" in svg


def test_dense_model_leaves_the_pipelining_figure_out_and_draws_the_others(data):
    with pytest.raises(NotApplicable):
        fc.pipelining_by_chip_data(data, HW, DENSE)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = draw_all(data, "h100-sxm", DENSE, None, None, NAMES)
    assert set(out) == {"token_latency_vs_stages", "lifecycle_compute_vs_tokens"}


def test_pipelining_by_chip_data(data):
    d = fc.pipelining_by_chip_data(data, HW, MODEL)
    assert len(d["ids"]) == len(data.hardware) and d["years"] == sorted(d["years"])
    i = d["ids"].index(HW)
    # the pipelining condition 2·k·L_stage·W_out/W_up ≥ 1 solved for L_stage: 900/50/(2·8) = 1.125
    # MoE layers; 58 MoE layers allow 58/1.125 = 51.6 stages
    assert d["need"][i] == pytest.approx(GB200_UP / GB200_OUT / (2 * DSV3_K))
    assert d["max_stages"][i] == pytest.approx(DSV3_MOE / 1.125)
    # at the lecture's 4 stages the deepest stage holds ceil(58/4) = 15 MoE layers
    assert d["held"] == math.ceil(DSV3_MOE / 4) and d["stages"] == 4
    # every plotted point is Scenario's value for that chip
    for hid, need in zip(d["ids"], d["need"]):
        try:
            v = _mag(Scenario(data, hid, MODEL, {}), "min_moe_layers_per_stage", "")
        except MissingInput:
            assert np.isnan(need) and d["why"][d["ids"].index(hid)]
            continue
        assert need == pytest.approx(v)
    # the A100 (hardware.yaml) publishes no scale-out bandwidth: no bar, with the reason
    j = d["ids"].index("a100-80gb")
    assert np.isnan(d["need"][j]) and "scaleout_bandwidth" in d["why"][j]


def test_pipelining_by_chip_keeps_each_chips_own_numbers(data):
    # a workload override (2 stages: ceil(58/2) = 29 layers per stage) applies to every chip; a
    # hardware override (the featured chip's NIC) only to the featured chip
    d = fc.pipelining_by_chip_data(data, HW, MODEL, {"pipeline_stages": "2", "scaleout_bandwidth": "800 Gb/s"})
    assert d["held"] == 29
    assert d["need"][d["ids"].index(HW)] == pytest.approx(900e9 / 100e9 / (2 * DSV3_K))
    assert d["need"][d["ids"].index("b200")] == pytest.approx(GB200_UP / GB200_OUT / (2 * DSV3_K))


def test_token_latency_data(data):
    d = fc.token_latency_data(data, HW, MODEL)
    assert list(d["stages"]) == list(range(1, 17))
    # each stage adds one hop: the lecture's "a few ms", 2.5 ms by default (chapters-3-7.md#H-01)
    assert np.diff(d["latency_hop"]) == pytest.approx(np.full(15, 2.5))
    # ... or only one micro-batch's residual vectors over the stage's NICs: the balance batch
    # N_total·β_w·F/(2·N_active·W) = 671e9·1·5e15/(2·37e9·8e12) sequences of one token, each
    # d·β_a = 7168·2 bytes, over 72 NICs of 50 GB/s: 22.57 µs per hop
    b_star = 671e9 * 5e15 / (2 * DSV3_ACTIVE * 8e12)
    xfer_ms = b_star * DSV3_D * 2 / (GB200_S * GB200_OUT) * 1e3
    assert xfer_ms == pytest.approx(0.02257, rel=1e-3)
    assert np.diff(d["latency_transfer"]) == pytest.approx(np.full(15, xfer_ms))
    # both lines start from the micro-batch's step through every layer
    # the micro-batch's step by hand (test_pipeline.py): KV of b_star sequences of 8,192 tokens at
    # 70,272 B/token plus every weight of the config's split at fp8, over 72 chips at 8 TB/s
    step = (b_star * 8192 * 70_272 + 16_565_350_912 + 653_908_770_816) / (72 * 8e12) * 1e3
    assert d["latency_hop"][0] == pytest.approx(step + 2.5, rel=1e-6)
    assert d["latency_transfer"][0] == pytest.approx(step + xfer_ms)
    # one point: Scenario's pipeline_token_latency at 7 stages
    at7 = Scenario(data, HW, MODEL, {"pipeline_stages": "7"})
    assert d["latency_hop"][6] == pytest.approx(_mag(at7, "pipeline_token_latency", "ms"))
    assert d["hop_is_lecture"] and d["depth"] == 4


def test_token_latency_without_a_published_nic(data):
    # the A100 80 GB (hardware.yaml) publishes no scale-out bandwidth: the hop line is drawn (the
    # lecture's 2.5 ms per stage), the transfer-only line is left out with the reason
    d = fc.token_latency_data(data, "a100-80gb", MODEL)
    assert d["latency_transfer"] is None and "scaleout_bandwidth" in d["transfer_missing"]
    assert np.diff(d["latency_hop"]) == pytest.approx(np.full(15, 2.5))
    assert fc.token_latency_vs_stages(data, "a100-80gb", MODEL).lstrip().startswith("<?xml")


def test_lifecycle_data(data):
    d = fc.lifecycle_data(data, HW, MODEL)
    x = d["served"]
    assert x[0] == pytest.approx(1e12) and x[-1] == pytest.approx(1e15)
    # pre-training 6·37e9·200e12 = 4.44e25 FLOP at every point (it does not depend on D_inf)
    assert d["pretrain_compute"] == pytest.approx(np.full(len(x), 4.44e25))
    # inference at 1e15 tokens served: 2·37e9·1e15/0.3 = 2.467e26 FLOP (chapters-3-7.md#T-04)
    assert d["inference_compute"][-1] == pytest.approx(2 * DSV3_ACTIVE * 1e15 / 0.3)
    # equal cost: D_inf = 3·η_inf·D_pre = 3·0.3·200e12 = 180e12 tokens (chapters-3-7.md#T-06)
    assert d["equal_cost"] == pytest.approx(180e12)
    # the lecture's ~200 T tokens served (chapters-3-7.md#T-09)
    assert d["tokens"] == pytest.approx(200e12) and d["tokens_is_lecture"]
    # one point of every line: Scenario's value with inference_tokens set there
    i = 40
    sc = Scenario(data, HW, MODEL, {"inference_tokens": f"{float(x[i])!r} token"})
    for name in ("pretrain_compute", "rl_compute", "inference_compute", "lifecycle_compute"):
        assert d[name][i] == pytest.approx(_mag(sc, name, "FLOP"))
    assert d["lifecycle_compute"] == pytest.approx(d["pretrain_compute"] + d["rl_compute"] + d["inference_compute"])


def test_lifecycle_marks_a_featured_not_the_lectures_tokens(data):
    d = fc.lifecycle_data(data, HW, MODEL, {"inference_tokens": "5e13 token"})
    assert d["tokens"] == pytest.approx(5e13) and not d["tokens_is_lecture"]
    assert d["lifecycle_at_tokens"] == pytest.approx(4.44e25 + 2 * DSV3_ACTIVE * 5e13 / 0.3
                                                     + 4 * DSV3_ACTIVE * 133e12 / 0.3)
