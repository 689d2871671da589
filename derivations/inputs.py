"""What the lecture's equations read: hardware, model, workload and named constants.

Every input is declared here once. Hardware figures are per chip (one package, as sold
and rented); the unit says so (``.../chip``). Workload defaults follow the lecture's set-up:
a DeepSeek-like MoE served by one scale-up domain (a Blackwell NVL72 rack), about 2,000
sequences per batch (seed 004, line 65).
"""
from . import rules
from .core import Registry

R = Registry()

# The largest value a count may take, with why: far past anything built or published, so that no
# input (a data file, --set, --sweep) can make a rule that reads it run for minutes or exhaust memory
DEPTH = (2**16, "the deepest published models have a few hundred layers")
WIDTH = (2**24, "a width; the widest published models are about 2^15 wide")
HEADS = (2**16, "the most published attention heads are a few hundred")
EXPERTS = (2**20, "the most published experts are a few hundred per layer")
DEGREE = (10**9, "a billion chips is a thousand times the largest machine built")
STEPS = (10**6, "a million stages or micro-batches is far past any pipeline built")
MATMUL = (10**9, "a matrix dimension of a billion is far past any layer")
PROBABILITY = (1, "a probability; at 1 every drafted token is accepted, the strict bound user_speed_spec_max")

# -- hardware (hardware.yaml), per chip ---------------------------------------------------
F = R.hardware("peak_flops", "FLOP/s/chip",
               "dense peak matrix throughput of one chip in the number format in use",
               "F", field="flops_<format>")
W = R.hardware("hbm_bandwidth", "byte/s/chip", "HBM bandwidth of one chip", "W")
C_hbm = R.hardware("hbm_capacity", "byte/chip", "HBM capacity of one chip", "C", "HBM")
C_host = R.hardware("host_memory_capacity", "byte/chip",
                    "CPU memory one chip reaches over a coherent link (a Grace CPU's LPDDR5X over NVLink-C2C), "
                    "its share", "C", "host")
W_up = R.hardware("scaleup_bandwidth", "byte/s/chip",
                  "scale-up (NVLink, ICI) bandwidth of one chip, per direction", "W", "up")
D_up = R.hardware("scaleup_domain", "chip",
                  "chips in one scale-up domain (all-to-all over the fast network)", "D", "up",
                  whole=True, most=(2**20, "the largest scale-up domains built are a few hundred chips"))
W_out = R.hardware("scaleout_bandwidth", "byte/s/chip",
                   "scale-out (data-centre network) bandwidth of one chip, per direction", "W", "out")
price = R.hardware("rental_price", "USD/hour/chip", "rental price of one chip", "p")

# -- model (models.yaml) ------------------------------------------------------------------
N_total = R.model("params_total", "parameter", "total parameters of the model", "N", "total")
N_active = R.model("params_active", "parameter", "parameters used for each token", "N", "active",
                   within=("params_total", "the sparsity N_total/N_active would be below 1"))
n_layers = R.model("layers", "", "transformer layers", "n", "L",
                   whole=True, most=DEPTH)
d_model = R.model("d_model", "", "residual-stream width (numbers per token)", "d", "model",
                  whole=True, most=WIDTH)
n_kv_heads = R.model("n_kv_heads", "", "key/value heads per layer", "h", "kv",
                     whole=True, most=HEADS, within=("n_heads", "more KV heads than query heads"),
                     divides=("n_heads", "each KV head serves a whole group of query heads"))
d_head = R.model("d_head", "", "numbers per attention head vector", "d", "head",
                 whole=True, most=WIDTH)
d_latent = R.model("kv_latent_dim", "", "MLA: compressed KV latent width per layer", "d", "c",
                   whole=True, most=WIDTH)
d_rope = R.model("kv_rope_dim", "", "MLA: decoupled RoPE key width per layer", "d", "R",
                 whole=True, most=WIDTH)
E = R.model("experts", "", "routed experts per MoE layer", "E",
            whole=True, most=EXPERTS)
k = R.model("experts_per_token", "", "routed experts each token is sent to", "k",
            whole=True, most=EXPERTS, within=("experts", "a token cannot use more experts than there are"))
beta_w = R.model("bytes_per_weight", "byte/parameter",
                 "bytes per stored weight in the number format in use", "β", "w",
                 field="<format>")
beta_kv = R.model("bytes_per_kv_number", "byte",
                  "bytes per cached key/value number", "β", "kv", field="kv_format")
b_kv = R.model("kv_bytes_per_token", "byte/token",
               "KV-cache bytes per token of context, over all layers", "b", "kv",
               field="<attention>", note="derived from the architecture (section KV cache)",
               zero=True)
a_attn = R.model("attention_flops_per_token", "FLOP/token",
                 "attention FLOP one new token spends on each cached token of its context, over all layers",
                 "a", "attn", field="<attention>",
                 note="derived from the architecture (section KV cache and attention)",
                 zero=True)
n_heads = R.model("n_heads", "", "query heads per layer", "h", "q",
                  whole=True, most=HEADS)
n_moe = R.model("moe_layers", "", "layers whose MLP is a mixture of experts (0 for a dense model)", "n", "MoE",
                whole=True, zero=True, most=DEPTH, within=("layers", "more MoE layers than layers"))
d_expert = R.model("d_expert", "", "hidden width of one routed expert's MLP", "d", "E",
                   whole=True, most=WIDTH)
n_shared = R.model("shared_experts", "",
                   "shared experts per MoE layer, each as wide as a routed one (every token uses them)",
                   "E", "shared",
                   whole=True, zero=True, most=EXPERTS)
d_ff = R.model("d_ff", "", "hidden width of a dense layer's MLP", "d", "ff",
               whole=True, most=WIDTH)
