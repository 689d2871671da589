"""Pipelining is not wise: memory capacity, hops and scale-up (chapter 4, from 1:03).

Cited from the lecture notes' chapters-3-7.md, ids M-01 to M-11 and H-01 to H-06.

The system holds the weights once and every sequence's KV cache: N_total·β_w + B·L·b_kv
bytes (M-02), spread over S chips per stage and P stages (M-03). With P stages the pipeline
needs n_micro = P micro-batches in flight to never idle (M-04), each the balance batch B_*
(the lecture's "20 ms train"), so B = P·B_*. Per chip the weight term falls as 1/P while the
KV term does not depend on P at all (M-05): each stage keeps the KV of its own layers (÷P) for
P times as many sequences (M-07). SymPy verifies that, and solves for the depth past which the
KV term is the larger. Decoding is sequential, so each token pays one hop per stage:
t_token = t_step + P·t_hop (H-01, H-02). A scale-up domain reads its weights with all its
chips at once; pipeline stages run one after the other and cannot share that (H-03).
"""
from .inputs import R, B, S, L, C_hbm, W_out, b_kv, delta
from .balance import B_star
from .pipeline import P, b_stage, w_bytes, w_chip_pipe

# -- memory per chip under expert × pipeline parallelism -------------------------------------
R.section(
    "pipeline_memory", "How much memory does each chip need when the model is pipelined?",
    seeds=(),
    chapter="memory",
    question="With S chips per stage, P stages and one balance-batch micro-batch per stage in "
             "flight, what does each chip hold, which term does pipelining shrink, and from what "
             "depth does the KV cache dominate (chapters-3-7.md#M-03, #M-05, #M-06)?",
    takeaway="{model} on {hardware} at {context}: with {pipeline_stages} stages of {chips}, "
             "{pipeline_batch} are in flight; each chip holds {weights_per_chip_pipelined} of weights "
             "and {kv_per_chip_pipelined} of KV cache ({hbm_fill_pipelined} of its HBM). The KV term "
             "is the larger from a depth of {kv_dominance_depth}, and no depth shrinks it.",
    featured=("pipeline_batch", "system_memory", "kv_per_chip_pipelined", "memory_per_chip_pipelined",
              "hbm_fill_pipelined", "kv_dominance_depth"),
)

B_pipe = R.derived(
    "pipeline_batch", P * B_star, "sequence",
    "sequences in flight: one balance-batch micro-batch per stage (n_micro = P)", "B", "pipe")
M_sys = R.derived(
    "system_memory", w_bytes + B_pipe * L * b_kv, "byte",
    "memory the whole pipelined system needs: the weights once and every sequence's KV cache",
    "M", "sys", fit_measure=True)
m_kv_pipe = R.derived(
    "kv_per_chip_pipelined", B_pipe * L * b_kv / (S * P), "byte/chip",
    "KV-cache bytes each chip holds: each stage keeps its own layers' share (÷P) of P micro-batches",
    "m", "KV,P", fit_measure=True)
m_pipe = R.derived(
    "memory_per_chip_pipelined", w_chip_pipe + m_kv_pipe, "byte/chip",
    "HBM each chip needs with P stages of S chips: its weight share and its KV share",
    "m", "chip,P", fit_measure=True)
R.equation("pipelined_memory_is_system_over_chips", m_pipe, M_sys / (S * P),
           "memory per chip = (N_total·β_w + B·L·b_kv)/(S·P), the lecture's sharding (M-03)",
           identity=True)
R.equation("pipelined_kv_is_one_micro_batch", m_kv_pipe, B_star * L * b_kv / S,
           "the KV term is one micro-batch's KV cache over one stage's chips: P cancels (M-05, M-07)",
           identity=True)
R.derived(
    "hbm_fill_pipelined", m_pipe / C_hbm, "",
    "share of each chip's HBM the pipelined set-up needs: above 1 it does not fit", "φ", "HBM,P",
    fit_measure=True, share=True)
eq_kv = R.equation("kv_term_equals_weight_term", m_kv_pipe, w_chip_pipe,
                   "the depth at which the KV term per chip equals the weight term")
R.derived(
    "kv_dominance_depth", R.solve(eq_kv, P), "",
    "pipeline depth past which each chip holds more KV cache than weights (below 1: already "
    "without pipelining)", "P", "KV", how="solved kv_per_chip_pipelined = weights_per_chip_pipelined "
                                          "for pipeline_stages")

