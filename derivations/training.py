"""RL and over-training beyond Chinchilla (chapter 5 of the lecture, from 1:19).

The seeds stop before this chapter; what it claims is restated in the lecture notes'
chapters-3-7.md, ids T-01 to T-12, cited as ``chapters-3-7.md#T-02``.

A model's life costs compute three ways (T-02 to T-04): pre-training, 6·N_active·D_pre FLOP
(2 forward + 4 backward per parameter per token); RL, k_RL·N_active·D_RL/η_RL (k_RL between 2
and 6, η_RL the low MFU of the decode-heavy rollouts); and inference, 2·N_active·D_inf/η_inf.
The lecture sets the three about equal (T-05), the equal-cost heuristic of T-01, and reads off
token budgets (T-06). Here SymPy derives when that heuristic is exact: for a cost
a·x^−p + b·x^q the optimum has p·A = q·B, so A = B only when p = q. Chinchilla's 20 tokens per
parameter then says how far past compute-optimal a model is trained (T-11), and the
pre-training FLOP, at a stated MFU on a stated number of chips, give the training time,
chip-hours and rental cost.
"""
import sympy as sp

from .inputs import R, F, S, N_active, c_F

# -- what a model's life costs: pre-training, RL, inference --------------------------------
R.section(
    "training_compute", "What does a model cost over its life: pre-training, RL and inference?",
    seeds=(),
    chapter="training",
    question="How many FLOP do pre-training, RL and inference take, and at what token budgets "
             "are the three equal (the lecture's equal split, chapters-3-7.md#T-05, #T-06)?",
    takeaway="{model}: pre-training on {pretrain_tokens} takes {pretrain_compute}; RL on "
             "{rl_tokens} {rl_compute} and serving {inference_tokens} {inference_compute}. RL costs "
             "as much as pre-training at {rl_tokens_equal_cost}, inference at "
             "{inference_tokens_equal_cost}.",
    featured=("train_flop_per_param_token", "pretrain_compute", "rl_compute", "inference_compute",
              "lifecycle_compute", "pretrain_share", "rl_tokens_equal_cost",
              "inference_tokens_equal_cost", "pretrain_over_rl_tokens", "lifetime_inference_tokens"),
)

c_bwd = R.constant("backward_flop_per_param_token", "4 FLOP/parameter/token",
                   "FLOP per parameter per token of the backward pass: the gradients with respect to "
                   "the activations and to the weights, one multiply-accumulate each",
                   "c", "bwd",
                   source="Kaplan et al. 2020, Scaling Laws for Neural Language Models, sec. 2.1 "
                          "(backward pass ≈ twice the forward); the lecture's 2 forward + 4 backward "
                          "(chapters-3-7.md#T-02)")
D_pre = R.workload("pretrain_tokens", "token", "tokens seen in pre-training", "D", "pre",
                   default="200e12 token",
                   source="the lecture's frontier guess: pre-training on ~200 T tokens "
                          "(chapters-3-7.md#T-11)")
D_RL = R.workload("rl_tokens", "token", "tokens generated and trained on in RL", "D", "RL",
                  default="133e12 token",
                  source="the lecture's D_pre ≈ 1.5·D_RL (chapters-3-7.md#T-06) with D_pre = 200 T tokens")
D_inf = R.workload("inference_tokens", "token", "tokens served over the model's life", "D", "inf",
                   default="200e12 token",
                   source="the lecture's 'about 200 trillion tokens' served per model "
                          "(chapters-3-7.md#T-09)")
k_RL = R.workload("rl_flop_per_param_token", "FLOP/parameter/token",
                  "FLOP per parameter per RL token: 2 for forward-only rollouts up to 6 when every "
                  "token is also trained on", "k", "RL", default="4 FLOP/parameter/token",
                  source="the middle of the lecture's range, 2 to 6 (chapters-3-7.md#T-03)")
eta_RL = R.workload("rl_efficiency", "", "RL's MFU relative to pre-training (decode-heavy rollouts)",
                    "η", "RL", default="0.3",
                    source="the lecture's η ≈ 30% (chapters-3-7.md#T-06)")
eta_inf = R.workload("inference_efficiency", "", "inference's MFU relative to pre-training",
                     "η", "inf", default="0.3",
                     source="the lecture's η ≈ 30% (chapters-3-7.md#T-06)")

c_train = R.derived(
    "train_flop_per_param_token", c_F + c_bwd, "FLOP/parameter/token",
    "FLOP per parameter per training token: forward plus backward (6)", "c", "train")
C_pre = R.derived(
    "pretrain_compute", c_train * N_active * D_pre, "FLOP",
    "pre-training compute: 6·N_active·D_pre", "C", "pre")
C_RL = R.derived(
    "rl_compute", k_RL * N_active * D_RL / eta_RL, "FLOP",
    "RL compute in pre-training-equivalent FLOP (machine time at pre-training's MFU)", "C", "RL")
