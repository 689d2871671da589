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

A prefix cache (vLLM's automatic prefix caching, SGLang's RadixAttention, DeepSeek's on-disk KV
cache) keeps the KV cache of prompts seen before: a prompt whose first share h of tokens is a hit
computes only the other (1 − h)·n, each of which still attends to every token before it, cached or
not, so the attention pairs are (n² − (h·n)²)/2. A published prefill rate that counts the cached
tokens is judged with its share.
"""
import sympy as sp

from .inputs import R, B, S, F, W, E, k, tau, delta, beta_w, a_attn, c_F
from .layout import LAYOUT, dp, ep, pp, tp, t_w_min
from .textbook import c_1
from .prices import n_pass
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

h_cache = R.workload("prefix_cache_share", "", "share of a prompt's tokens whose KV cache is already held (a "
                     "prefix-cache hit): the prefill computes only the others", "h", "cache", default="0",
                     share=True,
                     zero=True, below=(1, "a share of the prompt; at 1 nothing is left to prefill"))
n_new = n_pass * (1 - h_cache)   # the prompt tokens a prefill computes


def at_prompt(name: str, base: str, meaning: str, sym: str, sub: str):
    """``base``, a decode step's collective, with every prompt token the prefill computes in place of
    the one new token: the same form at tokens_per_step = pass_tokens·(1 − prefix_cache_share)."""
    return R.derived(name, R.at(base, {delta: n_new}), "s", meaning, sym, sub,
                     how=f"{base} at tokens_per_step = pass_tokens·(1 − prefix_cache_share)")

c_causal = R.constant("causal_pair_share", "0.5",
                      "share of a prompt's (query, key) pairs a causal mask keeps: each token attends to the "
                      "ones before it", "c", "causal",
                      source="causal self-attention (Vaswani et al. 2017): n(n+1)/2 of n² pairs, about half")

att = R.derived(
    "prefill_attention_flops", c_causal * n_pass ** 2 * (1 - h_cache ** 2) * a_attn / delta, "FLOP/sequence",
    "attention FLOPs of one prompt: every token it computes against the ones before it (cached or not)",
    "C", "attn,pre")
w_flops = fwd_params * n_new    # the weights' FLOPs of one prompt: the forward pass's per token, per token computed
R.derived("prefill_attention_share", att / (w_flops + att), "",
          "share of a prefill's FLOPs spent in attention", "f", "attn,pre", share=True)
t_c = R.derived(
    "prefill_compute_time", R.at("pass_compute_time", {n_pass: n_new}) + B * att / (S * F), "s",
    "compute time of a prefill of B prompts: every prompt token not in the prefix cache through the active "
    "weights, and the causal attention", "t", "compute,pre")
f_pre = R.derived(
    "prefill_expert_fraction", 1 - (1 - k / E) ** (B * n_new / tau), "",
    "expected share of routed experts a prefill touches: each of its B·pass_tokens tokens picks k of E "
    "(uniform, independent routing)", "f", "read,pre", share=True)
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

# -- under a layout (layout.py): one chip of one stage ------------------------------------------
# The prompt's tokens go through the chip's share of the weights as a decode step's do, each a
# pass_tokens times over: the compute and the collectives grow with the prompt, the weight reads
# do not (an expert any of the B·pass_tokens tokens touches is read once).
t_c_l = R.derived(
    "prefill_compute_time_layout",
    (B / dp * (c_F * n_new * N_always + att) / tp + c_F * n_new * B * k / E * N_routed / ep) / (pp * F * c_1), "s",
    "compute of one chip in one stage during a prefill: its group's prompts through its share of the attention "
    "and dense layers (with the causal attention), and the prompt tokens routed to its experts", "t", "compute,pre,layout")
t_w_l = R.derived(
    "prefill_weight_fetch_time_layout",
    (N_always / tp + sp.Max(E * f_pre / ep, 1) * N_routed / E) * beta_w / (pp * W * c_1), "s",
    "time for one chip of one stage to read its share of the always-read weights and the experts it holds "
    "that the prompts' tokens touch", "t", "weights,pre,layout")
# the decode step's collectives with every prompt token in place of the one new token (one- and
# two-shot apart too: eval names the all-reduce a prefill's bytes make the faster)
at_prompt("prefill_allreduce_time_one_shot", "tp_allreduce_time_one_shot",
    "a prefill's tensor-parallel all-reduces run one-shot", "t", "TP,1,pre")
at_prompt("prefill_allreduce_time_two_shot", "tp_allreduce_time_two_shot",
    "a prefill's tensor-parallel all-reduces run two-shot", "t", "TP,2,pre")
t_tp_l = at_prompt("prefill_tp_comm_time", "tp_comm_time",
    "tensor-parallel all-reduces of one stage during a prefill: two a layer over every prompt token's "
    "residual vector (the decode step's, pass_tokens times the bytes, less the cached ones)", "t", "TP,pre")
t_ep_l = at_prompt("prefill_ep_comm_time", "ep_comm_time",
    "expert dispatch and combine of one stage during a prefill: every prompt token computed sent to its experts "
    "and back", "t", "EP,pre")
R.derived(
    "prefill_time_layout", pp * (sp.Max(t_c_l, t_w_l) + t_tp_l + t_ep_l), "s",
    "prefill under the layout: in each stage compute and weight reads overlapped, then the all-reduces and the "
    "all-to-all, stage after stage", "t", "pre,layout")
R.variant("time_to_first_token", LAYOUT)

# The strict form, as DeepSeek's and SGLang's prefill runs it: two micro-batches, one computing while the
# other's all-to-all is on the wire (two-batch overlap), so a stage takes the longest of its compute, its
# weight reads and its communication, not their sum.
t_tp_min_l = at_prompt("prefill_tp_comm_time_min", "tp_comm_time_min",
    "strict lower bound on the tensor-parallel all-reduces of one stage during a prefill", "t", "TP,pre,min")
t_ep_min_l = at_prompt("prefill_ep_comm_time_min", "ep_comm_time_min",
    "strict lower bound on the expert dispatch and combine of one stage during a prefill: each computed prompt "
    "token once to each other scale-up domain holding its experts, in the dispatch format stated", "t", "EP,pre,min")
R.derived(
    "prefill_time_layout_min", pp * sp.Max(t_c_l, t_w_min, t_tp_min_l + t_ep_min_l), "s",
    "strict lower bound on a prefill under the layout: two micro-batches overlap each stage's all-reduces and "
    "all-to-all with its compute, so a stage takes the longest of its compute, its weight reads (at least one "
    "token's experts) and its communication", "t", "pre,layout,min",
    note="two-batch overlap: DeepSeek, 'Day 6: DeepSeek-V3/R1 Inference System Overview' (prefilling); "
         "SGLang's large-scale EP blog (LMSYS, 2025-05-05)")
