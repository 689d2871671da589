"""How a training run is laid out, and what each choice costs: FLOPs with attention, ZeRO
stages, activations under tensor and sequence parallelism, and both bubble conventions.

* FLOPs. 6 per active parameter per token (training.py) leaves out attention, whose FLOPs grow
  with the sequence: per token, the forward pass scores and weights each earlier token
  (attention_flops_per_token per cached token, causal_pair_share of a sequence of L), and the
  backward pass does twice that, as for the weights. Recomputation re-runs the forward pass
  (recompute_forward_passes). Narayanan et al. 2021 (Megatron-LM, eq. 3) count the same terms,
  with the whole square of the sequence (set causal_pair_share=1 to compare).
* ZeRO (Rajbhandari et al. 2020, sec. 5): stage 1 partitions the optimizer state over the
  data-parallel group, stage 2 also the gradients, stage 3 also the parameters; plain data
  parallelism all-reduces 2Ψ per step, stage 3 moves 3Ψ (an all-gather in the forward and in
  the backward pass, a reduce-scatter of the gradients). FSDP is stage 3.
* Activations (Korthikanti et al. 2022, sec. 4.2, Table 2): with t-way tensor parallelism a
  layer keeps sbh(10 + 24/t + 5as/(ht)) bytes; with sequence parallelism also the 10 is split,
  sbh/t·(34 + 5as/h); selective recomputation drops the 5as/h; full recomputation keeps each
  layer's input alone, 2sbh (split by t with sequence parallelism).
* Pipeline bubbles: GPipe's share of the step, (P − 1)/(m + P − 1) (pipeline.py), and the
  Megatron papers' bubble time over the ideal time, (P − 1)/m, which an interleaved schedule of
  v model chunks per chip divides by v (Narayanan et al. 2021, sec. 2.2).
"""
import sympy as sp

from . import rules
from .inputs import DEGREE, STEPS
from .inputs import R, F as F_train, L, S, N_total, N_active, n_layers, d_model, n_heads, a_attn, delta, price
from .pipeline import P, m
from .prefill import c_causal
from .reversible import beta_a, c_train_re, n_re
from .textbook import W_l, c_1, c_AR
from .textbook_training import (C_tok, D_b, L_1, a_ck, b_opt, beta_g, beta_mask, beta_p, n_msk, n_msk_s,
                                n_num, n_num_s)
from .training import D_pre, c_F, c_train, u_train

R.section(
    "training_layout", "How is a training run laid out, and what does each choice cost?",
    seeds=(),
    chapter="training",
    question="With attention counted, ZeRO stage zero_stage over train_dp data-parallel chips, "
             "train_tp-way tensor parallelism with or without sequence parallelism and train_pp pipeline "
             "stages, how many FLOPs is a training token, what does each chip hold, and how much does the "
             "pipeline idle?",
    takeaway="A training token of {model} at a sequence of {context} takes {train_flop_per_token_with_attention} "
             "({train_flop_per_token_attention} of it attention); with recomputation "
             "{train_flop_per_token_with_recompute}. Under ZeRO stage {zero_stage} over {train_dp} data-parallel "
             "chips, tensor parallelism {train_tp} and {train_pp} stages, each chip holds "
             "{train_state_per_chip_zero} of training state and moves {zero_comm_bytes_per_chip} a step; a "
             "layer keeps {activation_bytes_per_token_layer_tp} of activations per token. The bubble is "
             "{training_bubble_ratio} of the ideal time ({training_bubble_ratio_interleaved} interleaved).",
    featured=("train_flop_per_token_attention", "train_flop_per_token_with_attention",
              "train_flop_per_token_with_recompute", "train_state_per_chip_zero", "zero_comm_bytes_per_chip",
              "zero_comm_time", "activation_bytes_per_token_layer_tp",
              "activation_bytes_per_token_layer_tp_selective", "activation_bytes_per_token_layer_tp_full",
              "train_memory_per_chip_layout", "training_bubble_ratio", "training_bubble_ratio_interleaved"),
)

