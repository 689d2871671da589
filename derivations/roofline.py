"""The roofline of one decode step: compute time against memory time.

Seed 000 @ 1:49 sets it up: "the time must be greater than or equal to" the larger of the
time to fetch memory (the weights, then the KV cache) and the time to compute. S chips
serve one copy of the model, so each term divides by S: weight fetch and compute are
shared out across the chips, the balance batch later is not (S cancels).

Two corrections to the board's first picture, each kept beside the lecture's own form:

* compute counts attention as well as the weights: each new token multiplies its query
  against every cached token (``compute_time_attention``); the lecture's weights-only
  ``compute_time_weights`` is the board form;
* an MoE step reads only the experts its tokens were routed to (section "experts read"):
  ``weight_fetch_time`` is the expectation under uniform routing, between the strict bound
  ``weight_fetch_time_min`` (only the experts one token needs, N_active) and the lecture's
  all-weights ``weight_fetch_time_all``, which it reaches at large batch.
"""
import sympy as sp

from .inputs import (R, B, L, S, F, W, N_total, N_active, beta_w, b_kv, a_attn, c_F, delta,
                     E, k, n_moe, d_model, d_expert, c_ffn, tau)

R.section(
    "roofline", "How long does one decode step take?",
    seeds=("000@1:49",),
    question="For a batch of B sequences, each gaining one token, what is the least time one "
             "step can take on S chips?",
    takeaway="At the lecture's batch of {batch} on {hardware}, one step of {model} takes at "
             "least {step_time_min} and, with uniform expert routing, about {step_time}; it is "
             "{bound} bound. Reading the KV cache after the weights instead of alongside them "
             "gives {step_time_kv_serial}.",
    featured=("compute_time", "weight_fetch_time", "kv_fetch_time", "step_time"),
)

t_compute_w = R.derived(
    "compute_time_weights", c_F * delta * B * N_active / (S * F), "s",
    "time to multiply every active parameter once per token of the batch (the lecture's compute time)",
    "t", "compute,w")
t_attn = R.derived(
    "compute_time_attention", B * L * a_attn / (S * F), "s",
    "time for each sequence's new token to attend over its whole context", "t", "attn")
t_compute = R.derived(
    "compute_time", t_compute_w + t_attn, "s",
    "compute time of one step: weight multiplies plus attention", "t", "compute")
t_weights_all = R.derived(
    "weight_fetch_time_all", N_total * beta_w / (S * W), "s",
    "time to read every weight from HBM once (the lecture's weight fetch; an MoE step's large-batch limit)",
    "t", "weights,all")
t_weights_min = R.derived(
    "weight_fetch_time_min", N_active * beta_w / (S * W), "s",
    "time to read only the weights one token needs: the strict lower bound on the weight fetch",
    "t", "weights,min")
t_kv = R.derived(
    "kv_fetch_time", B * L * b_kv / (S * W), "s",
    "time to read every sequence's KV cache once per step", "t", "KV")

# -- which experts a step reads -------------------------------------------------------------
R.section(
    "experts_read", "How many experts does one step actually read?",
    seeds=(),
    question="With B sequences each routed to k of E experts per layer, how many of the weights "
             "does a step read, and by what batch is it all of them?",
    takeaway="{model} keeps {always_read_params} always read and {routed_params} in routed "
             "experts; at the batch of {batch} a step touches {experts_touched} per MoE layer and "
             "reads {params_read}. By a batch of {expert_coverage_batch} it touches 99% of them.",
    featured=("routed_params", "always_read_params", "experts_touched", "params_read",
              "expert_coverage_batch"),
)

N_routed = R.derived(
    "routed_params", n_moe * E * c_ffn * d_model * d_expert, "parameter",
    "parameters in routed experts, from the published config (gate, up, down per expert)",
    "N", "routed")
N_always = R.derived(
    "always_read_params", N_active - k / E * N_routed, "parameter",
    "parameters every token reads (attention, dense layers, shared experts, embeddings): "
    "the active ones less the k routed experts'", "N", "always",
    valid="the routed experts of one token exceed the active parameters: check experts, "
          "experts_per_token, d_expert, moe_layers")
f_read = R.derived(
    "expert_fraction_read", 1 - (1 - k / E) ** (B * delta / tau), "",
    "expected share of routed experts a step touches: each of B·δ tokens picks k of E, uniformly "
    "and independently", "f", "read", share=True)
R.derived(
    "experts_touched", E * f_read, "",
    "expected experts touched per MoE layer in one step (uniform routing)", "E", "read", moe_only=True)
N_read = R.derived(
    "params_read", N_always + N_routed * f_read, "parameter",
    "expected parameters read from HBM in one step: the always-read ones and the touched experts",
    "N", "read")
c_cov = R.constant("expert_coverage_target", "0.99",
                   "share of routed experts taken as 'all of them'", "f", "cov",
                   source="chalkboard's choice: 99% of experts touched")
R.derived(
    "expert_coverage_batch", R.solve(R.equation(
        "fraction_read_equals_target", f_read, c_cov,
        "the batch at which a step touches the target share of experts"), B),
    "sequence", "batch at which a step touches 99% of the routed experts (uniform routing)",
    "B", "cov", how="solved expert_fraction_read = expert_coverage_target for batch", moe_only=True)
t_weights = R.derived(
    "weight_fetch_time", N_read * beta_w / (S * W), "s",
    "time to read the weights one step uses (uniform routing): N_active at batch 1, all at large batch",
    "t", "weights")

# -- the step -------------------------------------------------------------------------------
R.resume("roofline")
t_mem = R.derived(
    "memory_time", t_weights + t_kv, "s", "time to read the weights used and the KV cache", "t", "mem")
t_step = R.derived(
    "step_time", sp.Max(t_compute, t_mem), "s",
    "roofline step time, memory reads overlapped with compute: the larger of compute and memory time",
    "t", "step")
R.derived(
    "step_time_min", sp.Max(t_compute, t_weights_min + t_kv), "s",
    "strict lower bound on one step: only the experts one token needs are read", "t", "step,min")
t_serial = R.derived(
    "step_time_kv_serial", t_kv + sp.Max(t_compute, t_weights), "s",
    "step time when the KV read does not overlap the weight phase (the scaling-book's form)",
    "t", "step,serial")
R.derived(
    "step_form_gap", t_serial / t_step, "",
    "how many times longer the KV-serial form is than the overlapped one", "g", "serial")

# The lecture's first picture sets the KV cache aside (seed 004, line 75: "For now, I'm going
# to discard the [KV]"): the step is then the larger of its compute and the full weight fetch.
R.derived(
    "step_time_weights_only", sp.Max(t_compute_w, t_weights_all), "s",
    "step time with the KV fetch and attention set aside, as the lecture first draws it", "t", "step,w")
