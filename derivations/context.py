"""Context length: where the KV fetch overtakes compute.

Seed 004 lines 87, 89, 91, 85: the KV fetch grows linearly with batch, like compute; their
slopes match at one context length, "equally memory bound and compute bound". Beyond it no
batch is compute bound. Sparse attention changes the KV term: the lecture's √L, and
DeepSeek's top-k selection (an indexer over all L tokens, full KV for k of them).
"""
import sympy as sp

from .inputs import HEADS, WIDTH
from .inputs import R, B, L, S, F, W, b_kv, a_attn, k_sel, b_idx, L_ref, c_MAC, n_layers, n_score
from .roofline import t_compute, t_compute_w, t_attn, t_kv, t_mem, t_weights

R.section(
    "context", "How long can the context get before memory wins?",
    seeds=("004:87", "004:89", "004:91", "004:85"),
    question="At what context length does reading the KV cache cost as much per sequence as "
             "computing its token, and what utilisation is left beyond it?",
    takeaway="On {hardware}, {model}'s KV fetch matches compute at {context_crossover}; "
             "at {context} a very large batch reaches an MFU of {mfu_large_batch}. Its attention "
             "FLOPs match its weight FLOPs at {attention_crossover}.",
    featured=("context_crossover", "attention_crossover", "mfu", "mfu_large_batch",
              "kv_fetch_time_sqrt", "kv_fetch_time_topk", "compute_time_attention_topk"),
)

eq_slopes = R.equation(
    "kv_slope_equals_compute_slope", sp.diff(R.expand(t_kv), B), sp.diff(R.expand(t_compute), B),
    "per added sequence, KV fetch time equals compute time")
L_star = R.derived(
    "context_crossover", R.solve(eq_slopes, L), "token/sequence",
    "context length at which the KV fetch per sequence takes as long as its compute", "L", "*",
    how="solved d(kv_fetch_time)/dB = d(compute_time)/dB for context",
    valid="attention compute grows faster with the context than the KV fetch "
          "(attention FLOP per cached token / peak FLOP/s > KV bytes per token / HBM bandwidth), "
          "so the KV fetch never catches up with compute")

mfu = R.derived(
    "mfu", sp.Min(1, t_compute / t_mem), "",
    "fraction of peak compute used in a step (roofline: compute over step time)", "MFU", share=True)
mfu_inf = R.derived(
    "mfu_large_batch",
    R.limit(lambda: R.closed_form("mfu", keep=("weight_fetch_time",))
            .xreplace({t_weights: R.closed_form("weight_fetch_time_all")}), B, sp.oo), "",
    "MFU as the batch grows without bound: 1 below the crossover, less beyond it",
    "MFU", "∞", how="limit of mfu as batch → ∞ (the bounded weight fetch drops out)", share=True)

# Where attention compute starts to matter (the lecture: "in the millions of tokens",
# chapters-3-7.md#C-04): the context at which a token's attention FLOPs equal its weight FLOPs.
L_attn = R.derived(
    "attention_crossover", R.solve(R.equation(
        "attention_equals_weight_compute", t_attn, t_compute_w,
        "per token, attention FLOPs equal the weight FLOPs"), L), "token/sequence",
    "context length at which attention compute equals the weight multiplies", "L", "attn",
    how="solved compute_time_attention = compute_time_weights for context")

t_kv_sqrt = R.derived(
    "kv_fetch_time_sqrt", B * sp.sqrt(L * L_ref) * b_kv / (S * W), "s",
    "KV fetch if attention reads only √L tokens per sequence (the lecture's sparse form)",
    "t", "KV,√")
topk_fetch = B * (L * b_idx + k_sel * b_kv) / (S * W)
t_kv_topk = R.derived(
    "kv_fetch_time_topk", topk_fetch, "s",
    "KV fetch with top-k selection: an index over all L tokens, full KV for k of them",
    "t", "KV,top-k")
# The power of L the fetch grows as near a context (1/2 for the lecture's √L, 1 for a linear fetch):
# the number the √L sentence is sized on, since top-k selection has no single power.
R.derived(
    "kv_fetch_power_topk", sp.cancel(L * sp.diff(topk_fetch, L) / topk_fetch), "",
    "the power of the context length the top-k KV fetch grows as near this context (L·∂t/∂L over t): "
    "1/2 for a √L fetch, 1 for a linear one", "p", "L,top-k",
    how="L·∂(kv_fetch_time_topk)/∂L / kv_fetch_time_topk")
h_idx = R.workload("index_heads", "", "heads of the sparse-attention indexer", "h", "idx",
                   default="64", source="DeepSeek-V3.2-Exp config: index_n_heads 64",
                   whole=True, most=HEADS)
d_idx = R.workload("index_head_dim", "", "width of one indexer head", "d", "idx",
                   default="128", source="DeepSeek-V3.2-Exp config: index_head_dim 128",
                   whole=True, most=WIDTH)
a_idx = R.derived(
    "index_flops_per_token", c_MAC * n_score * n_layers * h_idx * d_idx, "FLOP/token",
    "indexer FLOP per cached token for one new token: one score per indexer head", "a", "idx")
R.derived(
    "compute_time_attention_topk", B * (L * a_idx + k_sel * a_attn) / (S * F), "s",
    "attention compute with top-k selection: the indexer scores all L tokens, full attention "
    "over k of them", "t", "attn,top-k")
