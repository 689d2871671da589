"""What the link sets (derivations/textbook.py, section collectives): its arithmetic intensity, the
per-chip batch it sets, the largest tensor-parallel degree, the latency-bound message and a send over
k hops, each against the scaling-book's worked numbers, worked again by hand here from its stated
inputs.

SB  "How to Scale Your Model" (Austin et al., jax-ml.github.io/scaling-book): roofline = Part 1
    "All About Rooflines"; tpus = Part 2 "How to Think About TPUs"; sharding = Part 3 "Sharded
    Matrices and How to Multiply Them"; training = Part 5 "How to Parallelize a Transformer for
    Training"; gpus = Part 12 "How to Think About GPUs".

Where a test is about the formula, the book's own figures are set; where it is about the project's
data, hardware.yaml's figures are read and the arithmetic is done here (H100 SXM: 989.5 TFLOP/s dense
bf16, 450 GB/s NVLink per direction).
"""
import pytest

from chalkboard.evaluation.evaluate import Scenario

H100_FLOPS, H100_LINK = 989.5e12, 450e9
# SB tpus / roofline: TPU v5e 1.97e14 bf16 FLOP/s, 4.5e10 B/s of ICI per link and direction;
# SB training: TPU v5p 4.59e14 FLOP/s, "W = 2 * 9e10" (a bidirectional ring of 9e10 links)
V5E_LINK = {"link_bandwidth": "4.5e10 B/s"}
V5P_RING = {"peak_flops": "4.59e14 FLOP/s", "link_bandwidth": "9e10 B/s", "ring_directions": "2"}
LONG_RING = {"ring_chips": "8960"}   # a whole v5p pod: (n−1)/n within 0.01% of the book's limit 1


def mag(data, quantity, unit, hw="h100-sxm", model="llama-3-70b", **sets):
    return Scenario(data, hw, model, sets).mag(quantity, unit)


# -- the link's arithmetic intensity -----------------------------------------------------------------
def test_sb_roofline_network_intensity_of_tpu_v5e(data):
    # SB roofline, "Network communication rooflines": "1.97e14 / 4.5e10 = 4377".
    assert mag(data, "link_intensity", "FLOP/byte", "tpu-v5e", **V5E_LINK) == pytest.approx(4377, rel=5e-4)


def test_h100_link_intensity_from_the_data(data):
    # SB gpus, "Data Parallelism": "990e12 / 450e9 = 2200"; from hardware.yaml 989.5e12 / 450e9 = 2,199.
    assert mag(data, "link_intensity", "FLOP/byte") == pytest.approx(H100_FLOPS / H100_LINK, rel=1e-9)
    assert mag(data, "link_intensity", "FLOP/byte") == pytest.approx(2200, rel=1e-3)


# -- the batch the link sets ---------------------------------------------------------------------------
def test_sb_training_v5p_batch_per_chip(data):
    # SB training, "Data Parallelism": "our batch size per chip must be at least 2,550" (4.6e14 / 1.8e11);
    # FSDP: "4.59e14 / 1.8e11 = 2550 for v5p". bf16 weights: 2 bytes per 2 FLOP.
    rows = mag(data, "collective_critical_rows", "", "tpu-v5p", **V5P_RING, **LONG_RING)
    assert rows == pytest.approx(4.59e14 / 1.8e11, rel=2e-4) and rows == pytest.approx(2550, rel=5e-4)


def test_h100_node_batch_per_chip_from_the_data(data):
    # SB gpus, "Data Parallelism": "Within a node ... per-GPU token batch size > 990e12 / 450e9 = 2200",
    # the long-ring limit; on a ring of the node's 8 GPUs each receives 7/8 of the buffer, so the link
    # carries 8/7 of it (the book's 514 GB/s): 2 B · 989.5e12 / (2 FLOP · 450e9 · 8/7) = 1,924.
    ring8 = mag(data, "collective_critical_rows", "", ring_chips="8")
    assert ring8 == pytest.approx(H100_FLOPS / (H100_LINK * 8 / 7), rel=1e-9)
    assert mag(data, "collective_critical_rows", "", **LONG_RING) == pytest.approx(2200, rel=1e-3)


def test_the_batch_does_not_depend_on_the_number_format(data):
    # SB training, "Tensor Parallelism": "this doesn't depend on the precision of the computation, since
    # e.g. for int8 ... C_int8 / W_ici is 5100 instead of 2550 but the comms volume is also halved". On
    # H100 fp8 weights compute at 1,979 TFLOP/s (hardware.yaml), twice bf16: the intensity doubles, the
    # rows stay.
    bf16 = mag(data, "collective_critical_rows", "", ring_chips="8")
    assert mag(data, "collective_critical_rows", "", ring_chips="8", weight_format="fp8") == pytest.approx(bf16)
    assert mag(data, "link_intensity", "FLOP/byte", weight_format="fp8") == \
        pytest.approx(2 * H100_FLOPS / H100_LINK, rel=1e-9)


