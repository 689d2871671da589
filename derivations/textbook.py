"""The textbook quantities: the arithmetic of the standard worked examples around the lecture.

The lecture reasons on the board with a handful of numbers that the textbooks of the trade
work out at length: the scaling-book (Austin et al., "How to Scale Your Model",
jax-ml.github.io/scaling-book: its roofline, sharding, training, inference and GPU chapters),
kipply's "Transformer Inference Arithmetic" and the Chinchilla paper. Declared here, once, so
that a practitioner can put their worked examples through ``build.py eval``:

* FLOPs: a token's forward pass (2 per active parameter plus attention over its context), a
  training token (6 per parameter), and one matrix multiply (2·m·k·n) with the bytes it moves
  and the row count at which it turns compute-bound;
* HBM: the weights' bytes, the chips needed to hold them (and the KV cache of the workload's
  batch), the HBM left for the KV cache, and queries per second per chip;
* training memory: parameters, gradients, optimizer state (Adam: two moments, an fp32 master
  copy), each precision a named, settable number of bytes; activations per token per layer
  after Korthikanti et al. 2022 (sbh(34 + 5as/h) per layer, its selective and full
  recomputation forms); totals, per chip, and the chips needed;
* collectives on a ring of n chips: all-gather, reduce-scatter, all-reduce of a buffer at a
  per-direction link bandwidth plus a per-hop latency; tensor-parallel all-reduce bytes;
* data parallelism (and FSDP, which moves the same bytes): the per-chip batch above which the
  gradient all-reduce hides under the backward pass, SymPy solving backward time = all-reduce
  time.

Parameter counts from a model's dimensions and pipeline quantities are declared elsewhere.
"""
import sympy as sp

from .inputs import (R, B, L, S, F, W, C_hbm, W_up, N_total, N_active, n_layers, d_model, n_heads,
                     beta_w, b_kv, a_attn, c_F, c_MAC, delta)
from .moe_rack import beta_act
from .reversible import beta_a
from .schedule import thr_chip
from .training import c_bwd, c_train

c_1 = R.constant("one_chip", "1 chip", "one chip: counts of chips are rounded up in whole chips",
                 "S", "1", source="definition: a chip is indivisible")

