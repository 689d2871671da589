"""Latency and cost per token as the batch grows.

Seed 004 lines 93, 97 (the latency plot: a floor at small batch, then linear growth) and
lines 81, 83 (cost per token: starts "almost at infinity" at batch 1, falls as the weight
fetch is amortised, and levels off at a floor). Limits are taken by SymPy.
"""
import sympy as sp

from .inputs import R, B, S, delta, price
from .roofline import t_step, t_weights

B_1 = R.constant("one_sequence", "1 sequence", "a batch of one sequence", "B", "1",
                 source="definition")

R.section(
    "latency_cost", "What does batch size do to latency and cost?",
    seeds=("004:93", "004:97", "004:81", "004:83"),
    question="How fast can one user be served, and how cheap can a token get, as the batch "
             "goes from 1 to very large?",
    takeaway="{model} on {hardware}: no batch is faster than {latency_floor} per token "
             "({speed_ceiling} for one user); a token costs at least {cost_floor}, and batch 1 "
             "costs {batch1_penalty} times that.",
    featured=("latency_floor", "speed_ceiling", "cost_per_token", "cost_floor", "batch1_penalty"),
)

# The latency floor: the step time of the smallest batch, one sequence (the step time grows
# with the batch). For an MoE model that one sequence reads only its own k experts.
t_floor = R.derived(
    "latency_floor", R.at("step_time", {B: B_1}), "s",
    "least time per step: one sequence, reading the weights it needs and its own KV cache",
    "t", "floor", how="step_time at batch = 1 sequence")
v_max = R.derived(
    "speed_ceiling", delta / t_floor, "token/s/sequence",
    "most tokens per second one sequence can get, at the latency floor", "v", "max")

cost = R.derived(
    "cost_per_token", price * S * t_step / (B * delta), "USD/token",
    "rental cost of the chips for one step, shared by the tokens it makes", "c", "tok")

# The cost floor: cost per token as the batch grows without bound (each branch of the max
# is a line in B, so after dividing by B only its slope is left). The expected weight fetch is
# bounded by the all-weights fetch, a constant, so it drops out of the limit like it does.
cost_inf = R.derived(
    "cost_floor",
    R.limit(lambda: R.closed_form("cost_per_token", keep=("weight_fetch_time",))
            .xreplace({t_weights: R.closed_form("weight_fetch_time_all")}), B, sp.oo),
    "USD/token", "least cost per token, approached as the batch grows without bound (an asymptote: "
    "past the batch that fits in HBM)",
    "c", "floor", how="limit of cost_per_token as batch → ∞, branch by branch "
                      "(the weight fetch, at most weight_fetch_time_all, vanishes per token)")
penalty = R.derived(
    "batch1_penalty", R.at("cost_per_token", {B: B_1}) / cost_inf, "",
    "how many times the floor a token costs at batch 1", "P", "1",
    how="cost_per_token at batch = 1 sequence, over cost_floor")