C_inf = R.derived(
    "inference_compute", c_F * N_active * D_inf / eta_inf, "FLOP",
    "inference compute in pre-training-equivalent FLOP (machine time at pre-training's MFU)",
    "C", "inf")
C_life = R.derived(
    "lifecycle_compute", C_pre + C_RL + C_inf, "FLOP",
    "compute over the model's life: pre-training + RL + inference", "C", "life")
R.derived("pretrain_share", C_pre / C_life, "",
          "pre-training's share of the lifecycle compute (the lecture assumes about ⅓)", "f", "pre", share=True)

eq_rl = R.equation("rl_equals_pretrain", C_RL, C_pre,
                   "the equal split: RL costs as much as pre-training")
D_RL_eq = R.derived(
    "rl_tokens_equal_cost", R.solve(eq_rl, D_RL), "token",
    "RL tokens at which RL costs as much as pre-training", "D", "RL,eq",
    how="solved rl_compute = pretrain_compute for rl_tokens")
eq_inf = R.equation("inference_equals_pretrain", C_inf, C_pre,
                    "the equal split: inference costs as much as pre-training")
D_inf_eq = R.derived(
    "inference_tokens_equal_cost", R.solve(eq_inf, D_inf), "token",
    "tokens served at which inference costs as much as pre-training", "D", "inf,eq",
    how="solved inference_compute = pretrain_compute for inference_tokens")
R.equation("inference_tokens_equal_cost_is_eta_times_pretrain", D_inf_eq,
           (c_train / c_F) * eta_inf * D_pre,
           "equal inference and pre-training cost: D_inf = 3·η_inf·D_pre (≈ D_pre at η ≈ 30%)",
           identity=True)
R.derived("pretrain_over_rl_tokens", D_pre / D_RL_eq, "",
          "pre-training tokens over RL tokens at equal cost: k_RL/(6·η_RL) (the lecture's ≈ 1.5)",
          "r", "pre/RL", how="pretrain_tokens / rl_tokens_equal_cost")

# Lifetime inference tokens from a provider's traffic (T-09).
r_traffic = R.workload("traffic_rate", "token/s", "tokens per second a provider serves, all models",
                       "r", "traffic", default="500e6 token/s",
                       source="the lecture's ~500 million tokens/s (chapters-3-7.md#T-09)")
t_deploy = R.workload("deployment_time", "day", "how long one model serves before it is replaced",
                      "t", "deploy", default="60 day",
                      source="the lecture's 2 months (chapters-3-7.md#T-09)")
n_family = R.workload("models_sharing_traffic", "", "models the traffic is divided over", "n", "models",
                      default="10",
                      source="the lecture's 5–10 models, ~50 million tokens/s each (chapters-3-7.md#T-09)")
R.derived("lifetime_inference_tokens", r_traffic * t_deploy / n_family, "token",
          "tokens one model serves over its deployment: its share of the traffic × the time",
          "D", "life")

# -- the equal-cost heuristic -----------------------------------------------------------------
R.section(
    "equal_cost", "When is splitting the cost equally optimal?",
    seeds=(),
    chapter="training",
    question="Minimising A(x) + B(x), one term falling and one rising, the lecture puts the optimum "
             "near A = B (chapters-3-7.md#T-01). For power laws A = a·x^−p, B = b·x^q, where exactly "
             "is it?",
    takeaway="At the optimum p·A = q·B: A/B = {equal_cost_ratio}, and splitting the cost equally "
             "instead costs {equal_cost_penalty} times the optimum.",
    featured=("equal_cost_optimum", "equal_cost_falling", "equal_cost_rising", "equal_cost_ratio",
              "equal_cost_point", "equal_cost_penalty"),
)

a_fall = R.workload("falling_scale", "", "coefficient a of the falling cost a·x^−p", "a",
                    default="1", source="the lecture's exact case a/x + b·x (chapters-3-7.md#T-01)")
b_rise = R.workload("rising_scale", "", "coefficient b of the rising cost b·x^q", "b",
                    default="1", source="the lecture's exact case a/x + b·x (chapters-3-7.md#T-01)")
p_fall = R.workload("falling_exponent", "", "exponent p of the falling cost a·x^−p", "p",
                    default="1", source="the lecture's exact case a/x + b·x (chapters-3-7.md#T-01)")
q_rise = R.workload("rising_exponent", "", "exponent q of the rising cost b·x^q", "q",
                    default="1", source="the lecture's exact case a/x + b·x (chapters-3-7.md#T-01)")

_x = sp.Symbol("equal_cost_unknown", positive=True)


def _cost(x):
    return a_fall * x ** -p_fall + b_rise * x ** q_rise


