"""The textbook quantities of training: memory and data parallelism, as the worked examples
count them.

The scaling-book (Austin et al., "How to Scale Your Model": its training chapters), ZeRO
(Rajbhandari et al. 2020) and Korthikanti et al. 2022 work out what a training run holds and
when its communication hides; declared here, once, for ``build.py eval``:

* FLOPs of a training token (6 per active parameter);
* training memory: parameters, gradients, optimizer state (Adam: two moments, an fp32 master
  copy), each precision a named, settable number of bytes; activations per token per layer
  after Korthikanti et al. 2022 (sbh(34 + 5as/h) per layer, its selective and full
  recomputation forms); totals, per chip, and the chips needed;
* data parallelism (and FSDP, which moves the same bytes): the per-chip batch above which the
  gradient all-reduce hides under the backward pass, SymPy solving backward time = all-reduce
  time on the ring of textbook.py;
* the training rooflines of the scaling-book's training and GPU chapters: a data-parallel and an
  FSDP (ZeRO-3) step, each pass the larger of its compute and the communication it hides, FSDP's
  critical batch per chip; mixed FSDP and tensor parallelism over one MLP block's forward pass,
  the FSDP degree that minimises its communication and the critical batch per chip it reaches
  (SymPy solving each; pure tensor parallelism's bound is a degree, textbook.tp_max_degree).
"""
import sympy as sp

from .inputs import R, L, S, F, C_hbm, N_total, N_active, n_layers, d_model, d_ff, n_heads, c_F, c_mlp, tau
from .moe_rack import beta_act
from .reversible import beta_a
from .textbook import W_l, W_ring, c_1, c_AR, n_dir
from .training import c_bwd, c_train

# -- training memory ---------------------------------------------------------------------------
R.section(
    "training_memory", "How many FLOPs and how much memory does training take?",
    seeds=(),
    chapter="training",
    question="How many FLOPs does a training token take, how many bytes do the parameters, "
             "gradients and optimizer state of a training run take, how many the activations kept for "
             "the backward pass, and how many chips does it take to hold them?",
    takeaway="A training token of {model} takes {train_flop_per_token}; training keeps "
             "{train_state_bytes_per_param}: {train_param_memory} of parameters, "
             "{train_gradient_memory} of gradients and {train_optimizer_memory} of "
             "optimizer state. A batch of {train_batch_tokens} keeps {train_activation_memory} of "
             "activations without recomputation, {train_activation_memory_checkpoint} with "
             "checkpointing; on {chips} that is {train_memory_per_chip}, and it fits on "
             "{train_chips_to_fit}.",
    featured=("train_flop_per_token", "train_state_bytes_per_param", "train_param_memory",
              "train_gradient_memory", "train_optimizer_memory", "activation_bytes_per_token_layer",
              "activation_bytes_per_token_layer_selective", "activation_bytes_per_token_layer_checkpoint",
              "train_activation_memory", "train_activation_memory_checkpoint", "train_memory",
              "train_memory_per_chip", "train_chips_to_fit", "params_trainable_per_chip"),
)

C_tok = R.derived(
    "train_flop_per_token", c_train * N_active, "FLOP/token",
    "training FLOP per token: 6 per active parameter (2 forward, 4 backward)", "C", "train",
    note="scaling-book, 'Training LLaMA 3 on TPUs': 6 · 70e9 = 4.2e11 FLOPs per token")

_ZERO = ("Rajbhandari et al. 2020, ZeRO: Memory Optimizations Toward Training Trillion Parameter "
         "Models, sec. 3.1: mixed-precision Adam keeps fp16 parameters and gradients and fp32 "
         "parameters, momentum and variance (2 + 2 + 12 bytes per parameter)")
beta_p = R.workload("bytes_per_param_train", "byte/parameter",
                    "bytes per parameter of the working (forward and backward) copy of the weights",
                    "β", "p", default="2 byte/parameter", source=_ZERO)
beta_g = R.workload("bytes_per_gradient", "byte/parameter", "bytes per parameter of the gradient",
                    "β", "g", default="2 byte/parameter", source=_ZERO,
                    zero=True)
beta_master = R.workload("bytes_per_master_weight", "byte/parameter",
                         "bytes per parameter of the optimizer's master copy of the weights (0: none)",
                         "β", "master", default="4 byte/parameter", source=_ZERO,
                         zero=True)
beta_mom = R.workload("bytes_per_optimizer_moment", "byte/parameter",
                      "bytes per parameter of each optimizer moment", "β", "mom",
                      default="4 byte/parameter", source=_ZERO)
n_mom = R.workload("optimizer_moments", "", "moments the optimizer keeps per parameter", "n", "mom",
                   default="2", source="Adam (Kingma and Ba 2015) keeps two: the mean and the "
                                       "uncentred variance of the gradient",
                   whole=True, most=(64, "optimizers keep a few moments (Adam: two)"))
