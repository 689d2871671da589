"""The textbook quantities of serving: the arithmetic of the standard worked examples.

The lecture reasons on the board with a handful of numbers that the textbooks of the trade
work out at length: the scaling-book (Austin et al., "How to Scale Your Model",
jax-ml.github.io/scaling-book: its roofline, sharding, inference and GPU chapters), kipply's
"Transformer Inference Arithmetic" and the Chinchilla paper. Declared here, once, so that a
practitioner can put their worked examples through ``build.py eval`` (the training side is
in textbook_training):

* collectives on a ring of n chips: all-gather, reduce-scatter, all-reduce of a buffer at a
  per-direction link bandwidth plus a per-hop latency; tensor-parallel all-reduce bytes; the
  link's arithmetic intensity and the per-chip batch it sets, the largest tensor-parallel degree
  whose MLP hides its all-reduce (SymPy solves both), the latency-bound message size and a
  point-to-point send over k hops;
* FLOPs: a token's forward pass (2 per active parameter plus attention over its context) and
  one matrix multiply (2·m·k·n) with the bytes it moves and the row count at which it turns
  compute-bound (SymPy solves intensity = the chip's FLOP per byte);
* HBM: the weights' bytes, the chips needed to hold them (and the KV cache of the workload's
  batch), the HBM left for the KV cache, and queries per second per chip.

Parameter counts from a model's dimensions and pipeline quantities are declared elsewhere.
"""
import sympy as sp

from .inputs import DEGREE, MATMUL
from .inputs import (R, B, L, S, F, W, C_hbm, N_total, N_active, d_model, d_ff, beta_w, b_kv, a_attn,
                     c_F, c_MAC, c_mlp, delta, tau)
from .moe_rack import beta_act
from .schedule import m_w, thr_chip

c_1 = R.constant("one_chip", "1 chip", "one chip: counts of chips are rounded up in whole chips",
                 "S", "1", source="definition: a chip is indivisible")

# -- collectives -------------------------------------------------------------------------------
R.section(
    "collectives", "How long does a collective take over a ring of chips?",
    seeds=(),
    chapter="moe",
    question="How long do an all-gather, a reduce-scatter and an all-reduce of a buffer take on a "
             "ring of n chips, at a per-direction link bandwidth and a per-hop latency, and how many "
             "bytes do tensor-parallel all-reduces move per layer? How many FLOPs does a chip do per "
             "byte its link sends, what batch does that set, how far can tensor parallelism go before "
             "its all-reduce binds, below what size is a message latency-bound, and how long does a "
             "point-to-point send over k hops take?",
    takeaway="On a ring of {ring_chips} at {link_bandwidth} per direction, an all-gather of "
             "{collective_bytes} takes {all_gather_time} ({collective_bandwidth} of effective "
             "bandwidth, {ring_hops} hops); an all-reduce takes {all_reduce_time}. Tensor parallelism "
             "all-reduces {tp_allreduce_bytes_per_token_layer} per layer. {hardware} does "
             "{link_intensity} sent over the link: a matmul hides the all-gather of its weights from "
             "{collective_critical_rows} rows per chip, and {model}'s MLP hides its tensor-parallel "
             "all-reduce up to {tp_max_degree}. A message under {latency_bound_bytes} is "
             "latency-bound; a point-to-point send of {p2p_bytes} takes {p2p_time}.",
    featured=("ring_fraction", "collective_bandwidth", "ring_hops", "all_gather_time",
              "reduce_scatter_time", "all_reduce_time", "tp_allreduce_bytes_per_token_layer",
              "tp_allreduce_bytes_per_layer", "link_intensity", "collective_critical_rows",
              "tp_max_degree", "latency_bound_bytes", "p2p_time"),
)

_SHARDING = ("scaling-book, 'Sharded Matrices and How to Multiply Them': an all-gather or "
             "reduce-scatter takes bytes/bandwidth·(n−1)/n; an all-reduce is a reduce-scatter then an "
             "all-gather; GPUs chapter: the same on an NVLink ring at the GPU's egress bandwidth")
