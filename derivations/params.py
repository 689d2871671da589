"""Parameter counts from a model's dimensions.

A model card states two numbers, total and active parameters; the roofline reads both. Here
they are counted from the architecture instead, matrix by matrix, so that a model given only
by its dimensions (a Hugging Face config.json) can be evaluated, and so that a published
count can be checked against its own config.

* Embeddings: a vocabulary × model-width matrix in, and the output head out (the same matrix
  when the two are tied). Both are counted as active, as model cards do (DeepSeek-V3 37 B,
  Mixtral 12.9 B, Qwen3-30B-A3B 3.3 B all include them).
* Attention, per layer: grouped-query attention has a query and an output projection per
  query head and a key and a value projection per KV head, each d_model × d_head. MLA
  (DeepSeek-V2 report, sec. 2.1) compresses the query to d_q and the keys and values to d_c:
  a down-projection d_model × d_q, an up-projection to every head's query (d_head wide plus
  the decoupled RoPE part d_R), a joint down-projection d_model × (d_c + d_R), an
  up-projection from the latent to every head's key and value, and the output projection.
* MLP: the first layers of some MoE models are dense (d_ff wide); the MoE layers hold E
  routed experts, the shared experts and a router (one logit weight per expert per model
  width). A token uses k routed experts and all shared ones.

Normalisation weights and biases (a few d_model-long vectors per layer) are left out: under
0.1% of any model here.
"""
from .inputs import (R, n_layers, d_model, n_heads, n_kv_heads, d_head, d_latent, d_rope, d_q,
                     E, k, n_moe, d_expert, n_shared, d_ff, V, n_emb, c_mlp, N_attn_layer, c_ffn)
from .roofline import N_routed
from .textbook import p_1 as c_w  # one parameter per entry of a weight matrix

R.section(
    "params", "How many parameters do the dimensions of a model give?",
    seeds=(),
    question="From its layers, widths, heads, vocabulary and experts, how many parameters does a "
             "model hold, and how many does each token use?",
    takeaway="{model}'s dimensions give {params_total_from_dims} in all and "
             "{params_active_from_dims} per token (published: {params_total} and {params_active}).",
    featured=("attention_params_mla", "embedding_params", "dense_mlp_params", "params_total_from_dims",
              "params_active_from_dims"),
)

c_qo = R.constant("query_output_matrices", "2 parameter",
                  "weights per (model width × head width) cell of a query head: its query and output "
                  "projections", "c", "QO",
                  source="attention: W_Q maps the residual stream to the head, W_O maps it back")
c_kv = R.constant("key_value_matrices", "2 parameter",
                  "weights per (width × head width) cell of a key/value head: its key and value "
                  "projections", "c", "KV",
                  source="attention: W_K and W_V, one each per KV head")

N_gqa = R.derived(
    "attention_params_gqa", d_model * d_head * (c_qo * n_heads + c_kv * n_kv_heads), "parameter",
    "weights of one layer's multi-head or grouped-query attention", "N", "GQA")
N_mla = R.derived(
    "attention_params_mla",
    c_w * (d_model * d_q + d_q * n_heads * (d_head + d_rope) + d_model * (d_latent + d_rope)
           + n_heads * d_head * d_model) + c_kv * d_latent * n_heads * d_head,
    "parameter",
    "weights of one layer's multi-head latent attention: query down and up, joint key-value down, "
    "key and value up, output", "N", "MLA")
N_emb = R.derived(
    "embedding_params", n_emb * V * d_model, "parameter",
    "weights of the input embedding and the output head (one matrix when tied)", "N", "emb")
N_attn = R.derived(
    "attention_params", n_layers * N_attn_layer, "parameter",
    "weights of the attention of every layer", "N", "attn,all")
n_dense = R.derived(
    "dense_layers", n_layers - n_moe, "", "layers whose MLP is dense (all of a dense model's)",
    "n", "dense")
N_dense = R.derived(
    "dense_mlp_params", n_dense * c_mlp * d_model * d_ff, "parameter",
    "weights of the dense layers' MLPs", "N", "dense")
N_shared = R.derived(
    "shared_expert_params", n_moe * n_shared * c_ffn * d_model * d_expert, "parameter",
    "weights of the shared experts (every token uses them)", "N", "shared")
N_router = R.derived(
    "router_params", n_moe * E * d_model * c_w, "parameter",
    "weights of the routers: one logit weight per expert per model width, in each MoE layer",
    "N", "router")
N_common = N_emb + N_attn + N_dense + N_shared + N_router
N_total_dims = R.derived(
    "params_total_from_dims", N_common + N_routed, "parameter",
    "total parameters counted from the dimensions: embeddings, attention, dense MLPs, shared and "
    "routed experts, routers", "N", "total,dims")
N_active_dims = R.derived(
    "params_active_from_dims", N_common + k / E * N_routed, "parameter",
    "parameters one token uses, counted from the dimensions: all but the routed experts it was "
    "not sent to", "N", "active,dims")
R.equation(
    "unused_params_are_unrouted_experts", N_total_dims - N_active_dims, (1 - k / E) * N_routed,
    "what a token leaves unused is the share of routed experts it is not sent to", identity=True)

# models.yaml names the attention of each model; attention_params_per_layer is read from:
ATTENTION_PARAMS_BY_ATTENTION = {"mha": "attention_params_gqa", "gqa": "attention_params_gqa",
                                 "mla": "attention_params_mla"}
# inputs read from a model's choice of architecture (a models.yaml field of that name): the
# value for each choice. A gated MLP has as many matrices as a gated expert.
CHOICE_INPUTS = {
    "embedding_matrices": ("embeddings", {"tied": "1 parameter", "untied": "2 parameter"}),
    "mlp_matrices": ("mlp", {"gated": R["ffn_matrices_per_expert"].default, "plain": "2 parameter"}),
}