# -- FLOPs per training token, attention counted -----------------------------------------------------
c_passes = c_train / c_F   # a forward and a backward pass: 3 forward-pass equivalents
att_fwd = c_causal * a_attn * L / delta   # the forward pass's attention FLOPs per token (as prefill counts them)
att = R.derived(
    "train_flop_per_token_attention", c_passes * att_fwd, "FLOP/token",
    "training attention FLOPs per token: the forward pass's causal attention over a sequence of context, "
    "and twice that backward", "C", "train,attn")
C_tok_att = R.derived("train_flop_per_token_with_attention", C_tok + att, "FLOP/token",
          "training FLOPs per token: 6 per active parameter and the attention (the model FLOPs MFU counts)",
          "C", "train,full")
R.derived("train_flop_per_token_with_recompute", c_train_re * N_active + (c_passes + n_re) * att_fwd,
          "FLOP/token",
          "training FLOPs per token with the forward pass recomputed in the backward pass: weights and "
          "attention (the hardware FLOPs HFU counts)", "C", "train,re")

# -- the layout: data, tensor and pipeline parallelism; ZeRO ---------------------------------------
t = R.workload("train_tp", "", "tensor-parallel degree of the training run", "t", "train", default="1",
               source="no tensor parallelism unless given",
               whole=True, most=DEGREE, divides=("n_heads", "each tensor-parallel rank holds whole query heads"))
p = R.workload("train_pp", "", "pipeline stages of the training run", "p", "train", default="1",
               source="no pipeline parallelism unless given",
               whole=True, most=DEGREE, divides=("layers", "each pipeline stage holds whole layers"))
d = R.workload("train_dp", "", "data-parallel degree of the training run: chips / (train_tp · train_pp)", "d",
               "train", default="=rule:train_data_parallel",
               whole=True, most=DEGREE)
R.rule("train_data_parallel", ("chips", "train_tp", "train_pp"),
       "the chips left after tensor and pipeline parallelism: chips / (train_tp · train_pp)"
       )(rules.train_data_parallel)
z = R.workload("zero_stage", "", "ZeRO stage: 0 none, 1 the optimizer state, 2 also the gradients, 3 also "
               "the parameters partitioned over the data-parallel group (3 is FSDP)", "z", default="0",
               source="Rajbhandari et al. 2020, ZeRO, sec. 5",
               whole=True, zero=True,
               most=(3, "ZeRO stage 3 partitions everything: the parameters, gradients and optimizer state"))
sigma = R.workload("sequence_parallel", "", "1 with sequence parallelism (the layer norms and dropouts split "
                   "over the tensor-parallel ranks), 0 without", "σ", "SP", default="1",
                   source="Korthikanti et al. 2022, sec. 4.2.2: used with tensor parallelism",
                   zero=True, most=(1, "a switch: 1 with sequence parallelism, 0 without"))

# sharded or not, by stage: the optimizer state from stage 1, the gradients from 2, the parameters at 3
s_opt = sp.Min(z, 1)
s_g = sp.Min(sp.Max(z - 1, 0), 1)
s_p = sp.Max(z - 2, 0)
psi = N_total / (t * p * c_1)   # each chip's share of the model across tensor and pipeline parallelism


def _over_dp(share):
    """A state kept whole (share 0) or partitioned over the data-parallel group (share 1)."""
    return 1 - share + share / d


m_state = R.derived(
    "train_state_per_chip_zero",
    psi * (beta_p * _over_dp(s_p) + beta_g * _over_dp(s_g) + b_opt * _over_dp(s_opt)), "byte/chip",
    "training state each chip holds: its tensor- and pipeline-parallel share of the weights, gradients and "
    "optimizer state, each partitioned over the data-parallel group from its ZeRO stage on",
    "m", "state,ZeRO")