V = R.workload("collective_bytes", "byte/chip",
               "bytes of the buffer each chip holds once an all-gather is done (or as a reduce-scatter or "
               "all-reduce starts)", "V", default="58.7e6 byte/chip",
               source="scaling-book, GPUs chapter: an MLP matrix of LLaMA 3-70B with 8-way model "
                      "sharding, bf16[8192, 3584] = 58 MB")
n_ring = R.workload("ring_chips", "chip", "chips on the ring the collective runs over", "n",
                    default="=chips",
                    whole=True, most=DEGREE)
W_l = R.workload("link_bandwidth", "byte/s/chip",
                 "bandwidth each chip sends into the ring in one direction", "W", "link",
                 default="=scaleup_bandwidth")
n_dir = R.workload("ring_directions", "", "directions the ring sends in at once: 1, or 2 for a "
                   "bidirectional ring (TPU ICI with wraparound)", "n", "dir", default="1",
                   source="a ring through a switch (NVLink) uses the GPU's egress in one direction "
                          "(scaling-book, GPUs chapter)",
                   whole=True, most=(64, "a ring runs in one or two directions"))
n_ax = R.workload("collective_axes", "", "torus axes the collective runs over at once, each with its own links",
                  "n", "axes", default="1", source=_SHARDING,
                  whole=True, most=(64, "a collective runs over a few axes of the network"))
alpha = R.workload("ring_hop_latency", "s", "latency of one hop around the ring", "α", "hop", default="1 us",
                   source="scaling-book, 'Sharded Matrices', problem 3: a latency-bound all-gather over "
                          "2 hops takes 'roughly 2us'",
                   zero=True)
c_AR = R.constant("allreduce_phases", "2", "passes around the ring an all-reduce makes: a reduce-scatter, "
                  "then an all-gather", "c", "AR", source=_SHARDING)

f_ring = R.derived("ring_fraction", (n_ring - c_1) / n_ring, "",
                   "share of the buffer each chip receives from the others: (n−1)/n", "f", "ring", share=True)
W_ring = R.derived(
    "collective_bandwidth", n_dir * n_ax * W_l / f_ring, "byte/s/chip",
    "effective all-gather bandwidth of each chip: its links in use over the (n−1)/n share of the "
    "buffer it must receive", "W", "coll",
    note="scaling-book, GPUs chapter: an 8-GPU node at 450 GB/s gives 450e9·8/7 = 514 GB/s")
hops = R.derived("ring_hops", sp.ceiling((n_ring - c_1) / (c_1 * n_dir)), "",
                 "hops the farthest shard travels: n−1 one way, half that each way on a bidirectional ring",
                 "h", "ring")
t_AG = R.derived("all_gather_time", hops * alpha + V / W_ring, "s",
                 "time of a ring all-gather: the hops' latency plus the buffer at the effective bandwidth",
                 "t", "AG", note=_SHARDING)
R.derived("reduce_scatter_time", t_AG, "s",
          "time of a ring reduce-scatter: an all-gather run backwards, the same bytes and hops",
          "t", "RS", note=_SHARDING)
t_AR = R.derived("all_reduce_time", c_AR * t_AG, "s",
                 "time of a ring all-reduce: a reduce-scatter then an all-gather", "t", "AR",
                 note=_SHARDING)
c_tp = R.constant("tp_allreduces_per_layer", "2 /token",
                  "residual-stream all-reduces per layer per token in the forward pass of tensor (Megatron) "
                  "parallelism: after attention and after the MLP", "c", "TP",
                  source="Shoeybi et al. 2019, Megatron-LM, sec. 3 and Figure 4: four all-reduces per "
                         "model-parallel transformer layer, two in the forward pass, two in the backward")
b_tp = R.derived("tp_allreduce_bytes_per_token_layer", c_tp * d_model * beta_act, "byte/token",
                 "bytes tensor parallelism all-reduces per token per layer in the forward pass", "b", "TP")
R.derived("tp_allreduce_bytes_per_layer", B * delta * b_tp, "byte",
          "bytes tensor parallelism all-reduces per layer in one decode step of the batch", "M", "TP")

