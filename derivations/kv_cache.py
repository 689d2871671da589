"""KV-cache bytes per token, from the architecture.

The KV term of the roofline needs bytes per token of context. Multi-head and grouped-query
attention cache one key and one value vector per KV head per layer; DeepSeek's multi-head
latent attention (MLA) caches one compressed latent plus a small RoPE key per layer.
"""
from .inputs import (R, n_layers, n_kv_heads, d_head, d_latent, d_rope, beta_kv,
                     n_kv_vec, n_lat_vec)

R.section(
    "kv_cache", "How many bytes does one token of context cost?",
    seeds=(),
    question="How many bytes of KV cache does each token of context add, for a given "
             "attention architecture?",
    takeaway="{model} caches {kv_bytes_per_token} per token of context.",
    featured=("kv_bytes_gqa", "kv_bytes_mla"),
)

b_gqa = R.derived(
    "kv_bytes_gqa", n_kv_vec * n_layers * n_kv_heads * d_head * beta_kv, "byte/token",
    "KV bytes per token, multi-head or grouped-query attention", "b", "GQA")
b_mla = R.derived(
    "kv_bytes_mla", n_lat_vec * n_layers * (d_latent + d_rope) * beta_kv, "byte/token",
    "KV bytes per token, multi-head latent attention", "b", "MLA")

# models.yaml names the attention of each model; kv_bytes_per_token is read from:
KV_BYTES_BY_ATTENTION = {"mha": "kv_bytes_gqa", "gqa": "kv_bytes_gqa", "mla": "kv_bytes_mla"}