# -- the largest tensor-parallel degree ----------------------------------------------------------------
# The book counts two MLP matrices (it ignores the gate: mlp_matrices=2) and drops the ring's (n−1)/n:
# its Y < F·W/C is, with the ring's share kept, Y − 1 < F·W/C, so the tests compare tp_max_degree − 1.
BOOK_MLP = {"mlp_matrices": "2"}


def test_sb_training_v5p_tensor_parallelism_needs_f_of_20k_for_8_way(data):
    # SB training, "Tensor Parallelism": "we can only do tensor parallelism up to Y < F / 2550 ... The
    # required F for model 8 way model sharding is 20k" (8 · 2550 = 20,400).
    y = mag(data, "tp_max_degree", "chip", "tpu-v5p", d_ff="20400", **V5P_RING, **BOOK_MLP)
    assert y - 1 == pytest.approx(20400 / 2550, rel=5e-4) and y - 1 == pytest.approx(8, rel=5e-4)


def test_sb_training_v5p_three_axes_triple_the_degree(data):
    # "When we have multiple ICI axes ... Y < n_axes * F / 2550".
    one = mag(data, "tp_max_degree", "chip", "tpu-v5p", d_ff="20400", **V5P_RING, **BOOK_MLP)
    three = mag(data, "tp_max_degree", "chip", "tpu-v5p", d_ff="20400", collective_axes="3", **V5P_RING, **BOOK_MLP)
    assert three - 1 == pytest.approx(3 * (one - 1), rel=1e-9)


def test_h100_llama3_70b_tensor_parallel_degree_from_the_data(data):
    # SB gpus, "Tensor Parallelism": "Y < F · W_collective / C ... Within a node, this gives us about
    # F / 2200". LLaMA 3-70B's F = 28,672 (models.yaml): 28,672 · 450e9 / 989.5e12 = 13.04 with the
    # book's two matrices; its MLP is gated (three matrices: 1.5× the FLOPs per activation byte).
    two = mag(data, "tp_max_degree", "chip", **BOOK_MLP)
    assert two - 1 == pytest.approx(28672 * H100_LINK / H100_FLOPS, rel=1e-9)
    assert two - 1 == pytest.approx(28672 / 2200, rel=1e-3)
    assert mag(data, "tp_max_degree", "chip") - 1 == pytest.approx(1.5 * 28672 * H100_LINK / H100_FLOPS, rel=1e-9)


# -- the latency-bound message and a send over k hops ------------------------------------------------------
def test_sb_sharding_v5e_latency_bound_buffer(data):
    # SB sharding, "A note on ICI latency": "TPU v5e with 4.5e10 unidirectional ICI bandwidth, sending any
    # buffer under 4.5e10 * 1e-6 = 45kB will be latency bound".
    assert mag(data, "latency_bound_bytes", "byte", "tpu-v5e", ring_hop_latency="1 us", **V5E_LINK) == \
        pytest.approx(45e3, rel=1e-9)


def test_h100_latency_bound_message_from_the_data(data):
    # NVLink at 450 GB/s per direction and the ring's default 1 µs hop: 450 kB.
    assert mag(data, "latency_bound_bytes", "byte", ring_hop_latency="1 us") == pytest.approx(H100_LINK * 1e-6)


def test_sb_tpus_q5_send_across_a_v5e_4x4(data):
    # SB tpus, Question 5 [ICI bandwidth]: bf16[8, 128, 8192] from TPU{0,0} to TPU{3,3} of a 4x4 without
    # wraparound, split over two ports of 4.5e10: "1.7e7 / 9e10 = 188us", six hops of 1 µs, "188 + 6 =
    # 194us". Unrounded: 16,777,216 / 9e10 = 186.4 µs, + 6 = 192.4 µs (the book rounds the bytes up).
    t = mag(data, "p2p_time", "us", "tpu-v5e", p2p_bytes=f"{2 * 8 * 128 * 8192} B", p2p_hops="6", p2p_links="2",
            ring_hop_latency="1 us", **V5E_LINK)
    assert t == pytest.approx(2 * 8 * 128 * 8192 / 9e10 * 1e6 + 6, rel=1e-9)
    assert t == pytest.approx(194, rel=0.01)
