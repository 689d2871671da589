"""HBM drain time, the train schedule, and throughput.

Seed 004 lines 57, 59, 61, 63, 53: a step should read all of HBM about once, so the step
time is near capacity / bandwidth, "about 15 milliseconds" on Rubin (288 GB / 20 TB/s).
A batch departs every step like a train: a request waits at worst two steps, on average
half a step before its step begins. Throughput is batch over step time.
"""
import sympy as sp

from .inputs import R, B, S, C_hbm, W, delta, N_total, beta_w, L, b_kv
from .latency_cost import B_1
from .roofline import t_compute, t_step

R.section(
    "schedule", "How often does a batch leave, and how many tokens per second is that?",
    seeds=("004:57", "004:59", "004:61", "004:63", "004:53"),
    question="How long does it take to read all of HBM once, what queueing delay does a "
             "fixed step impose, and what throughput does one model copy give?",
    takeaway="{hardware} drains its HBM in {drain_time}; with steps of {step_time}, "
             "{model} serves {throughput} per copy and a request waits at worst {worst_latency}. "
             "Weights and KV cache fill {hbm_fill} of the HBM; at most {max_batch_capacity} fit.",
    featured=("drain_time", "worst_latency", "mean_wait", "throughput", "memory_per_chip",
              "hbm_fill", "max_batch_capacity"),
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
R.derived(
    "user_speed", delta / t_step, "token/s/sequence",
    "tokens per second each sequence gets: one a step", "v")

# Does the set-up fit? Every weight is held once across the S chips (whether or not a step
# reads it), and every sequence holds its whole context's KV cache.
m_w = R.derived(
    "weights_per_chip", N_total * beta_w / S, "byte/chip",
    "HBM each chip gives to its share of the weights", "m", "w", fit_measure=True)
m_kv = R.derived(
    "kv_per_chip", B * L * b_kv / S, "byte/chip",
    "HBM each chip gives to its share of the batch's KV cache", "m", "KV", fit_measure=True)
m_chip = R.derived(
    "memory_per_chip", m_w + m_kv, "byte/chip",
    "HBM each chip needs: its share of the weights and of the KV cache", "m", "chip", fit_measure=True)
R.derived(
    "hbm_fill", m_chip / C_hbm, "",
    "share of each chip's HBM the set-up needs: above 1 it does not fit", "φ", "HBM", fit_measure=True, share=True)
B_cap_exact = (S * C_hbm - N_total * beta_w) / (L * b_kv)
B_cap = R.derived(
    "max_batch_capacity", sp.floor(B_cap_exact / B_1) * B_1, "sequence",
    "largest whole batch whose KV cache fits in the HBM left after the weights", "B", "cap",
    valid="the weights leave no room for one sequence's KV cache in the chips' HBM", fit_measure=True)
# A serving engine does not give all of it to weights and KV: activations, workspace, CUDA graphs
# and the runtime take the rest, so a deployment plans within a budget (plan reads it).
u_mem = R.workload("engine_memory_share", "", "share of each chip's HBM a serving engine gives the weights and the "
                   "KV cache; the rest holds its activations, workspace and runtime", "u", "mem", default="0.9",
                   share=True, source="vLLM's default gpu_memory_utilization = 0.90 (EngineArgs, "
                                      "vllm/engine/arg_utils.py)",
                   most=(1, "a share of the HBM: at 1 the engine gives the weights and KV cache all of it"))
R.derived(
    "max_batch_engine", sp.floor((S * C_hbm * u_mem - N_total * beta_w) / (L * b_kv) / B_1) * B_1, "sequence",
    "largest whole batch whose KV cache fits beside the weights in an engine's share of the HBM", "B", "eng",
    valid="the weights leave no room for one sequence's KV cache in the engine's share of the HBM", fit_measure=True)

# The lecture's rule of thumb (line 59): use all the HBM, weights plus KV cache. Then every
# step reads the whole HBM once, and the memory time is the drain time.
L_fill = R.derived(
    "context_to_fill_hbm", (S * C_hbm - N_total * beta_w) / (B * b_kv), "token/sequence",
    "context at which the batch's KV cache fills the HBM left after the weights", "L", "full",
    valid="the weights alone do not fit in the chips' HBM", fit_measure=True)
t_full = R.derived(
    "full_hbm_step_time", sp.Max(t_compute, t_drain), "s",
    "step time when weights and KV cache fill the HBM: compute, or one read of all HBM", "t", "full")
R.derived(
    "full_hbm_throughput", B * delta / t_full, "token/s",
    "tokens per second from one copy when weights and KV cache fill the HBM", "Θ", "full")