comm = R.derived(
    "zero_comm_bytes_per_chip", (c_AR + s_p) * psi * beta_g * (d - 1) / d, "byte/chip",
    "bytes each chip sends per step over the data-parallel ring: the gradient all-reduce (2Ψ), and a "
    "second all-gather of the parameters at stage 3 (3Ψ)", "V", "ZeRO")
R.derived("zero_comm_time", comm / W_l, "s",
          "time of a step's data-parallel communication: what each chip sends, at its link bandwidth "
          "(hop latency left out for buffers this large)", "t", "ZeRO")

# -- activations under tensor and sequence parallelism -----------------------------------------------
n_split = R.constant("activation_numbers_tp_split_per_width", "12 /token",
                     "activation numbers per width a tensor-parallel layer splits over its ranks: Q, K, V, the "
                     "output projection's input, the GeLU's input 4 and output 4", "c", "act,TP",
                     source="Korthikanti et al. 2022, sec. 4.2.1: the 24 of sbh(10 + 24/t + 5as/(ht))")
b_split = n_split * beta_a
b_rest = (n_num - n_split) * beta_a + n_msk * beta_mask            # the 10: layer-norm inputs, QKV and MLP inputs, masks
b_score = (n_num_s * beta_a + n_msk_s * beta_mask) * n_heads * L / L_1   # the 5as/h part, per token
rest_split = 1 - sigma + sigma / t
a_tp = R.derived(
    "activation_bytes_per_token_layer_tp", (b_rest * rest_split + b_split / t) * d_model + b_score / t,
    "byte/token",
    "activation bytes a chip keeps per token per layer under tensor parallelism, without recomputation "
    "(Korthikanti et al.: sbh(10 + 24/t + 5as/(ht)), the 10 split too with sequence parallelism)",
    "m", "act,TP")
R.derived(
    "activation_bytes_per_token_layer_tp_selective", (b_rest * rest_split + b_split / t) * d_model, "byte/token",
    "activation bytes a chip keeps per token per layer under tensor parallelism with the attention "
    "scores recomputed (selective recomputation)", "m", "act,TP,sel")
a_tp_full = R.derived(
    "activation_bytes_per_token_layer_tp_full", a_ck * rest_split, "byte/token",
    "activation bytes a chip keeps per token per layer with full recomputation: the layer's input, split "
    "with sequence parallelism", "m", "act,TP,full")
R.derived(
    "train_memory_per_chip_layout", m_state + D_b / d * n_layers / (p * c_1) * a_tp_full, "byte/chip",
    "training memory each chip needs under the layout with full recomputation: its training state, and "
    "the layer inputs of its data-parallel replica's whole batch for its stage's layers (an upper bound: "
    "a 1F1B schedule keeps at most train_pp micro-batches in flight)", "m", "train,layout")

# -- pipeline bubbles, both conventions ------------------------------------------------------------
v = R.workload("virtual_stages", "", "model chunks each chip holds in an interleaved pipeline schedule", "v",
               default="1", source="Narayanan et al. 2021, sec. 2.2.2 (1: the plain 1F1B schedule)",
               whole=True, most=STEPS)
R.derived("training_bubble_ratio", (P - 1) / m, "",
          "pipeline bubble time over the ideal step time (the Megatron papers' convention)", "b", "PP")
R.derived("training_bubble_ratio_interleaved", (P - 1) / (v * m), "",
          "bubble time over ideal time with v model chunks per chip (interleaved 1F1B)", "b", "PP,v")

# -- the recompute setting, and a run's time at the FLOP/s it achieved ------------------------------
# Narayanan et al. 2021 (Megatron-LM, sec. 5.1, eq. 4) time a run as 8·T·P/(n·X): T tokens, P
# parameters, n GPUs each achieving X FLOP/s of hardware work, recomputation included (8 = 6 + 2, the
# forward pass re-run). The model FLOPs are 6·T·P whatever the recompute setting: MFU counts those,
# HFU the ones executed.
r_set = R.workload("recompute", "", "activation recomputation of the training run: 0 none or selective "
                   "(attention's cheap parts only: no weight FLOPs), 1 full (the forward pass re-run in the "
                   "backward)", "r", "re", default="0",
                   source="none unless given; Korthikanti et al. 2022, sec. 5: selective recomputation adds "
                          "2.7% of the FLOPs at 175B, full adds a forward pass",
                   zero=True, most=(1, "a switch: 1 with full recomputation, 0 without (or selective)"))
