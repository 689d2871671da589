"""Fast mode: what a smaller batch buys in speed and costs per token.

Seed 000 @ 0:52 asks why a vendor can sell streaming "at 2.5x the speed for 6x the price",
@ 1:29 whether paying 100x more could buy more speed, and 004 line 79 points at the answer:
the weight fetch is paid once per batch, so a smaller batch gives each step less work but
fewer tokens to share it. Here, in the lecture's model (every weight read each step, KV and
compute linear in the batch), SymPy solves for the batch at which a step is s times shorter
than at the operating batch B, and the cost per token there relative to B.
"""
import sympy as sp

from .inputs import R, B

R.section(
    "fast_mode", "What does a faster mode cost per token?",
    seeds=("000@0:52", "000@1:29", "004:79"),
    question="To make each step s times shorter than at the operating batch, how small must the "
             "batch get, and how much more does each token then cost?",
    takeaway="{model} on {hardware}: a step {fast_speedup} times shorter than at a batch of "
             "{batch} needs a batch of {fast_batch}, and each token then costs {fast_cost_ratio} "
             "times as much; shrinking the batch alone speeds a step at most "
             "{max_speedup_batching} times.",
    featured=("step_time_all_weights", "fast_step_time", "fast_batch", "fast_cost_ratio",
              "max_speedup_batching"),
)

s_fast = R.workload("fast_speedup", "", "how many times shorter the fast mode's step is", "s", "fast",
                    default="2.5",
                    source="the vendor's fast mode: 'up to 2.5x higher output tokens per second' "
                           "(seed 000 @ 0:52, corrected reading)")

t_w = R["weight_fetch_time_all"].sym
t_kv = R["kv_fetch_time"].sym
t_c = R["compute_time"].sym

t_lect = R.derived(
    "step_time_all_weights", sp.Max(t_c, t_w + t_kv), "s",
    "step time in the lecture's model: every weight read each step, with the KV cache, against compute",
    "t", "step,all")
t_fast = R.derived(
    "fast_step_time", t_lect / s_fast, "s",
    "the fast mode's step: fast_speedup times shorter than at the operating batch", "t", "fast")

# The fast batch: B_f where the step of the lecture's model equals the fast step. Both branches
# of the max are straight lines in the batch (compute and KV through zero, the weights a
# constant), so each is solved for B_f and the smaller root is the largest batch meeting both.
_x = sp.Symbol("fast_batch_unknown", positive=True)
_roots = [R.roots(lambda line=line: R.expand(line).xreplace({B: _x}), t_fast, _x)
          for line in (t_c, t_w + t_kv)]
if any(len(r) != 1 for r in _roots):  # pragma: no cover - a non-linear branch
    raise ValueError(f"fast_batch: expected one root per branch, got {_roots}")
B_f = R.derived(
    "fast_batch", sp.Min(*[r[0] for r in _roots]), "sequence",
    "batch at which the lecture-model step is fast_speedup times shorter than at the operating batch",
    "B", "fast",
    how="solved compute_time(B_f) = fast_step_time and weight fetch + kv_fetch_time(B_f) = "
        "fast_step_time for B_f; the smaller root",
    valid="the fast step is shorter than the weight fetch: no batch reaches this speed-up")
R.derived(
    "fast_cost_ratio", B / (s_fast * B_f), "",
    "cost per token at the fast batch over that at the operating batch: cost ∝ step time / batch",
    "r", "fast", how="(fast_step_time / fast_batch) / (step_time_all_weights / batch)")
R.derived(
    "max_speedup_batching", R["step_time"].sym / R["latency_floor"].sym, "",
    "the most a smaller batch alone can shorten a step: step time over the latency floor", "s", "max")