D_b = R.workload("train_batch_tokens", "token", "tokens in one training step (the global batch)",
                 "D", "step", default="4e6 token",
                 source="scaling-book, 'Training LLaMA 3 on TPUs': LLaMA 3-70B was pretrained with a "
                        "batch size of about 4M tokens")

b_opt = R.derived("optimizer_bytes_per_param", n_mom * beta_mom + beta_master, "byte/parameter",
                  "optimizer-state bytes per parameter: its moments and the master copy", "β", "opt")
b_state = R.derived("train_state_bytes_per_param", beta_p + beta_g + b_opt, "byte/parameter",
                    "training-state bytes per parameter: weights, gradient, optimizer state "
                    "(16 for mixed-precision Adam)", "β", "state")
M_p = R.derived("train_param_memory", N_total * beta_p, "byte",
          "bytes of the working copy of the weights", "M", "p")
M_g = R.derived("train_gradient_memory", N_total * beta_g, "byte", "bytes of the gradient", "M", "g")
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
D_chip = R.derived("tokens_per_chip", D_b / S, "token/chip",
          "tokens of the training batch each chip processes", "b", "chip")

# -- data parallelism: when the gradient all-reduce hides ----------------------------------------
R.section(
    "data_parallel", "Above what batch per chip does data parallelism hide its communication?",
    seeds=(),
    chapter="training",
    question="In data parallelism (or FSDP, which moves the same bytes), each step all-reduces the "
             "gradient while the backward pass runs; above what per-chip batch of tokens does the "
             "backward pass take longer than the all-reduce, and how far down does mixing FSDP with tensor "
             "parallelism take it?",
    takeaway="{model} on {hardware} at {collective_bandwidth}: the gradient all-reduce "
             "({dp_gradient_bytes_per_chip}) hides under the backward pass from "
             "{dp_critical_batch_per_chip}; a batch of {train_batch_tokens} then spreads over at most "
             "{dp_max_chips}. FSDP mixed with tensor parallelism at its best degree is compute-bound from "
             "{fsdp_tp_critical_batch_per_chip}.",
    featured=("dp_gradient_bytes_per_chip", "dp_allreduce_time", "dp_backward_time",
              "dp_critical_batch_per_chip", "dp_critical_batch", "dp_max_chips"),
)

G = R.derived("dp_gradient_bytes_per_chip", M_g / c_1, "byte/chip",
              "gradient bytes each data-parallel chip all-reduces per step: the whole gradient (FSDP "
              "reduce-scatters and all-gathers the same bytes)", "G")
t_dp_comm = R.derived(
    "dp_allreduce_time", c_AR * G / W_ring, "s",
    "time to all-reduce the gradient over the data-parallel ring (bandwidth term; hop latency "
    "left out for buffers this large)", "t", "DP,comm")
