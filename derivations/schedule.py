"""HBM drain time, the train schedule, and throughput.

Seed 004 lines 57, 59, 61, 63, 53: a step should read all of HBM about once, so the step
time is near capacity / bandwidth, "about 15 milliseconds" on Rubin (288 GB / 20 TB/s).
A batch departs every step like a train: a request waits at worst two steps, on average
half a step before its step begins. Throughput is batch over step time.
"""
import sympy as sp

from .inputs import R, B, S, C_hbm, W, delta, N_total, beta_w, L, b_kv
from .roofline import t_compute, t_step

R.section(
    "schedule", "How often does a batch leave, and how many tokens per second is that?",
    seeds=("004:57", "004:59", "004:61", "004:63", "004:53"),
    question="How long does it take to read all of HBM once, what queueing delay does a "
             "fixed step impose, and what throughput does one model copy give?",
    takeaway="{hardware} drains its HBM in {drain_time}; with steps of {step_time}, "
             "{model} serves {throughput} per copy and a request waits at worst {worst_latency}.",
    featured=("drain_time", "worst_latency", "mean_wait", "throughput", "max_batch_capacity"),
)

t_drain = R.derived(
    "drain_time", C_hbm / W, "s", "time to read the whole HBM once", "t", "drain")
t_worst = R.derived(
    "worst_latency", 2 * t_step, "s",
    "a request that just missed a departure waits one step, then rides one step", "t", "worst")
t_wait = R.derived(
    "mean_wait", t_step / 2, "s",
    "mean wait for the next departure, for requests arriving uniformly", "t", "wait")
thr = R.derived(
    "throughput", B * delta / t_step, "token/s",
    "tokens per second from one copy of the model (S chips)", "Θ")
thr_chip = R.derived(
    "throughput_per_chip", B * delta / (t_step * S), "token/s/chip",
    "tokens per second per chip", "Θ", "chip")
B_cap = R.derived(
    "max_batch_capacity", (S * C_hbm - N_total * beta_w) / (L * b_kv), "sequence",
    "largest batch whose KV cache fits in the HBM left after the weights", "B", "cap",
    valid="the weights alone do not fit in the chips' HBM")

# The lecture's rule of thumb (line 59): use all the HBM, weights plus KV cache. Then every
# step reads the whole HBM once, and the memory time is the drain time.
L_fill = R.derived(
    "context_to_fill_hbm", (S * C_hbm - N_total * beta_w) / (B * b_kv), "token/sequence",
    "context at which the batch's KV cache fills the HBM left after the weights", "L", "full",
    valid="the weights alone do not fit in the chips' HBM")
t_full = R.derived(
    "full_hbm_step_time", sp.Max(t_compute, t_drain), "s",
    "step time when weights and KV cache fill the HBM: compute, or one read of all HBM", "t", "full")
R.derived(
    "full_hbm_throughput", B * delta / t_full, "token/s",
    "tokens per second from one copy when weights and KV cache fill the HBM", "Θ", "full")