# -- FLOPs ------------------------------------------------------------------------------------
R.section(
    "forward_flops", "How many FLOPs does a forward pass and a matmul take?",
    seeds=(),
    chapter="batch",
    question="How many FLOPs does one token's forward pass take (2 per active parameter, plus "
             "attention over its context), and how many FLOPs and bytes does one matrix multiply take?",
    takeaway="{model}: a token's forward pass takes {forward_flop_per_token} at a context of "
             "{context} ({forward_flop_per_token_params} of it in the weights). A matmul of "
             "{matmul_m} rows by {matmul_k} by "
             "{matmul_n} does {matmul_flops} on {matmul_bytes} ({matmul_intensity}); it is "
             "compute-bound on {hardware} from {matmul_critical_rows} rows.",
    featured=("forward_flop_per_token_params", "forward_flop_per_token",
              "matmul_flops", "matmul_bytes", "matmul_intensity", "matmul_time",
              "matmul_critical_rows"),
)

fwd_params = R.derived(
    "forward_flop_per_token_params", c_F * N_active, "FLOP/token",
    "forward-pass FLOP per token in the weights: 2 per active parameter (the 2N rule)", "C", "fwd,N",
    note="scaling-book, 'Serving LLaMA 3-70B on TPUs': Total FLOPs = 2 · param count · B")
R.derived(
    "forward_flop_per_token", fwd_params + L * a_attn / delta, "FLOP/token",
    "forward-pass FLOP of one new token at a context of L tokens: the weights' 2N plus attention "
    "over every cached token (attention_flops_per_token, from the architecture)", "C", "fwd",
    note="Kaplan et al. 2020, sec. 2.1: C_forward ≈ 2N + 2·n_layer·n_ctx·d_attn (their count of "
         "attention); here scores and values over the cached context, as in kv_cache")

m_mm = R.workload("matmul_m", "", "rows of the left operand of a matmul: its batch of tokens", "m",
                  default="4096", source="a batch of 4,096 tokens (illustrative)",
                  whole=True, most=MATMUL)
k_mm = R.workload("matmul_k", "", "contracted dimension of a matmul (rows of the weight matrix)", "k",
                  default="=d_model", source="the model's width: a matmul of its residual stream (the "
                                             "scaling-book's worked matmuls take LLaMA 3-70B's d_model, 8,192)",
                  whole=True, most=MATMUL)
n_mm = R.workload("matmul_n", "", "columns of the weight matrix (and of the product)", "n",
                  default="=d_ff", source="the width of the model's dense MLP: its up-projection (the "
                                          "scaling-book's take LLaMA 3-70B's F = 28,672)",
                  whole=True, most=MATMUL)
p_1 = R.constant("params_per_weight_entry", "1 parameter", "each entry of a weight matrix is one parameter",
                 "p", "1", source="definition")
C_mm = R.derived(
    "matmul_flops", c_MAC * m_mm * k_mm * n_mm, "FLOP",
    "FLOP of one matmul [m, k] × [k, n]: m·k·n multiply-accumulates, 2 FLOP each", "C", "mm",
    note="scaling-book, 'All About Rooflines': 2BDF FLOPs for bf16[B, D] × bf16[D, F]")
M_mm = R.derived(
    "matmul_bytes", beta_act * (m_mm * k_mm + m_mm * n_mm) + beta_w * p_1 * k_mm * n_mm, "byte",
    "bytes a matmul moves to and from HBM: the activations in and out (bytes_per_activation each) "
    "and the weight matrix (bytes_per_weight, the weight format)", "M", "mm",
    note="scaling-book, 'All About Rooflines': 2BD + 2DF bytes loaded, 2BF written, in bf16")
I_mm = R.derived(
    "matmul_intensity", C_mm / M_mm, "FLOP/byte",
    "arithmetic intensity of the matmul: FLOP per byte moved", "I", "mm")
R.derived(
    "matmul_time", sp.Max(C_mm / (F * c_1), M_mm / (W * c_1)), "s",
    "roofline time of the matmul on one chip: the larger of its compute and its HBM traffic", "t", "mm")