_opt = R.roots(lambda: sp.diff(_cost(_x), _x), 0, _x, key=("roots", "equal_cost_optimum"))
_eq = R.roots(lambda: a_fall * _x ** -p_fall, lambda: b_rise * _x ** q_rise, _x,
              key=("roots", "equal_cost_point"))
if len(_opt) != 1 or len(_eq) != 1:  # pragma: no cover - SymPy found other roots
    raise ValueError(f"equal_cost: expected one root each, got {_opt} and {_eq}")

x_opt = R.derived(
    "equal_cost_optimum", _opt[0], "", "x at which a·x^−p + b·x^q is least", "x", "*",
    how="solved d/dx (a·x^−p + b·x^q) = 0 for x")
A_opt = R.derived("equal_cost_falling", a_fall * x_opt ** -p_fall, "",
                  "the falling term A = a·x^−p at the optimum", "A", "*")
B_opt = R.derived("equal_cost_rising", b_rise * x_opt ** q_rise, "",
                  "the rising term B = b·x^q at the optimum", "B", "*")
R.equation("equal_cost_weighted_balance", p_fall * A_opt, q_rise * B_opt,
           "at the optimum the terms balance weighted by their exponents: p·A = q·B "
           "(A = B exactly when p = q)", identity=True)
R.derived("equal_cost_ratio",
          R.kept(("simplified", "equal_cost_ratio"), lambda: sp.simplify(R.expand(A_opt / B_opt))),
          "", "falling over rising term at the optimum: q/p (1 for the lecture's a/x + b·x)", "ρ", "*",
          how="equal_cost_falling / equal_cost_rising, simplified by SymPy")
x_eq = R.derived(
    "equal_cost_point", _eq[0], "", "x at which the two terms are equal (the heuristic's choice)",
    "x", "eq", how="solved a·x^−p = b·x^q for x")
R.derived("equal_cost_penalty", _cost(x_eq) / (A_opt + B_opt), "",
          "total cost at the equal split over the least total cost (≥ 1; 1 when p = q)", "P", "eq",
          how="(a·x^−p + b·x^q) at equal_cost_point over the same at equal_cost_optimum")

# -- Chinchilla and over-training ---------------------------------------------------------------
R.section(
    "overtraining", "How far past Chinchilla is a model trained?",
    seeds=(),
    chapter="training",
    question="Chinchilla-optimal training uses about 20 tokens per parameter; how many times "
             "that does a model see (chapters-3-7.md#T-11)?",
    takeaway="{model} is Chinchilla-optimal at {chinchilla_tokens}; on {pretrain_tokens} it is "
             "over-trained {overtraining_factor} times.",
    featured=("chinchilla_tokens", "overtraining_factor", "tokens_per_param"),
)

r_chin = R.constant("chinchilla_tokens_per_param", "20 token/parameter",
                    "compute-optimal training tokens per parameter", "r", "Chin",
                    source="Hoffmann et al. 2022, Training Compute-Optimal Large Language Models "
                           "(Chinchilla: 70 B parameters, 1.4 T tokens); the lecture's 20 "
                           "(chapters-3-7.md#T-11)")
D_chin = R.derived("chinchilla_tokens", r_chin * N_active, "token",
                   "compute-optimal pre-training tokens: 20 per active parameter (the lecture counts "
                   "active parameters for a sparse model)", "D", "Chin")
R.derived("overtraining_factor", D_pre / D_chin, "",
          "pre-training tokens over the Chinchilla-optimal tokens", "o", "train")
R.derived("tokens_per_param", D_pre / N_active, "token/parameter",
          "pre-training tokens per active parameter", "r", "D/N")

# -- training time and cost ----------------------------------------------------------------------
R.section(
    "training_time", "How long does pre-training take, and what does it cost?",
    seeds=(),
    chapter="training",
    question="At a stated MFU on a stated number of chips, how many days, chip-hours and dollars "
             "do the pre-training FLOP take?",
    takeaway="{model} on {pretrain_tokens} in sequences of {context}: {training_time} on {chips} of {hardware} at "
             "{training_mfu} MFU ({training_time_6nd} counting 6·N·D alone), or {training_chip_hours} "
             "(training_cost prices them where the chip has a rental price).",
    featured=("training_time", "training_time_6nd", "training_chip_hours", "training_cost"),
)

u_train = R.workload("training_mfu", "", "model FLOP utilisation of pre-training", "u", "train",
                     default="0.4",
                     source="Llama 3 paper (Dubey et al. 2024), Table 4: 38–43% BF16 MFU on 8–16 K H100s")
# The lecture's 6·N·D time; the default training_time (training_layout.py) adds the attention's FLOPs.
R.derived(
    "training_time_6nd", C_pre / (S * F * u_train), "day",
    "wall-clock pre-training time as the lecture counts it: 6 FLOP per active parameter per token over the "
    "chips' delivered FLOP/s (attention left out)", "t", "train,6ND")