# -- FLOPs ------------------------------------------------------------------------------------
R.section(
    "forward_flops", "How many FLOPs does a forward pass, a training token and a matmul take?",
    seeds=(),
    chapter="batch",
    question="How many FLOPs does one token's forward pass take (2 per active parameter, plus "
             "attention over its context), how many does a training token take, and how many FLOPs "
             "and bytes does one matrix multiply take?",
    takeaway="{model}: a token's forward pass takes {forward_flop_per_token} at a context of "
             "{context} ({forward_flop_per_token_params} of it in the weights); a training token "
             "takes {train_flop_per_token}. A matmul of {matmul_m} rows by {matmul_k} by "
             "{matmul_n} does {matmul_flops} on {matmul_bytes} ({matmul_intensity}); it is "
             "compute-bound on {hardware} from {matmul_critical_rows} rows.",
    featured=("forward_flop_per_token_params", "forward_flop_per_token", "train_flop_per_token",
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
R.derived(
    "train_flop_per_token", c_train * N_active, "FLOP/token",
    "training FLOP per token: 6 per active parameter (2 forward, 4 backward)", "C", "train",
    note="scaling-book, 'Training LLaMA 3 on TPUs': 6 · 70e9 = 4.2e11 FLOPs per token")

m_mm = R.workload("matmul_m", "", "rows of the left operand of a matmul: its batch of tokens", "m",
                  default="4096", source="a batch of 4,096 tokens (illustrative)")
k_mm = R.workload("matmul_k", "", "contracted dimension of a matmul (rows of the weight matrix)", "k",
                  default="8192", source="LLaMA 3-70B d_model (scaling-book, 'Training LLaMA 3 on TPUs')")
n_mm = R.workload("matmul_n", "", "columns of the weight matrix (and of the product)", "n",
                  default="28672", source="LLaMA 3-70B feed-forward width F = 3.5·8192 "
                                          "(scaling-book, 'Training LLaMA 3 on TPUs')")
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
    "hbm_left_for_kv_per_chip", C_hbm - M_w / S, "byte/chip",
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

# -- training memory ---------------------------------------------------------------------------
R.section(
    "training_memory", "How much memory does training take?",
    seeds=(),
    chapter="training",
    question="How many bytes do the parameters, gradients and optimizer state of a training run "
             "take, how many the activations kept for the backward pass, and how many chips does it "
             "take to hold them?",
    takeaway="Training {model} keeps {train_state_bytes_per_param}: {train_param_memory} of "
             "parameters, {train_gradient_memory} of gradients and {train_optimizer_memory} of "
             "optimizer state. A batch of {train_batch_tokens} keeps {train_activation_memory} of "
             "activations without recomputation, {train_activation_memory_checkpoint} with "
             "checkpointing; on {chips} that is {train_memory_per_chip}, and it fits on "
             "{train_chips_to_fit}.",
    featured=("train_state_bytes_per_param", "train_param_memory", "train_gradient_memory",
              "train_optimizer_memory", "activation_bytes_per_token_layer",
              "activation_bytes_per_token_layer_selective", "activation_bytes_per_token_layer_checkpoint",
              "train_activation_memory", "train_activation_memory_checkpoint", "train_memory",
              "train_memory_per_chip", "train_chips_to_fit", "params_trainable_per_chip"),
)

_ZERO = ("Rajbhandari et al. 2020, ZeRO: Memory Optimizations Toward Training Trillion Parameter "
         "Models, sec. 3.1: mixed-precision Adam keeps fp16 parameters and gradients and fp32 "
         "parameters, momentum and variance (2 + 2 + 12 bytes per parameter)")
beta_p = R.workload("bytes_per_param_train", "byte/parameter",
                    "bytes per parameter of the working (forward and backward) copy of the weights",
                    "β", "p", default="2 byte/parameter", source=_ZERO)
beta_g = R.workload("bytes_per_gradient", "byte/parameter", "bytes per parameter of the gradient",
                    "β", "g", default="2 byte/parameter", source=_ZERO)
beta_master = R.workload("bytes_per_master_weight", "byte/parameter",
                         "bytes per parameter of the optimizer's master copy of the weights (0: none)",
                         "β", "master", default="4 byte/parameter", source=_ZERO)
beta_mom = R.workload("bytes_per_optimizer_moment", "byte/parameter",
                      "bytes per parameter of each optimizer moment", "β", "mom",
                      default="4 byte/parameter", source=_ZERO)
n_mom = R.workload("optimizer_moments", "", "moments the optimizer keeps per parameter", "n", "mom",
                   default="2", source="Adam (Kingma and Ba 2015) keeps two: the mean and the "
                                       "uncentred variance of the gradient")
D_b = R.workload("train_batch_tokens", "token", "tokens in one training step (the global batch)",
                 "D", "step", default="4e6 token",
                 source="scaling-book, 'Training LLaMA 3 on TPUs': LLaMA 3-70B was pretrained with a "
                        "batch size of about 4M tokens")

b_opt = R.derived("optimizer_bytes_per_param", n_mom * beta_mom + beta_master, "byte/parameter",
                  "optimizer-state bytes per parameter: its moments and the master copy", "β", "opt")
b_state = R.derived("train_state_bytes_per_param", beta_p + beta_g + b_opt, "byte/parameter",
                    "training-state bytes per parameter: weights, gradient, optimizer state "
                    "(16 for mixed-precision Adam)", "β", "state")
R.derived("train_param_memory", N_total * beta_p, "byte",
          "bytes of the working copy of the weights", "M", "p")
R.derived("train_gradient_memory", N_total * beta_g, "byte", "bytes of the gradient", "M", "g")
R.derived("train_optimizer_memory", N_total * b_opt, "byte",
          "bytes of the optimizer state (moments and master copy)", "M", "opt")
M_state = R.derived("train_state_memory", N_total * b_state, "byte",
                    "bytes of the whole training state: weights, gradient, optimizer state", "M", "state")
R.derived("params_trainable_per_chip", C_hbm / b_state, "parameter/chip",
          "largest model whose training state fits on one chip (pure data parallelism: every chip "
          "holds all of it)", "N", "DP")

# Activations kept for the backward pass, per token per layer, after Korthikanti et al. 2022,
# "Reducing Activation Recomputation in Large Transformer Models", sec. 4.1, eq. (1): a layer
# keeps s·b·h·(34 + 5·a·s/h) bytes with 16-bit activations and 1-byte dropout masks. Per
# residual-stream width h: attention 11 (Q and K 4, the QKV input 2, V 2, the output projection's
# input 2, a dropout mask 1), MLP 19 (input 2, GeLU input 8, GeLU output 8, a dropout mask 1),
# the two layer norms' inputs 4: 16 numbers of 2 bytes and 2 masks of 1 byte. Per attention score
# (a·s per token): softmax output 2, dropout mask 1, dropout output 2: 2 numbers and 1 mask.
_KORTH = ("Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer Models, "
          "sec. 4.1, eq. (1): sbh(34 + 5as/h) bytes per layer")
n_num = R.constant("activation_numbers_per_width", "16 /token",
                   "activation numbers kept per layer per token for each residual-stream width: attention 5 "
                   "(QKV input, Q, K, V, output-projection input), MLP 9 (input 1, GeLU input 4, GeLU "
                   "output 4), layer norms 2", "c", "act", source=_KORTH)
n_msk = R.constant("dropout_masks_per_width", "2 /token",
                   "dropout masks kept per layer per token for each residual-stream width: after attention "
                   "and after the MLP", "c", "mask", source=_KORTH)
n_num_s = R.constant("activation_numbers_per_score", "2 /token",
                     "activation numbers kept per attention score: the softmax output and the dropout output",
                     "c", "score", source=_KORTH)
n_msk_s = R.constant("dropout_masks_per_score", "1 /token",
                     "dropout masks kept per attention score", "c", "score,mask", source=_KORTH)
beta_mask = R.constant("bytes_per_dropout_mask", "1 byte", "bytes per dropout-mask entry", "β", "mask",
                       source=_KORTH + " (1-byte masks)")
L_1 = R.constant("one_context_token", "1 token/sequence",
                 "one token of context: L/L₁ counts the keys each query scores", "L", "1",
                 source="definition")
n_ck = R.workload("checkpoints_per_layer", "1/token",
                  "residual-stream vectors kept per layer per token with activation checkpointing "
                  "(1: each layer's input)", "c", "ck", default="1 /token",
                  source=_KORTH + ": full recomputation keeps 2sbh per layer, the layer's input in 16 bit")

b_width = n_num * beta_a + n_msk * beta_mask
a_full = R.derived(
    "activation_bytes_per_token_layer", b_width * d_model + (n_num_s * beta_a + n_msk_s * beta_mask)
    * n_heads * L / L_1, "byte/token",
    "activation bytes kept per token per layer without recomputation (34·h + 5·a·s with 16-bit "
    "activations: Korthikanti et al. 2022, eq. (1))", "m", "act")
R.derived(
    "activation_bytes_per_token_layer_selective", b_width * d_model, "byte/token",
    "activation bytes kept per token per layer with selective recomputation: the attention scores "
    "recomputed (34·h with 16-bit activations)", "m", "act,sel")
a_ck = R.derived(
    "activation_bytes_per_token_layer_checkpoint", n_ck * d_model * beta_a, "byte/token",
    "activation bytes kept per token per layer with checkpointing: the kept residual-stream vectors "
    "only (2·h for one 16-bit vector, Korthikanti et al.'s full recomputation)", "m", "act,ck")
R.derived("train_activation_memory", D_b * n_layers * a_full, "byte",
          "activation bytes one training step keeps without recomputation", "M", "act")
M_ck = R.derived("train_activation_memory_checkpoint", D_b * n_layers * a_ck, "byte",
                 "activation bytes one training step keeps with checkpointing", "M", "act,ck")
M_train = R.derived("train_memory", M_state + M_ck, "byte",
                    "training memory: the training state and the checkpointed activations", "M", "train")
R.derived("train_memory_per_chip", M_train / S, "byte/chip",
          "training memory per chip with everything sharded evenly over the chips (ZeRO-3 / FSDP for "
          "the state, the batch split for the activations)", "m", "train")
R.derived("train_chips_to_fit", sp.ceiling(M_train / (C_hbm * c_1)) * c_1, "chip",
          "fewest chips whose HBM holds the training memory (rounded up)", "S", "train")
R.derived("tokens_per_chip", D_b / S, "token/chip",
          "tokens of the training batch each chip processes", "b", "chip")

# -- collectives -------------------------------------------------------------------------------
R.section(
    "collectives", "How long does a collective take over a ring of chips?",
    seeds=(),
    chapter="moe",
    question="How long do an all-gather, a reduce-scatter and an all-reduce of a buffer take on a "
             "ring of n chips, at a per-direction link bandwidth and a per-hop latency, and how many "
             "bytes do tensor-parallel all-reduces move per layer?",
    takeaway="On a ring of {ring_chips} at {link_bandwidth} per direction, an all-gather of "
             "{collective_bytes} takes {all_gather_time} ({collective_bandwidth} of effective "
             "bandwidth, {ring_hops} hops); an all-reduce takes {all_reduce_time}. Tensor parallelism "
             "all-reduces {tp_allreduce_bytes_per_token_layer} per layer.",
    featured=("ring_fraction", "collective_bandwidth", "ring_hops", "all_gather_time",
              "reduce_scatter_time", "all_reduce_time", "tp_allreduce_bytes_per_token_layer",
              "tp_allreduce_bytes_per_layer"),
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
                    default="=chips")
W_l = R.workload("link_bandwidth", "byte/s/chip",
                 "bandwidth each chip sends into the ring in one direction", "W", "link",
                 default="=scaleup_bandwidth")
n_dir = R.workload("ring_directions", "", "directions the ring sends in at once: 1, or 2 for a "
                   "bidirectional ring (TPU ICI with wraparound)", "n", "dir", default="1",
                   source="a ring through a switch (NVLink) uses the GPU's egress in one direction "
                          "(scaling-book, GPUs chapter)")
n_ax = R.workload("collective_axes", "", "torus axes the collective runs over at once, each with its own links",
                  "n", "axes", default="1", source=_SHARDING)
alpha = R.workload("hop_latency", "s", "latency of one hop around the ring", "α", "hop", default="1 us",
                   source="scaling-book, 'Sharded Matrices', problem 3: a latency-bound all-gather over "
                          "2 hops takes 'roughly 2us'")
c_AR = R.constant("allreduce_phases", "2", "passes around the ring an all-reduce makes: a reduce-scatter, "
                  "then an all-gather", "c", "AR", source=_SHARDING)

f_ring = R.derived("ring_fraction", (n_ring - c_1) / n_ring, "",
                   "share of the buffer each chip receives from the others: (n−1)/n", "f", "ring")
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

# -- data parallelism: when the gradient all-reduce hides ----------------------------------------
R.section(
    "data_parallel", "Above what batch per chip does data parallelism hide its communication?",
    seeds=(),
    chapter="training",
    question="In data parallelism (or FSDP, which moves the same bytes), each step all-reduces the "
             "gradient while the backward pass runs; above what per-chip batch of tokens does the "
             "backward pass take longer than the all-reduce?",
    takeaway="{model} on {hardware} at {collective_bandwidth}: the gradient all-reduce "
             "({dp_gradient_bytes_per_chip}) hides under the backward pass from "
             "{dp_critical_batch_per_chip}; a batch of {train_batch_tokens} then spreads over at most "
             "{dp_max_chips}.",
    featured=("dp_gradient_bytes_per_chip", "dp_allreduce_time", "dp_backward_time",
              "dp_critical_batch_per_chip", "dp_critical_batch", "dp_max_chips"),
)

G = R.derived("dp_gradient_bytes_per_chip", N_total * beta_g / c_1, "byte/chip",
              "gradient bytes each data-parallel chip all-reduces per step: the whole gradient (FSDP "
              "reduce-scatters and all-gathers the same bytes)", "G")
t_dp_comm = R.derived(
    "dp_allreduce_time", c_AR * G / W_ring, "s",
    "time to all-reduce the gradient over the data-parallel ring (bandwidth term; hop latency "
    "left out for buffers this large)", "t", "DP,comm")
t_dp_bwd = R.derived(
    "dp_backward_time", c_bwd * N_active * (D_b / S) / F, "s",
    "time of each chip's backward pass over its share of the batch, at peak FLOP/s", "t", "bwd")
eq_dp = R.equation("dp_backward_equals_allreduce", t_dp_bwd, t_dp_comm,
                   "the backward pass takes as long as the gradient all-reduce")
D_crit = R.derived(
    "dp_critical_batch", R.solve(eq_dp, D_b), "token",
    "global batch at which the backward pass takes as long as the gradient all-reduce", "D", "*",
    how="solved dp_backward_time = dp_allreduce_time for train_batch_tokens")
b_crit = R.derived(
    "dp_critical_batch_per_chip", D_crit / S, "token/chip",
    "per-chip batch above which data parallelism hides its all-reduce under the backward pass "
    "(the scaling-book's C/W)", "b", "*")
R.derived("dp_max_chips", sp.floor(D_b / (b_crit * c_1)) * c_1, "chip",
          "most chips a batch of train_batch_tokens can be spread over in data parallelism before the "
          "all-reduce shows", "S", "DP",
          valid="the batch is smaller than one chip's critical batch: the all-reduce shows on any number of chips")
