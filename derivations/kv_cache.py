"""KV-cache bytes and attention FLOPs per token of context, from the architecture.

The KV term of the roofline needs bytes per token of context; the attention term of the
compute time needs FLOPs per token of context. Multi-head and grouped-query attention cache
one key and one value vector per KV head per layer, and every query head takes a score
against each cached key and weights each cached value (2 · 2 · n_layers · h_q · d_head FLOP
per cached token). DeepSeek's multi-head latent attention (MLA) caches one compressed
latent plus a small RoPE key per layer; decoded in the absorbed form (DeepSeek-V2 report,
sec. 2.1.2: W_UK folded into the query, W_UV into the output) each query head scores the
latent and RoPE key (d_c + d_R multiply-accumulates) and weights the latent (d_c).
"""
from .inputs import (R, n_layers, n_kv_heads, n_heads, d_head, d_latent, d_rope, beta_kv,
                     n_kv_vec, n_lat_vec, c_MAC, n_score, n_value)

R.section(
    "kv_cache", "What does one token of context cost in bytes and FLOPs?",
    seeds=(),
    question="How many bytes of KV cache does each token of context add, and how many FLOPs "
             "does each new token spend on it, for a given attention architecture?",
    takeaway="{model}'s KV cache costs {kv_bytes_per_token} of context, and each new token "
             "spends {attention_flops_per_token} of context on attention.",
    featured=("kv_bytes_gqa", "kv_bytes_mla", "attn_flops_gqa", "attn_flops_mla"),
)

b_gqa = R.derived(
    "kv_bytes_gqa", n_kv_vec * n_layers * n_kv_heads * d_head * beta_kv, "byte/token",
    "KV bytes per token, multi-head or grouped-query attention", "b", "GQA")
b_mla = R.derived(
    "kv_bytes_mla", n_lat_vec * n_layers * (d_latent + d_rope) * beta_kv, "byte/token",
    "KV bytes per token, multi-head latent attention", "b", "MLA")
a_gqa = R.derived(
    "attn_flops_gqa", c_MAC * n_layers * n_heads * d_head * (n_score + n_value), "FLOP/token",
    "attention FLOP per cached token for one new token, multi-head or grouped-query attention",
    "a", "GQA")
a_mla = R.derived(
    "attn_flops_mla", c_MAC * n_layers * n_heads * (n_score * (d_latent + d_rope) + n_value * d_latent),
    "FLOP/token",
    "attention FLOP per cached token for one new token, multi-head latent attention (absorbed form)",
    "a", "MLA")

# models.yaml names the attention of each model; kv_bytes_per_token and
# attention_flops_per_token are read from:
KV_BYTES_BY_ATTENTION = {"mha": "kv_bytes_gqa", "gqa": "kv_bytes_gqa", "mla": "kv_bytes_mla"}
ATTENTION_FLOPS_BY_ATTENTION = {"mha": "attn_flops_gqa", "gqa": "attn_flops_gqa", "mla": "attn_flops_mla"}