c_hw = R.derived("train_hardware_flop_per_param_token", c_train + r_set * c_F, "FLOP/parameter/token",
                 "FLOP per parameter per training token the chips execute: 6, and 2 more with full "
                 "recomputation", "c", "hw")
X = R.workload("achieved_train_flops", "FLOP/s/chip", "hardware FLOP/s each chip achieved in training, "
               "recomputation included (Megatron-LM's X): a measurement, given with --set", "X", "train")
R.derived("training_time_achieved", c_hw * N_active * D_pre / (S * X), "day",
          "wall-clock pre-training time at an achieved hardware FLOP/s per chip: Megatron-LM's 8·T·P/(n·X) "
          "with full recomputation, 6·T·P/(n·X) without", "t", "X",
          note="Narayanan et al. 2021, sec. 5.1, eq. 4")
# Narayanan et al. 2021, eq. 3: 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) FLOPs an iteration, full recomputation
# included: the weights' 8 per parameter and four forward passes of the attention (all s² pairs there:
# causal_pair_share = 1 reproduces it). Here the attention is counted at the run's recompute setting too.
C_hw_tok = R.derived(
    "train_hardware_flop_per_token", c_hw * N_active + (c_passes + r_set) * att_fwd, "FLOP/token",
    "training FLOPs per token the chips execute at the run's recompute setting: the weights' 6 (8 with full "
    "recomputation) per parameter and the attention's three forward passes (four)", "C", "hw,attn",
    note="Narayanan et al. 2021 (Megatron-LM), eq. 3, divided by the B·s tokens of an iteration")
R.derived("training_time_achieved_with_attention", C_hw_tok * D_pre / (S * X), "day",
          "wall-clock pre-training time at an achieved hardware FLOP/s per chip, the attention's FLOPs counted "
          "(Megatron-LM's eq. 3 over n·X); training_time_achieved is the 8·T·P/(n·X) beside it",
          "t", "X,attn", note="Narayanan et al. 2021, sec. 5.1, eq. 3")
R.derived("training_hfu_achieved", X / F_train, "",
          "hardware FLOP utilisation of the run: achieved over peak FLOP/s", "HFU", "X", share=True)
R.derived("training_mfu_achieved", X * c_train / (c_hw * F_train), "",
          "model FLOP utilisation of the run: the model's 6 FLOP per parameter per token, at the achieved "
          "rate, over peak FLOP/s (below the HFU by the recomputation)", "MFU", "X", share=True)

# -- the default training time: the model's FLOPs with attention (training.py's section) -------------
# Megatron-LM's eq. 3 counts the weights (the output head's logits among them) and the attention; the
# lecture's 6·N·D (training_time_6nd) leaves the attention out, a few percent at a 2k to 8k sequence.
R.resume("training_time")
t_train = R.derived(
    "training_time", C_tok_att * D_pre / (S * F_train * u_train), "day",
    "wall-clock pre-training time: every token's FLOPs, the weights' 6 per active parameter and the causal "
    "attention over a sequence of context, over the chips' delivered FLOP/s", "t", "train",
    note="Narayanan et al. 2021 (Megatron-LM), eq. 3 without recomputation; training_time_6nd is the lecture's 6·N·D")
R.derived("training_chip_hours", S * t_train, "chip*hour",
          "chip-hours of pre-training", "H", "train")
R.derived("training_cost", price * S * t_train, "USD",
          "rental cost of pre-training at the chip's rental price", "c", "train")
