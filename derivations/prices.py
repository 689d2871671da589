"""Deducing long-context memory costs from API prices (chapter 6 of the lecture, from 1:33).

chapters-3-7.md, ids A-01 to A-06, K-01 to K-06, D-01 to D-04 and C-01 to C-14, cited as
``chapters-3-7.md#A-04``. If providers price close to cost (A-06), a price sheet leaks the
serving physics. Three readings:

* A long-context tier (a higher rate above a prompt length L_thr) sits where the KV fetch
  overtakes the compute: equating the two at L_thr, with the batch large enough that the
  weight fetch is negligible, gives the KV bytes per token the provider must have (A-04); SymPy
  solves it and the batch cancels. The lecture reads N_active ≈ 100 B, L = 200 K and
  F/W ≈ 300 multiply-accumulates per byte and gets ≈ 1,667 bytes (A-05); one layer of 8 KV
  heads of 128 numbers, K and V, shared by all layers, is 2,048 numbers (K-01 to K-04).
* Output costs more than input (D-01): a pass of len_pass new tokens per sequence multiplies
  the compute by len_pass and leaves the memory traffic alone (D-02), so prefill is
  compute-bound and decode memory-bound (D-03); the price ratio is then the MFU ratio (D-04).
* A cached prompt is held somewhere until it is read again (C-09): HBM, host DDR, flash,
  disk, or nowhere (rematerialised by a forward pass, C-03). Holding costs the device share
  b/Cap per second, retrieving b/BW once; they are equal after t_hold = Cap/BW, the tier's
  drain time (C-13), which says which tier suits a cache lifetime (C-14).

Price inputs come from the selected snapshot of prices.yaml (``--set price=ID``, default
there); tier inputs from its memory_tiers. HBM is the chip's own (hardware.yaml).
"""
import sympy as sp

from . import rules

from .inputs import (R, F, W, C_hbm, S, price, N_active, n_layers, b_kv, B, L, delta, c_F)
from .kv_cache import b_gqa
from .roofline import t_compute_w, t_kv, t_mem, t_step
from .textbook import fwd_params

# -- the price snapshot ----------------------------------------------------------------------
R.section(
    "price_tiers", "What KV cache does a long-context price tier imply?",
    seeds=(),
    chapter="prices",
    question="A provider charges more above a prompt length L_thr (chapters-3-7.md#A-01). If the "
             "step sits at the crossover where the KV fetch overtakes compute (#A-03), how many KV "
             "bytes per token does that imply (#A-04, #A-05), and what architecture has that many "
             "(#K-01 to #K-04)?",
    takeaway="In the selected price snapshot the rates rise {long_input_premium} times for input and "
             "{long_output_premium} times for output above {long_context_threshold}. On {hardware} "
             "a tier at that length implies {kv_bytes_implied_by_tier} of KV per token for {model} "
             "(its architecture has {kv_bytes_per_token}); its own crossover is at {context_crossover}, "
             "and the tier's threshold is {tier_threshold_over_crossover} times that.",
    featured=("kv_bytes_implied_by_tier", "long_input_premium", "long_output_premium",
              "tier_threshold_over_crossover", "cost_per_token_at_threshold", "kv_bytes_shared_layer"),
)

p_in = R.price("input_price", "USD/Mtoken", "API price of one input (prompt) token at the base rate",
               "p", "in")
p_out = R.price("output_price", "USD/Mtoken", "API price of one output (generated) token at the base rate",
                "p", "out")
L_thr = R.price("long_context_threshold", "token/sequence",
                "prompt length above which the long-context rates apply", "L", "thr")
p_in_long = R.price("long_input_price", "USD/Mtoken", "input price above the long-context threshold",
                    "p", "in,long")
p_out_long = R.price("long_output_price", "USD/Mtoken", "output price above the long-context threshold",
                     "p", "out,long")
p_w5 = R.price("cache_write_5m_price", "USD/Mtoken",
               "price of writing one token to the prompt cache for 5 minutes", "p", "w,5m")
p_w1h = R.price("cache_write_1h_price", "USD/Mtoken",
                "price of writing one token to the prompt cache for 1 hour", "p", "w,1h")
p_read = R.price("cache_read_price", "USD/Mtoken", "price of reading one cached prompt token (a cache hit)",
                 "p", "hit")

R.derived("long_input_premium", p_in_long / p_in, "",
          "how many times the base input price a prompt pays above the threshold", "r", "in,long")
R.derived("long_output_premium", p_out_long / p_out, "",
          "how many times the base output price a token pays above the threshold", "r", "out,long")