eq_mm = R.equation("matmul_intensity_equals_chip", I_mm, F / W,
                   "the matmul's intensity equals the chip's FLOP per HBM byte")
R.derived(
    "matmul_critical_rows", R.solve(eq_mm, m_mm), "",
    "rows (tokens) above which the matmul is compute-bound on the chip, with exact byte counts "
    "(→ β_w·F/(2·W) when k and n are much larger than the rows)", "m", "*",
    how="solved matmul_intensity = peak_flops / hbm_bandwidth for matmul_m",
    valid="the chip's FLOP per byte exceeds what any row count reaches for these k and n")

# -- what the link sets: its intensity, the batch it sets, tensor parallelism, latency, hops ------
R.resume("collectives")   # after the matmul's inputs, which the batch the link sets reads
_NET = ("scaling-book, 'All About Rooflines', 'Network communication rooflines': the intensity of the "
        "TPU with respect to the inter-chip network, 1.97e14 / 4.5e10 = 4377 on TPU v5e")
R.derived("link_intensity", F / W_l, "FLOP/byte",
          "arithmetic intensity of the link: the chip's peak FLOP/s over the bandwidth it sends into the ring "
          "in one direction (a sharded computation doing fewer FLOPs per byte it sends is communication-bound)",
          "I", "link", note=_NET)
eq_gather = R.equation(
    "matmul_equals_weight_gather", C_mm / (F * c_1), beta_w * p_1 * k_mm * n_mm / (c_1 * W_ring),
    "a chip's matmul takes as long as all-gathering its weight matrix over the ring")
R.derived(
    "collective_critical_rows", R.solve(eq_gather, m_mm), "",
    "rows (tokens per chip) above which a matmul takes longer than all-gathering its weight matrix over the "
    "ring: the per-chip batch the link sets, β_w·F/(2·W_coll) (data parallelism and FSDP are compute-bound "
    "above it)", "m", "coll",
    how="solved matmul_flops / peak_flops = weight bytes / collective_bandwidth for matmul_m",
    note="scaling-book, 'How to Parallelize a Transformer for Training', 'Data Parallelism' and 'FSDP': "
         "B/X > C/W_ici, 4.59e14 / 1.8e11 = 2550 on TPU v5p; 'How to Think About GPUs', 'Rooflines for LLM "
         "Scaling on GPUs', 'Data Parallelism': within a node 990e12 / 450e9 = 2200 per H100")
eq_tp = R.equation(
    "tp_mlp_equals_allreduce", c_F * c_mlp * d_model * d_ff / (n_ring * F),
    c_AR * d_model * beta_act / (tau * c_1 * W_ring),
    "each chip's share of a token's dense-MLP FLOPs takes as long as the all-reduce (all-gather and "
    "reduce-scatter) of the token's activations over the tensor-parallel ring")
R.derived(
    "tp_max_degree", R.solve(eq_tp, n_ring), "chip",
    "largest tensor-parallel degree at which each chip's share of the dense MLP still hides the all-reduce of "
    "its activations (any smaller degree is compute-bound): 1 + d_ff·W_coll/F for a two-matrix MLP in "
    "bf16, the ring's (n−1)/n kept", "n", "TP",
    how="solved the MLP's FLOPs per chip / peak_flops = the activations' all-reduce time for ring_chips",
    note="scaling-book, 'How to Parallelize a Transformer for Training', 'Tensor Parallelism': compute-bound "
         "while Y < n_axes·F/2550 on TPU v5p; 'How to Think About GPUs', 'Tensor Parallelism': Y < F·W/C, "
         "F/2200 within an H100 node; both drop the ring's (n−1)/n and count two MLP matrices")
R.derived("latency_bound_bytes", W_l * alpha * c_1, "byte",
          "bytes a link sends in one hop's latency: a message smaller than this is latency-bound", "M", "lat",
          note="scaling-book, 'Sharded Matrices and How to Multiply Them', 'A note on ICI latency': on TPU "
               "v5e 'sending any buffer under 4.5e10 * 1e-6 = 45kB will be latency bound'")