# -- hops and the scale-up domain --------------------------------------------------------------
R.section(
    "pipeline_latency", "What does a pipeline cost in latency, and what does a small box cost?",
    seeds=(),
    chapter="memory",
    question="Each token crosses P rack-to-rack hops per step (chapters-3-7.md#H-01, #H-02); how "
             "much latency does that add, how much of a hop is moving the activations, and how long "
             "does a box read its weights (chapters-3-7.md#H-03, #H-06)?",
    takeaway="A micro-batch of {balance_batch} takes {micro_batch_step_time} through every layer "
             "of {model} on {hardware} (its stages' times summed); {pipeline_stages} hops of "
             "{hop_latency} make it {pipeline_token_latency} per token. Moving one micro-batch's activations over the "
             "stage's NICs takes only {hop_transfer_time} of each hop, and with the fabric's fixed latency the data "
             "give {hop_time_from_data} a hop. Reading every weight takes "
             "{weight_fetch_time_all} on {chips}, however many stages follow.",
    featured=("micro_batch_step_time", "hop_transfer_time", "hop_time_from_data", "pipeline_token_latency",
              "weight_fetch_time_all"),
)

t_hop = R.workload("hop_latency", "s", "time for a micro-batch to pass from one stage's rack to the next "
                   "(GPU → NIC → switches → NIC → GPU)", "t", "hop", default="2.5 ms",
                   source="the lecture's 'a few milliseconds, could be off by 10×' per hop, ~10 ms over "
                          "~4 stages (chapters-3-7.md#H-01)")
t_micro = R.derived(
    "micro_batch_step_time", R.at("step_time", {B: B_star}), "s",
    "one micro-batch (the balance batch) through every layer on S chips: the stages' times summed, "
    "as without pipelining", "t", "step,μ", how="step_time at batch = balance_batch")
t_xfer = R.derived(
    "hop_transfer_time", B_star * delta * b_stage / (S * W_out), "s",
    "time for one micro-batch's residual vectors to leave a stage over its S chips' NICs: the "
    "bandwidth part of a hop", "t", "xfer")
# The rest of a hop is the fabric's fixed latency: the sender's and the receiver's NIC and the
# switches between two racks (a leaf, a spine and a leaf in a two-tier fabric), and whatever the
# software adds (an input: no data file measures a bare point-to-point hop's software overhead).
t_nic = R.constant("nic_latency", "600 ns", "fixed latency of one network adapter (RDMA)", "t", "NIC",
                   source="NVIDIA ConnectX-6 user manual, Introduction: 'sub-600ns latency' "
                          "(https://docs.nvidia.com/networking/display/ConnectX6EN/Introduction)")
t_sw = R.constant("switch_latency", "130 ns", "port-to-port latency of one InfiniBand switch", "t", "sw",
                  source="NVIDIA (Mellanox) Quantum QM8790 HDR switch product brief: 'sub-130ns port-to-port "
                         "latency'")
n_nic = R.constant("nics_per_hop", "2", "network adapters a hop passes: the sender's and the receiver's", "n", "NIC",
                   source="one adapter sends, one receives (chapters-3-7.md#H-01: GPU → NIC → switches → NIC → GPU)")
n_sw = R.workload("fabric_switches", "", "switches between two racks' NICs (leaf, spine, leaf in a two-tier "
                  "fabric)", "n", "sw", default="3")
t_soft = R.workload("hop_software_latency", "s", "time a hop spends in software beyond the bytes on the wire and "
                    "the fabric's fixed latency (kernel launches, the communication library, synchronisation)",
                    "t", "soft", default="0 s", zero=True,
                    source="not counted by default: no data file measures a bare rack-to-rack send's software "
                           "overhead; the audit sizes the hop with DeepEP's measured cross-node exchanges")
R.derived(
    "hop_time_from_data", t_xfer + n_nic * t_nic + n_sw * t_sw + t_soft, "s",
    "time of one rack-to-rack hop from the data files: the micro-batch's bytes over the stage's NICs, "
    "the fabric's fixed latency (two NICs, the switches between) and the software's (none by default)",
    "t", "hop,data")
R.derived(
    "pipeline_token_latency", t_micro + P * t_hop, "s",
    "time per token through P stages: one step plus one hop per stage", "t", "token")