# The KV bytes a tier implies: at L = L_thr the KV fetch of a step equals its weight
# compute; the batch (and the chips) cancel. The lecture sets attention compute aside here.
eq_tier = R.equation(
    "kv_time_equals_compute_at_threshold", R.expand(t_kv).xreplace({L: L_thr}), t_compute_w,
    "at the long-context threshold the KV fetch of a step takes as long as its weight compute")
b_implied = R.derived(
    "kv_bytes_implied_by_tier", R.solve(eq_tier, b_kv), "byte/token",
    "KV bytes per token at which the KV fetch equals compute exactly at the price tier's threshold "
    "(the lecture's N_active/(300·L) in multiply-accumulates)", "b", "tier",
    how="solved kv_fetch_time (context = long_context_threshold) = compute_time_weights for "
        "kv_bytes_per_token; the batch cancels")
R.equation("implied_kv_bytes_is_flop_ratio", b_implied, c_F * delta * N_active * W / (F * L_thr),
           "the implied KV bytes per token: c_F·N_active·W/(F·L_thr), free of the batch", identity=True)
R.derived("tier_threshold_over_crossover", L_thr / R.quantities["context_crossover"].sym, "",
          "the price tier's threshold over the context at which this model's KV fetch matches its "
          "compute on this chip (1: the tier sits at the crossover)", "r", "thr")
R.derived("cost_per_token_at_threshold",
          R.at("cost_per_token", {L: L_thr}), "USD/Mtoken",
          "rental cost per token of a step whose sequences are as long as the tier's threshold",
          "c", "thr", how="cost_per_token at context = long_context_threshold")

# KV bytes per token of one attention layer shared by every layer (K-01 to K-04): the
# grouped-query formula of the KV-cache section with the unique layers in place of the layers.
n_unique = R.workload("unique_kv_layers", "", "layers with their own KV cache (global KV shared across "
                      "layers: one)", "n", "uniq", default="1",
                      source="Character.AI-style cross-layer KV sharing, one unique layer "
                             "(chapters-3-7.md#K-04)")
R.derived("kv_bytes_shared_layer", R.expand(b_gqa).xreplace({n_layers: n_unique}), "byte/token",
          "KV bytes per token when the layers share their KV: 2 · unique layers · KV heads · d_head · "
          "bytes per number", "b", "shared",
          how="kv_bytes_gqa with layers = unique_kv_layers")

# -- prefill and decode ----------------------------------------------------------------------
R.section(
    "prefill_decode", "Why does output cost more than input?",
    seeds=(),
    chapter="prices",
    question="A pass over len_pass new tokens per sequence multiplies the compute by len_pass and "
             "leaves the weight and KV reads alone (chapters-3-7.md#D-02). Where does a pass turn "
             "compute-bound, and what do the prices say about decode's MFU (#D-01, #D-04)?",
    takeaway="On {hardware}, a pass of {model} at a batch of {batch} turns compute-bound at "
             "{pass_tokens_compute_bound}; a prefill of {pass_tokens} runs at {prefill_mfu} MFU and "
             "decode at {mfu}, so a decoded token costs {decode_over_prefill_cost} times a prefilled "
             "one. The selected price snapshot charges {output_over_input_price} times as much for output: "
             "if prices track cost, decode runs at {implied_decode_mfu_ratio} of prefill's MFU.",
    featured=("pass_compute_time", "pass_time", "pass_tokens_compute_bound", "prefill_mfu",
              "decode_over_prefill_cost", "output_over_input_price", "implied_decode_mfu_ratio"),
)

n_pass = R.workload("pass_tokens", "token/sequence",
                    "new tokens each sequence processes in one forward pass: 1 for decode, the prompt "
                    "for a prefill", "n", "pass", default="=context")
t_pass_c = R.derived(
    "pass_compute_time", t_compute_w * n_pass / delta, "s",
    "compute time of a pass over pass_tokens new tokens per sequence: B·len_pass·N_active multiplies "
    "(attention compute set aside, as the lecture does)", "t", "pass")
t_pass = R.derived(
    "pass_time", sp.Max(t_pass_c, t_mem), "s",
    "roofline time of the pass: its compute, or the weights and existing KV read once (the new KV "
    "stays on chip)", "t", "pass,step")
eq_pass = R.equation("pass_compute_equals_memory", t_pass_c, t_mem,
                     "the pass's compute takes as long as reading the weights and the KV cache")