_Q5 = "scaling-book, 'How to Think About TPUs', Question 5 [ICI bandwidth]"
M_p2p = R.workload("p2p_bytes", "byte", "bytes of a message one chip sends to another", "M", "p2p",
                   default="16777216 byte", source=_Q5 + ": an array bf16[8, 128, 8192], 2·8·128·8192 bytes")
k_hop = R.workload("p2p_hops", "", "hops between the sending and the receiving chip", "k", "hop", default="1",
                   source="neighbouring chips, and any two GPUs of one NVLink switch domain, are one hop apart",
                   whole=True, most=(10**6, "a path of a million hops is far past any network's diameter"))
n_link = R.workload("p2p_links", "", "links the message is split over at once (ports of the sender)", "n",
                    "link", default="1", source=_Q5 + ": two ports on a 2D slice without wraparound",
                    whole=True, most=(64, "a chip has a few links"))
R.derived("p2p_time", k_hop * alpha + M_p2p / (n_link * W_l * c_1), "s",
          "time of a point-to-point send: the first byte's hops, then the message at the bandwidth of the links "
          "it is split over", "t", "p2p",
          note=_Q5 + ": 6 hops on a TPU v5e 4x4, '188 + 6 = 194us'")

# -- holding the weights and the KV cache ------------------------------------------------------
R.section(
    "hbm_fit", "How many chips does it take to hold the weights and the KV cache?",
    seeds=(),
    chapter="batch",
    question="How many bytes are the weights and the KV cache of the workload's batch, how many "
             "chips does it take to hold them, and how much HBM is left for the KV cache?",
    takeaway="{model}'s weights are {weight_bytes} and need {chips_for_weights} of {hardware}; with "
             "the KV cache of {batch} ({kv_bytes_per_sequence} each) they need "
             "{chips_for_weights_and_kv}. On {chips}, {hbm_left_for_kv_per_chip} is left for the KV "
             "cache, and one copy serves {sequences_per_second_per_chip}.",
    featured=("weight_bytes", "kv_bytes_per_sequence", "kv_cache_bytes", "chips_for_weights",
              "chips_for_weights_and_kv", "hbm_left_for_kv_per_chip", "hbm_left_for_kv",
              "sequences_per_second_per_chip"),
)

M_w = R.derived("weight_bytes", N_total * beta_w, "byte",
                "bytes of every weight in the weight format", "M", "w")
R.derived("kv_bytes_per_sequence", L * b_kv, "byte/sequence",
          "KV-cache bytes of one sequence at the workload's context", "M", "KV,seq")
M_kv = R.derived("kv_cache_bytes", B * L * b_kv, "byte",
                 "KV-cache bytes of the whole batch at the workload's context", "M", "KV")
R.derived("chips_for_weights", sp.ceiling(M_w / (C_hbm * c_1)) * c_1, "chip",
          "fewest chips whose HBM holds the weights (rounded up to a whole chip)", "S", "w",
          fit_measure=True)
R.derived("chips_for_weights_and_kv", sp.ceiling((M_w + M_kv) / (C_hbm * c_1)) * c_1, "chip",
          "fewest chips whose HBM holds the weights and the batch's KV cache (rounded up)", "S", "w+KV",
          fit_measure=True)
m_left = R.derived(
    "hbm_left_for_kv_per_chip", C_hbm - m_w, "byte/chip",
    "HBM each chip has left for the KV cache once it holds its share of the weights", "m", "left",
    valid="the weights alone fill the chips' HBM", fit_measure=True)
R.derived("hbm_left_for_kv", S * m_left, "byte",
          "HBM left for the KV cache on all the chips of one copy", "M", "left",
          valid="the weights alone fill the chips' HBM", fit_measure=True)
n_dec = R.workload("decode_length", "token/sequence", "tokens each request decodes", "n", "dec",
                   default="512 token/sequence",
                   source="scaling-book, 'Serving LLaMA 3-70B on TPUs': a median decode length of 512 tokens")
R.derived("sequences_per_second_per_chip", thr_chip / n_dec, "sequence/s/chip",
          "requests finished per second per chip (queries per second per chip): tokens per second "
          "per chip over the tokens each request decodes", "q", "chip")