V = R.model("vocab_size", "", "tokens in the vocabulary (rows of the embedding matrix)", "V",
            whole=True, most=(2**24, "the largest published vocabularies are about 2^18 tokens"))
d_q = R.model("q_latent_dim", "", "MLA: compressed query latent width per layer", "d", "q",
              whole=True, most=WIDTH)
n_emb = R.model("embedding_matrices", "parameter",
                "weights per (vocabulary × model width) cell: 1 when the output head is the input "
                "embedding (tied), 2 when it is a matrix of its own", "n", "emb", field="<embeddings>")
c_mlp = R.model("mlp_matrices", "parameter",
                "weights per (model width × MLP width) cell of a dense MLP: 3 gated (gate, up, down), "
                "2 plain (up, down)", "c", "MLP", field="<mlp>")
N_attn_layer = R.model("attention_params_per_layer", "parameter",
                       "weights of one layer's attention (query, key, value and output projections)",
                       "N", "attn", field="<attention>",
                       note="derived from the architecture (section parameters from dimensions)")

# -- workload -----------------------------------------------------------------------------
B = R.workload("batch", "sequence", "sequences decoded together in one step", "B",
               default="2000 sequence",
               whole=True, most=(10**9, "a billion sequences at once is far past any deployment"))
L = R.workload("context", "token/sequence", "context length of each sequence", "L",
               default="8192 token/sequence",
               zero=True, most=(10**9, "a billion tokens of context is a thousand times the longest window offered"))
S = R.workload("chips", "chip", "chips that serve one copy of the model", "S",
               default="=rule:serving_chips",
               whole=True, most=DEGREE)
S_rack = R.workload("rack_chips", "chip", "most chips one copy of the model is spread over: one rack", "S", "rack",
                    default="72 chip",
                    source="the lecture's unit of serving, a 72-GPU Blackwell NVL72 rack (000@1:49)")


R.rule("serving_chips", ("scaleup_domain", "rack_chips"),
       "the chip's scale-up domain, but no more than one rack (rack_chips): a TPU pod spans many racks",
       optional=("scaleup_domain",))(rules.serving_chips)
k_sel = R.workload("attn_topk", "token/sequence",
                   "tokens a top-k sparse attention reads per sequence", "k", "sel",
                   default="2048 token/sequence",
                   source="DeepSeek-V3.2-Exp report: the lightning indexer selects 2048 tokens")
b_idx = R.workload("index_bytes_per_token", "byte/token",
                   "bytes the sparse-attention indexer reads per token of context", "b", "idx",
                   default="7808 byte/token",
                   source="DeepSeek-V3.2-Exp config: one 128-number FP8 indexer key per layer, 61 layers")
n_racks = R.workload("racks", "", "scale-up domains one MoE layer is spread across", "n", "rack",
                     default="1",
                     whole=True, most=(10**6, "a million racks is far past any machine built"))

# -- named constants ----------------------------------------------------------------------
c_F = R.constant("flop_per_param_token", "2 FLOP/parameter/token",
                 "FLOP per parameter per token: one multiply-accumulate, counted as 2 FLOP",
                 "c", "F", source="convention: the lecture's FLOPs count multiply-accumulates; here 1 MAC = 2 FLOP")
delta = R.constant("tokens_per_step", "1 token/sequence",
                   "tokens each sequence gains per decode step", "δ",
                   source="definition of a decode step")
n_kv_vec = R.constant("kv_vectors_per_token", "2 /token",
                      "cached vectors per layer per KV head per token: one key, one value",
                      "c", "KV", source="multi-head attention caches K and V")
n_lat_vec = R.constant("latent_vectors_per_token", "1 /token",
                       "cached MLA latents per layer per token", "c", "lat",
                       source="DeepSeek-V2 report, multi-head latent attention")
c_MAC = R.constant("flop_per_mac", "2 FLOP",
                   "FLOP per multiply-accumulate (a multiply and an add)", "c", "MAC",
                   source="convention, as for c_F: 1 multiply-accumulate = 2 FLOP")
n_score = R.constant("score_products", "1 /token",
                     "score products (query · key) per head per cached token", "c", "qk",
                     source="attention: one score per head per cached token")
n_value = R.constant("value_products", "1 /token",
                     "value products (weight · value) per head per cached token", "c", "pv",
                     source="attention: each cached value is weighted once per head")
c_ffn = R.constant("ffn_matrices_per_expert", "3 parameter",
                   "weights per (model width × expert width) cell of a gated expert: gate, up and down "
                   "projections", "c", "FFN",
                   source="SwiGLU experts (DeepSeek-V3, Kimi K2, Qwen3, Mixtral): w1, w2, w3")
tau = R.constant("one_token", "1 token",
                 "one token: each token picks its experts independently, so the exponent counts tokens",
                 "τ", source="uniform, independent routing of each token")
L_ref = R.constant("sqrt_reference_length", "1 token/sequence",
                   "unit length under the square root: √L counts L in tokens", "L", "ref",
                   source="the lecture's √L (seed 004, line 85)")

# -- number formats -----------------------------------------------------------------------
# Bytes per number for each format (the README's "2 bytes per bf16 number"). The lecture:
# "FP4 is half a byte" (seed 004, line 73).
NUMBER_FORMATS = {"bf16": "2 byte", "fp8": "1 byte", "fp4": "0.5 byte", "int8": "1 byte", "int4": "0.5 byte"}
FLOAT_FORMATS = ("fp4", "fp8", "bf16")    # narrow to wide: chips publish a dense FLOP/s for each
INTEGER_FORMATS = ("int4", "int8")        # weight-only quantisation: computed in a float format