# Solved with the memory time kept whole: it holds the expert-coverage power (1 − k/E)^B,
# which simplifying through would turn into E^B (an overflow at any real batch).
(_n_star,) = R.kept(("solve", "pass_tokens_compute_bound"), lambda: sp.solve(
    sp.Eq(R.expand(t_pass_c, keep=("memory_time",)), t_mem), n_pass))
R.derived("pass_tokens_compute_bound", _n_star, "token/sequence",
          "new tokens per sequence from which a pass is compute-bound", "n", "pass,*",
          how="solved pass_compute_time = memory_time for pass_tokens (memory_time kept whole)")
mfu_pass = R.derived("prefill_mfu", sp.Min(1, t_pass_c / t_mem), "",
                     "fraction of peak compute a pass of pass_tokens uses", "MFU", "pass", share=True)
R.derived("decode_over_prefill_cost", (t_step / delta) / (t_pass / n_pass), "",
          "chip time per decoded token over chip time per prefilled token, at the same batch and context",
          "r", "dec/pre")
R.derived("output_over_input_price", p_out / p_in, "",
          "output price over input price (the lecture's 3–5)", "r", "out/in")
R.derived("implied_decode_mfu_ratio", p_in / p_out, "",
          "decode MFU over prefill MFU if both are priced at cost: the input over the output price",
          "r", "MFU")
R.derived("decode_over_prefill_mfu", R.quantities["mfu"].sym / mfu_pass, "",
          "decode MFU over prefill MFU from the roofline, at the same batch and context", "r", "MFU,roof")

# -- holding and retrieving a KV cache ----------------------------------------------------------
R.section(
    "kv_retention", "Where should a cached prompt wait, and what does it cost?",
    seeds=(),
    chapter="prices",
    question="A cached prompt's KV can be recomputed (one forward pass per token, "
             "chapters-3-7.md#C-03) or held in a memory tier and read back (#C-09). What does each "
             "cost per token, and which tier suits a 5-minute or a 1-hour cache (#C-13, #C-14)?",
    takeaway="Rematerialising a token of {model} on {hardware} takes {remat_chip_time_per_token} of "
             "chip time at peak (remat_cost_per_token prices it where the chip has a rental price). A tier is worth holding a KV "
             "for about its drain time: HBM {drain_time}, host memory {ddr_drain_time}, flash "
             "{flash_drain_time}, disk {disk_drain_time}. The selected price snapshot's cache hit is "
             "{cache_hit_discount} times cheaper than base input.",
    featured=("cache_hit_discount", "cache_write_premium_5m", "cache_write_premium_1h",
              "remat_chip_time_per_token", "remat_cost_per_token", "hbm_hold_cost",
              "ddr_drain_time", "flash_drain_time", "disk_drain_time", "break_even_hold_time_ddr"),
)

R.derived("cache_hit_discount", p_in / p_read, "",
          "base input price over the cache-hit price (the lecture's ~10)", "r", "hit")
R.derived("cache_write_premium_5m", p_w5 / p_in, "",
          "5-minute cache write over the base input price", "r", "w,5m")
R.derived("cache_write_premium_1h", p_w1h / p_in, "",
          "1-hour cache write over the base input price", "r", "w,1h")

t_remat = R.derived(
    "remat_chip_time_per_token", fwd_params / F, "chip*s/token",
    "chip time to recompute one token's KV: one forward pass over the active parameters at peak",
    "t", "remat")
c_remat = R.derived("remat_cost_per_token", price * t_remat, "USD/Mtoken",
                    "rental cost of recomputing one token's KV at peak (the lecture's base input price)",
                    "c", "remat")
R.derived("input_price_over_remat_cost", p_in / c_remat, "",
          "base input price over the rental cost of a forward pass at peak (1 if input is priced at "
          "the remat cost with full MFU)", "r", "in/remat")

# HBM: the chip's own capacity, bandwidth and rental price.
R.derived("hbm_hold_cost", b_kv * price / C_hbm, "USD/Mtoken/hour",
          "cost of holding one token's KV in HBM: its share of the chip's capacity, at the rental price",
          "h", "HBM")
R.derived("hbm_retrieve_cost", b_kv * price / W, "USD/Mtoken",
          "cost of reading one token's KV from HBM once: its share of a second of the chip's bandwidth",
          "g", "HBM")

