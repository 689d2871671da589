"""Latency and cost per token as the batch grows.

Seed 004 lines 93, 97 (the latency plot: a floor at small batch, then linear growth) and
lines 81, 83 (cost per token: starts "almost at infinity" at batch 1, falls as the weight
fetch is amortised, and levels off at a floor). Limits are taken by SymPy.
"""
import sympy as sp

from .inputs import R, B, S, delta, price
from .roofline import t_step

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

# The latency floor: the step time as the batch shrinks to nothing (only weights are left).
t_floor = R.derived(
    "latency_floor", R.limit(R.closed_form("step_time"), B, 0), "s",
    "least time per step, reached as the batch goes to zero: the weight fetch", "t", "floor",
    how="limit of step_time as batch → 0")
v_max = R.derived(
    "speed_ceiling", delta / t_floor, "token/s/sequence",
    "most tokens per second one sequence can get, at the latency floor", "v", "max")

cost = R.derived(
    "cost_per_token", price * S * t_step / (B * delta), "USD/token",
    "rental cost of the chips for one step, shared by the tokens it makes", "c", "tok")

# The cost floor: cost per token as the batch grows without bound (each branch of the max
# is a line in B, so after dividing by B only its slope is left).
cost_inf = R.derived(
    "cost_floor", R.limit(R.closed_form("cost_per_token"), B, sp.oo),
    "USD/token", "least cost per token, reached as the batch grows without bound",
    "c", "floor", how="limit of cost_per_token as batch → ∞, branch by branch")
B_1 = R.constant("one_sequence", "1 sequence", "a batch of one sequence", "B", "1",
                 source="definition")
penalty = R.derived(
    "batch1_penalty", R.closed_form("cost_per_token").xreplace({B: B_1}) / cost_inf, "",
    "how many times the floor a token costs at batch 1", "P", "1",
    how="cost_per_token at batch = 1 sequence, over cost_floor")
