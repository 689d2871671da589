"""Prefill as it runs: the prompt's causal attention and the experts its tokens touch.

Chapter 6's ``pass_time`` is the lecture's reading of a pass (chapters-3-7.md#D-02): the compute
multiplied by the new tokens, the weight and KV reads left as a decode step has them, attention
set aside. That is the board's argument for why prefill is compute-bound. Two things it leaves
out change the numbers a user measures:

* attention: a prompt of n tokens processed from scratch attends causally, each token to the
  ones before it, so the (query, key) pairs are about n²/2 per sequence and the attention FLOPs
  grow with the square of the prompt (Vaswani et al. 2017; Kaplan et al. 2020, Table 1, count
  2·n_layer·n_ctx·d_attn FLOP per token for attention, over the whole context);
* the experts: a prefill routes every prompt token, B·n of them, not B, so an MoE prefill of
  any real prompt touches nearly every expert.

The first token is sampled from the prefill's last position, so the time to first token is the
prefill's time (queueing apart).
"""
import sympy as sp

from .inputs import R, B, S, F, W, E, k, tau, delta, beta_w, a_attn
from .prices import n_pass, t_pass_c
from .roofline import N_always, N_routed
from .textbook import fwd_params

R.section(
    "prefill", "How long does a prefill take, counting its attention and the experts it touches?",
    seeds=(),
    chapter="prices",
    question="A batch of B prompts of pass_tokens tokens each, processed from scratch: how many "
             "FLOPs does the causal attention add to the weights' 2·N_active per token, how many "
             "experts do the prompt's tokens touch, and how long until the first token?",
    takeaway="{model} on {chips} of {hardware}: a prefill of {batch} prompts of {pass_tokens} spends "
             "{prefill_attention_share} of its FLOPs in attention, touches {prefill_expert_fraction} of "
             "the routed experts and takes {prefill_time}, so the first token comes after "
             "{time_to_first_token} ({pass_time} without attention and reading only a decode step's "
             "experts).",
    featured=("prefill_attention_flops", "prefill_attention_share", "prefill_compute_time",
              "prefill_expert_fraction", "prefill_weight_fetch_time", "prefill_time", "time_to_first_token"),
)

c_causal = R.constant("causal_pair_share", "0.5",
                      "share of a prompt's (query, key) pairs a causal mask keeps: each token attends to the "
                      "ones before it", "c", "causal",
                      source="causal self-attention (Vaswani et al. 2017): n(n+1)/2 of n² pairs, about half")

att = R.derived(
    "prefill_attention_flops", c_causal * n_pass ** 2 * a_attn / delta, "FLOP/sequence",
    "attention FLOPs of one prompt processed from scratch: every token against the ones before it",
    "C", "attn,pre")
w_flops = fwd_params * n_pass   # the weights' FLOPs of one prompt: the forward pass's per token, per prompt token
R.derived("prefill_attention_share", att / (w_flops + att), "",
          "share of a prefill's FLOPs spent in attention", "f", "attn,pre")
t_c = R.derived(
    "prefill_compute_time", t_pass_c + B * att / (S * F), "s",
    "compute time of a prefill of B prompts: every prompt token through the active weights, and the "
    "causal attention", "t", "compute,pre")
f_pre = R.derived(
    "prefill_expert_fraction", 1 - (1 - k / E) ** (B * n_pass / tau), "",
    "expected share of routed experts a prefill touches: each of its B·pass_tokens tokens picks k of E "
    "(uniform, independent routing)", "f", "read,pre")
t_w = R.derived(
    "prefill_weight_fetch_time", (N_always + N_routed * f_pre) * beta_w / (S * W), "s",
    "time to read the weights a prefill uses: the always-read ones and every expert its tokens touch",
    "t", "weights,pre")
t_pre = R.derived(
    "prefill_time", sp.Max(t_c, t_w), "s",
    "roofline time of a prefill from scratch: its compute with attention, or its weight reads (the "
    "prompt's KV is written, not read)", "t", "pre")
R.derived("time_to_first_token", t_pre, "s",
          "time to the first token: the prefill, whose last position gives it (queueing apart)", "t", "TTFT")