t_dp_bwd = R.derived(
    "dp_backward_time", c_bwd * N_active * D_chip / F, "s",
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


# -- the training rooflines: data parallelism, FSDP, mixed FSDP and tensor parallelism ----------------
# one question with data parallelism's: the same roofline, each pass as long as the larger of its
# compute and the communication it hides, for FSDP and for FSDP mixed with tensor parallelism
R.resume("data_parallel")

_SB_TRAIN = "scaling-book, 'How to Parallelize a Transformer for Training'"
t_fwd = R.derived("train_forward_time", c_F * N_active * D_chip / F, "s",
                  "time of each chip's forward pass over its share of the batch, at peak FLOP/s", "t", "fwd")
R.derived("dp_step_time", t_fwd + sp.Max(t_dp_bwd, t_dp_comm), "s",
          "roofline time of a data-parallel step: the forward pass, then the backward pass or the gradient "
          "all-reduce it hides, whichever is longer", "t", "DP",
          note=_SB_TRAIN + ", 'Data Parallelism': T ≈ max(T_math, T_comms) for the backward pass; the "
                           "forward pass communicates nothing")
t_ag = R.derived("fsdp_allgather_time", M_p / (c_1 * W_ring), "s",
                 "time to all-gather the weights over the ring (FSDP does it in the forward and again in the "
                 "backward pass)", "t", "FSDP,AG")
R.derived("fsdp_step_time", sp.Max(t_fwd, t_ag) + sp.Max(t_dp_bwd, t_ag + M_g / (c_1 * W_ring)), "s",
          "roofline time of an FSDP (ZeRO-3) step: the forward pass or the weights' all-gather, then the "
          "backward pass or the second all-gather and the gradients' reduce-scatter, whichever is longer", "t",
          "FSDP", note=_SB_TRAIN + ", 'Fully-Sharded Data Parallelism (FSDP)': each AllReduce becomes an "
                                   "AllGather and a ReduceScatter")
eq_fsdp = R.equation("fsdp_forward_equals_allgather", t_fwd, t_ag,
                     "the forward pass takes as long as all-gathering the weights")
R.derived("fsdp_critical_batch_per_chip", R.solve(eq_fsdp, D_b) / S, "token/chip",
          "per-chip batch above which FSDP's forward pass hides the weights' all-gather (in bf16 the backward "
          "pass hides its all-gather and reduce-scatter from the same batch)", "b", "FSDP",
          how="solved train_forward_time = fsdp_allgather_time for train_batch_tokens",
          note=_SB_TRAIN + ", 'FSDP': compute-bound when B/X > C/W_ici, '4.59e14 / 1.8e11 = 2550 for v5p'; "
                           "the book models the forward pass, 'the same FLOPs-to-comms ratio as the backward'")

# Mixed FSDP (X chips) and tensor parallelism (Y = chips/X), one MLP block's forward pass, as the book
# models it: the FSDP all-gather of the weights over X's axes, the tensor-parallel all-gather and
# reduce-scatter of the activations over Y's, not overlapped with each other. Long rings: no (n−1)/n.
_MIX = _SB_TRAIN + ", 'Mixed FSDP and Tensor Parallelism'"
X = R.workload("fsdp_degree", "chip", "chips the weights are sharded over in mixed FSDP and tensor parallelism "
               "(X; the other chips/X are tensor-parallel)", "X", default="=chips", source=_MIX,
               whole=True, most=(10**9, "a billion chips is a thousand times the largest machine built"))
M_X = R.workload("fsdp_axes", "", "network axes the FSDP all-gathers run over at once", "M", "X", default="1",
                 source=_MIX + ": M_X and M_Y 'should roughly sum to 3' on a TPU torus; one on a GPU's ring",
                 whole=True, most=(64, "a collective runs over a few axes of the network"))
M_Y = R.workload("tp_axes", "", "network axes the tensor-parallel all-gathers and reduce-scatters run over",
                 "M", "Y", default="1", source=_MIX + ": M_X and M_Y 'should roughly sum to 3' on a TPU torus",
                 whole=True, most=(64, "a collective runs over a few axes of the network"))
Y = S / X
t_mlp = R.derived("mlp_forward_time", c_F * c_mlp * d_model * d_ff * D_chip / F, "s",
                  "time of each chip's share of one dense MLP block's forward pass over the batch, at peak FLOP/s",
                  "t", "MLP")


def _mix_comm(x):
    """One MLP block's forward communication with the weights sharded over ``x`` chips."""
    fsdp = c_mlp * d_model * d_ff * beta_p * x / (S * c_1 * M_X * n_dir * W_l)
    tp = c_AR * D_b * d_model * beta_act / (tau * x * M_Y * n_dir * W_l)
    return fsdp, tp


R.derived("fsdp_tp_comm_time", sum(_mix_comm(X)), "s",
          "one MLP block's forward communication under mixed FSDP and tensor parallelism: the weights' "
          "all-gather over fsdp_degree chips and the activations' all-gather and reduce-scatter over the "
          "tensor-parallel rest", "t", "X,Y", note=_MIX)
R.derived("fsdp_tp_layer_time", sp.Max(t_mlp, sum(_mix_comm(X))), "s",
          "roofline time of one MLP block's forward pass under mixed FSDP and tensor parallelism", "t", "layer",
          note=_MIX)
# a·X + b/X is least where its two terms are equal (its derivative a − b/X² vanishes there)
eq_mix = R.equation("fsdp_comm_equals_tp_comm", *_mix_comm(X),
                    "the FSDP all-gather takes as long as the tensor-parallel collectives")
x_opt = R.solve(eq_mix, X)
R.derived(
    "fsdp_tp_optimal_degree", sp.Min(x_opt, S), "chip",
    "FSDP degree that minimises mixed FSDP and tensor parallelism's communication, √(B/F·M_X/M_Y·N) in the "
    "book's units, at most the chips (there pure FSDP moves the least)", "X", "opt",
    how="solved the FSDP all-gather time = the tensor-parallel time for fsdp_degree",
    note=_MIX + ": X_opt = sqrt(B/F · M_X/M_Y · N), about 13.9 for N = 64, B = 48,000, F = 32,768")
# the critical batch takes the optimum inside (1, chips), as the book does: the optimum shrinks as √B
eq_mix_crit = R.equation("mlp_forward_equals_mixed_comm", t_mlp, sum(_mix_comm(x_opt)),
                         "the MLP block's forward pass takes as long as its communication at the best FSDP degree")
R.derived("fsdp_tp_critical_batch_per_chip", R.solve(eq_mix_crit, D_b) / S, "token/chip",
          "per-chip batch above which mixed FSDP and tensor parallelism, at its best FSDP degree, is "
          "compute-bound: 4α²/(M_X·M_Y·F) in the book's units, α = C/W", "b", "X,Y",
          how="solved mlp_forward_time = fsdp_tp_comm_time at fsdp_tp_optimal_degree for train_batch_tokens",
          note=_MIX + ": B/N > 4α²/(M_X·M_Y·F), 'roughly B/N > 400' for F = 32,768, α = 2550, M_X·M_Y = 2")
