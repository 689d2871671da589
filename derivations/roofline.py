"""The roofline of one decode step: compute time against memory time.

Seed 000 @ 1:49 sets it up: "the time must be greater than or equal to" the larger of the
time to fetch memory (the weights, then the KV cache) and the time to compute. S chips
serve one copy of the model, so each term divides by S: weight fetch and compute are
shared out across the chips, the balance batch later is not (S cancels).
"""
import sympy as sp

from .inputs import R, B, L, S, F, W, N_total, N_active, beta_w, b_kv, c_F, delta

R.section(
    "roofline", "How long does one decode step take?",
    seeds=("000@1:49",),
    question="For a batch of B sequences, each gaining one token, what is the least time one "
             "step can take on S chips?",
    takeaway="At the lecture's batch of {batch} on {hardware}, one step of {model} takes at "
             "least {step_time}; it is {bound} bound.",
    featured=("compute_time", "weight_fetch_time", "kv_fetch_time", "step_time"),
)

t_compute = R.derived(
    "compute_time", c_F * delta * B * N_active / (S * F), "s",
    "time to multiply every active parameter once per token of the batch", "t", "compute")
t_weights = R.derived(
    "weight_fetch_time", N_total * beta_w / (S * W), "s",
    "time to read every weight from HBM once per step", "t", "weights")
t_kv = R.derived(
    "kv_fetch_time", B * L * b_kv / (S * W), "s",
    "time to read every sequence's KV cache once per step", "t", "KV")
t_mem = R.derived(
    "memory_time", t_weights + t_kv, "s", "time to read weights and KV cache", "t", "mem")
t_step = R.derived(
    "step_time", sp.Max(t_compute, t_mem), "s",
    "roofline lower bound on one decode step: the larger of compute and memory time",
    "t", "step")

# The lecture's first picture sets the KV cache aside (seed 004, line 75: "For now, I'm going
# to discard the [KV]"): the step is then the larger of compute and the weight fetch.
R.derived(
    "step_time_weights_only", sp.Max(t_compute, t_weights), "s",
    "step time with the KV fetch set aside, as the lecture first draws it", "t", "step,w")
