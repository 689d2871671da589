"""The hardware ratio and the balance batch.

Seed 004 lines 73, 75, 71, 65: set memory time equal to compute time and solve for the
batch. The hardware parameters collect into one ratio, "around 300" on most GPUs, nearly
independent of the number format because halving the bytes doubles the rate (line 73).
For an MoE model the batch scales with the sparsity N_total/N_active.
"""

from .inputs import R, B, F, W, beta_w, c_F, delta, N_total, N_active, E, k
from .roofline import t_compute, t_compute_w, t_weights_all, t_kv

R.section(
    "balance", "How large must the batch be to keep the chip busy?",
    seeds=("004:75", "004:73", "004:71", "004:65"),
    question="At what batch does the time to compute equal the time to fetch the weights, "
             "and how does that depend on the chip and on the model's sparsity?",
    takeaway="{hardware} has a hardware ratio of {hardware_ratio}; {model}'s sparsity "
             "{sparsity} makes its balance batch {balance_batch}.",
    featured=("hardware_ratio", "sparsity", "balance_batch", "balance_batch_expert",
              "balance_batch_kv"),
)

# The lecture's balance point uses its board forms: weight multiplies only, all weights read.
# (At batches this large every expert is touched, see expert_coverage_batch.)
eq_balance = R.equation(
    "compute_equals_weights", t_compute_w, t_weights_all,
    "the balance point: compute time equals weight-fetch time")

ratio = R.derived(
    "hardware_ratio", F * beta_w / (c_F * W), "token",
    "tokens that must share each weight fetched for compute to keep up: "
    "(multiplies per second × bytes per number) / (bytes per second)", "R")
sparsity = R.derived(
    "sparsity", N_total / N_active, "",
    "total over active parameters (≥ 1; the lecture's sparsity)", "s")

B_star = R.derived(
    "balance_batch", R.solve(eq_balance, B), "sequence",
    "batch at which compute time equals weight-fetch time (KV ignored)", "B", "*",
    how="solved compute_time = weight_fetch_time for batch")
R.equation("balance_batch_is_ratio_times_sparsity", B_star, ratio * sparsity / delta,
           "the solved balance batch is the hardware ratio times the sparsity", identity=True)

B_star_E = R.derived(
    "balance_batch_expert", ratio * E / (k * delta), "sequence",
    "batch at which each expert's compute equals its own weight fetch: each expert sees "
    "B·k/E of the tokens", "B", "E", moe_only=True)

eq_balance_kv = R.equation(
    "compute_equals_memory", t_compute, t_weights_all + t_kv,
    "the balance point with the KV fetch and attention included (all weights read)")
B_star_kv = R.derived(
    "balance_batch_kv", R.solve(eq_balance_kv, B), "sequence",
    "batch at which compute time (weights and attention) equals weight plus KV fetch; grows "
    "without bound as the context nears the crossover", "B", "*KV",
    how="solved compute_time = weight_fetch_time_all + kv_fetch_time for batch",
    valid="the context is at or past the crossover, so no batch is compute-bound")

R.derived(
    "balance_growth_on_doubling", R.closed_form("balance_batch").subs(N_total, 2 * N_total)
    / R.closed_form("balance_batch"), "",
    "how many times the balance batch grows when total parameters double at fixed active ones",
    "g", "B*", how="balance_batch at 2·N_total over balance_batch at N_total")