TIER_NAMES = {"ddr": "host DDR", "flash": "NVMe flash", "disk": "hard disk"}
TIER_SYMBOLS = {}
for _t, _what in TIER_NAMES.items():
    cap = R.tier(f"{_t}_capacity", "byte", f"capacity of one {_what} device", "C", _t, field=f"{_t}.capacity")
    bw = R.tier(f"{_t}_bandwidth", "byte/s", f"sustained read bandwidth of one {_what} device", "W", _t,
                field=f"{_t}.bandwidth")
    cost = R.tier(f"{_t}_cost", "USD/hour", f"cost of one {_what} device per hour", "p", _t, field=f"{_t}.cost")
    drain = R.derived(f"{_t}_drain_time", cap / bw, "s",
                      f"time to read a whole {_what} device once: capacity over bandwidth", "t", _t)
    hold = R.derived(f"{_t}_hold_cost", b_kv * cost / cap, "USD/Mtoken/hour",
                     f"cost of holding one token's KV in {_what}: its share of the device, per hour", "h", _t)
    get = R.derived(f"{_t}_retrieve_cost", b_kv * cost / bw, "USD/Mtoken",
                    f"cost of reading one token's KV back from {_what}: its share of the device's bandwidth",
                    "g", _t)
    TIER_SYMBOLS[_t] = (cap, bw, cost, drain, hold, get)

# C-13: holding for a time t costs as much as one retrieval when t = Cap/BW (b and the
# device's cost cancel). Solved for the host-memory tier; the others have the same form.
t_hold = R.workload("hold_time", "s", "how long a cached KV waits before it is read again", "t", "hold",
                    default="=cache_lifetime_5m", source="the shorter prompt-cache lifetime (chapters-3-7.md#C-11)")
_cap, _bw, _cost, _drain, _hold, _get = TIER_SYMBOLS["ddr"]
eq_hold = R.equation("hold_cost_equals_retrieve_cost", _hold * t_hold, _get,
                     "holding a KV in host memory for t costs as much as reading it back once")
R.derived("break_even_hold_time_ddr", R.solve(eq_hold, t_hold), "s",
          "hold time at which holding in host memory costs as much as one retrieval", "t", "hold,*",
          how="solved ddr_hold_cost · hold_time = ddr_retrieve_cost for hold_time")
R.equation("break_even_hold_time_is_drain_time", R.quantities["break_even_hold_time_ddr"].sym, _drain,
           "the break-even hold time is the tier's drain time, Cap/BW (chapters-3-7.md#C-13)", identity=True)

# The two cache lifetimes the prices name, against the drain times of the tiers the lecture
# maps them to (C-14: 5 minutes to flash, 1 hour to disk).
t_5m = R.constant("cache_lifetime_5m", "5 min", "lifetime of the shorter prompt-cache write", "t", "5m",
                  source="Anthropic's 5-minute cache write (prices.yaml, cache_write_5m_price)")
t_1h = R.constant("cache_lifetime_1h", "1 hour", "lifetime of the longer prompt-cache write", "t", "1h",
                  source="Anthropic's 1-hour cache write (prices.yaml, cache_write_1h_price)")
R.derived("flash_drain_over_5m", TIER_SYMBOLS["flash"][3] / t_5m, "",
          "flash drain time over the 5-minute cache lifetime (1: flash suits it exactly)", "r", "flash/5m")
R.derived("disk_drain_over_1h", TIER_SYMBOLS["disk"][3] / t_1h, "",
          "disk drain time over the 1-hour cache lifetime (1: disk suits it exactly)", "r", "disk/1h")
R.derived("ddr_drain_over_5m", TIER_SYMBOLS["ddr"][3] / t_5m, "",
          "host-memory drain time over the 5-minute cache lifetime", "r", "ddr/5m")
R.derived("flash_drain_over_1h", TIER_SYMBOLS["flash"][3] / t_1h, "",
          "flash drain time over the 1-hour cache lifetime", "r", "flash/1h")

TIER_DRAIN_TIMES = {"hbm": "drain_time", "ddr": "ddr_drain_time", "flash": "flash_drain_time",
                    "disk": "disk_drain_time"}


# A choice, not a number: which tier a KV that waits hold_time should live in (C-13, C-14).
# `build.py eval best_kv_tier --set hold_time=1h` evaluates each tier's drain time and names
# the one nearest the hold time.
TIER_LABELS = {"hbm": "HBM", **TIER_NAMES}
CHOICES = {
    "best_kv_tier": {
        "meaning": "the memory tier a cached KV should wait in for hold_time: the one whose drain "
                   "time (capacity / bandwidth) is nearest the hold time, on a log scale "
                   "(chapters-3-7.md#C-13, #C-14)",
        "against": "hold_time",
        "options": TIER_DRAIN_TIMES,
        "labels": TIER_LABELS,
    },
}


best_tier = rules.best_tier   # the rule the choice is made by (rules.py)
