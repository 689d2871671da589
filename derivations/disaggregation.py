"""Where the prompts are read: on the decoding copies, between or within their steps, or on a pool of their own.

A request is a prompt of pass_tokens read once (the prefill), then output_tokens decoded one step
at a time. Three ways to deploy that are in use:

* colocated: the copies that decode also prefill, a prompt at a time. Every prompt a copy admits
  stops its decode steps for that prompt's whole pass (prefill_time_one, the weights read again),
  so with B sequences turning over once per request a copy spends output/δ decode steps and B
  prefills per request: D = (output/δ)·t_step + B·t_prefill. Each sequence gets output/D tokens per
  second, and every prefill in the batch makes every sequence wait.
* in-flight batching (Yu et al. 2022, "Orca", OSDI; Agrawal et al. 2024, "Sarathi-Serve", OSDI;
  TensorRT-LLM's in-flight batching, vLLM's and SGLang's chunked prefill): each step carries, beside
  its decodes, a chunk of a prompt up to a token budget, so the prompt's compute and collectives
  ride on a step whose weights are read anyway. A request then costs the decode steps and its
  prompt's share of a pass that reads the weights for many (prefill_time_pooled); its first token
  comes after the steps its chunks take.
* disaggregated (Zhong et al. 2024, "DistServe", OSDI; Patel et al. 2024, "Splitwise", ISCA;
  DeepSeek-V3's deployment, report sec. 3.4): a prefill pool reads the prompts and sends each
  prompt's KV cache over the network to a decode pool, whose steps are never stopped. Each sequence
  gets δ/t_step; the pool batches many prompts a pass (DeepSeek's prefill units), so a prompt costs
  its share too, the same chip-time per request as in-flight batching. What it buys is speed per user
  at a batch, so at a speed target the decode batch can be larger and a token cheaper; what it costs
  is the KV transfer before the first token.

All three prefill on the same layout as decode here (--total-gpus in `plan` gives each worker its own).
"""
import sympy as sp

from .inputs import R, B, W_out, delta, b_kv, price
from .latency_cost import B_1
from .layout import S_layout, pp, t_step as t_step_layout
from .core import Variant
from .measured import EXPECTED, t_sync
from .prices import n_pass

R.section(
    "disaggregation", "Should prompts be read on the decoding chips, or on a pool of their own?",
    seeds=(),
    chapter="prices",
    question="Requests of pass_tokens prompt tokens and output_tokens answer tokens, decoded at a batch of "
             "B under the layout: what speed does each sequence get, and what does a token cost, when the "
             "same copies prefill a prompt at a time (colocated), in chunks carried by their decode steps "
             "(in-flight batching), and when a prefill pool sends the KV cache to the decoding copies "
             "(disaggregated)?",
    takeaway="Colocated, every sequence of a batch of {batch} waits for the others' whole prefills "
             "({prefill_time_one} each) and gets {user_speed_colocated}, at {cost_per_token_colocated}; with "
             "in-flight batching a prompt costs only its share of a pass that reads the weights for many "
             "({prefill_time_pooled}), so each gets {user_speed_inflight} at {cost_per_token_inflight}; "
             "disaggregated, it gets {user_speed_layout} at {cost_per_token_disaggregated}, with "
             "{prefill_pool_ratio} prefill chips per decoding chip and the first token {kv_transfer_time} later "
             "for the KV cache's transfer.",
    featured=("prefill_time_one", "prefill_time_pooled", "request_time_colocated", "user_speed_colocated",
              "cost_per_token_colocated", "user_speed_inflight", "cost_per_token_inflight",
              "time_to_first_token_inflight", "prefill_pool_ratio", "cost_per_token_disaggregated", "kv_transfer_time",
              "time_to_first_token_disaggregated"),
)

n_out = R.workload("output_tokens", "token/sequence", "tokens a request decodes (its answer)", "n", "out",
                   default="1024 token/sequence")

t_pre1 = R.derived("prefill_time_one", R.at("prefill_time_layout", {B: B_1}), "s",
                   "prefill of one prompt under the layout: what admitting one request costs a copy", "t", "pre,1",
                   how="prefill_time_layout at batch = 1 sequence")
steps = n_out / delta            # decode steps a request takes
# A prompt's share of a pass that takes more and more prompts: the weight reads, once a pass, drop out.
# A pool batches prompts so; a colocated copy's prefills ride on its decode steps, whose weight reads are
# paid already. The strict form (compute and collectives overlapped) is the bound, the as-run one expected.
def per_prompt(*names):
    """The sum of ``names`` (quantities of a prefill of B prompts) per prompt as B grows without bound."""
    return R.limit(lambda: sum(R.closed_form(n) for n in names) / B, B, sp.oo)


t_pool = R.derived("prefill_time_pooled",
                   B_1 * pp * sp.Max(per_prompt("prefill_compute_time_layout"),
                               per_prompt("prefill_tp_comm_time_min", "prefill_ep_comm_time_min")),
                   "s", "strict bound on one prompt's share of a prefill pool's pass that batches many "
                   "prompts: its compute or its collectives, whichever is longer, stage after stage (the weights, "
                   "read once a pass, spread over its prompts)", "t", "pre,pool",
                   how="prefill_time_layout_min's compute and collectives per prompt as batch → ∞")
R.derived("prefill_time_pooled_as_run",
          B_1 * pp * (per_prompt("prefill_compute_time_layout") + per_prompt("prefill_tp_comm_time", "prefill_ep_comm_time")),
          "s", "one prompt's share of a prefill pool's pass that batches many prompts, run as "
          "prefill_time_layout runs it: its compute, then its collectives, stage after stage", "t", "pre,pool,run",
          how="prefill_time_layout's compute and collectives per prompt as batch → ∞")
t_req = R.derived("request_time_colocated", steps * t_step_layout + B / B_1 * t_pre1, "s",
                  "time a colocated copy takes per turnover of its batch: every sequence's decode steps, and "
                  "the prefill of each of the B prompts that replace them", "D", "coloc")
R.derived("user_speed_colocated", n_out / t_req, "token/s/sequence",
          "tokens per second each sequence gets on a colocated copy: its answer over the decode steps and "
          "the prefills it waits for", "v", "coloc")
thr_co = R.derived("throughput_colocated", B * n_out / t_req, "token/s",
                   "answer tokens per second of one colocated copy", "Θ", "coloc")
R.derived("cost_per_token_colocated", price * S_layout / thr_co, "USD/Mtoken",
          "rental cost of an answer token on colocated copies, their prefills included", "c", "coloc")

# in-flight batching: the colocated forms with a prompt's share of a pass in place of its own pass (its
# chunks ride on decode steps that read the weights anyway)
INFLIGHT = Variant("inflight", "IFB", table={"prefill_time_one": "prefill_time_pooled"})
for base, name, meaning in (
        ("request_time_colocated", "request_time_inflight",
         "time an in-flight batching copy takes per turnover of its batch: every sequence's decode steps, and each "
         "of the B prompts that replace them its share of the prefill, chunked into the steps"),
        ("user_speed_colocated", "user_speed_inflight",
         "tokens per second each sequence gets with in-flight batching: its answer over the decode steps and the "
         "prompt chunks they carry"),
        ("throughput_colocated", "throughput_inflight", "answer tokens per second of one in-flight batching copy"),
        ("cost_per_token_colocated", "cost_per_token_inflight",
         "rental cost of an answer token with in-flight batching, the prompts' chunks included")):
    R.variant(base, INFLIGHT, meaning, sub="IFB", name=name)
t_req_if = R["request_time_inflight"].sym
n_budget = R.workload("step_token_budget", "token", "prompt tokens a step of in-flight batching carries beside its "
                      "decodes (the engine's token budget a step)", "n", "budget", default="8192 token",
                      source="TensorRT-LLM, tensorrt_llm/builder.py: BuildConfig max_num_tokens = 8192 (the default "
                             "token budget of an in-flight batching step)",
                      whole=True)

ratio = R.derived("prefill_pool_ratio", B / B_1 * t_pool / (steps * t_step_layout), "",
                  "prefill chips per decoding chip: a decoding copy finishes B requests in output_tokens/δ steps, "
                  "each needing one prompt's share of a pass on a prefill pool of the same layout", "r", "P/D")
# the pool's cost per answer token: a prompt's prefill on a copy's chips, spread over its answer
# (the decoding cost times prefill_pool_ratio, written as a sum so that each part reads alone)
c_pre = R.derived("prefill_cost_per_token", price * S_layout * t_pool / (B_1 * n_out), "USD/Mtoken",
                  "rental cost per answer token of the prompt's share of a pass on a prefill pool of the same layout",
                  "c", "pre")
R.derived("cost_per_token_disaggregated", R["cost_per_token_layout"].sym + c_pre, "USD/Mtoken",
          "rental cost of an answer token with a prefill pool beside the decoding copies: the decoding copy's "
          "cost, and the prefill pool's beside it", "c", "disagg")
t_kv = R.derived("kv_transfer_time", n_pass * B_1 * b_kv / (S_layout * W_out), "s",
                 "time to send one prompt's KV cache from the prefill pool to a decoding copy, every chip over "
                 "its own scale-out link", "t", "KV,xfer")
R.derived("time_to_first_token_disaggregated", t_pre1 + t_kv, "s",
          "time to the first token with a prefill pool: the prefill, then the KV cache's transfer (queueing "
          "apart)", "t", "TTFT,disagg")

# -- expected: the engine model of derivations/measured.py, the prefill at its fitted share -----
u_pre = R.workload("expected_prefill_efficiency", "", "share of its bound a prefill is expected to reach (stated "
                   "with --set, else fitted to the published measurements)", "u", "pre", default="=evidence")
R.derived("prefill_time_pooled_expected", R["prefill_time_pooled_as_run"].sym / u_pre, "s",
          "expected share of one prompt in a prefill pool's pass: the as-run share at the fitted share of its bound",
          "t", "pre,pool,exp")
# A prompt alone is one more pass through the layers, each with its fixed time: the engine model's
# form for a measured time to first token (chalkboard/validation/runs.py), so the expected time is not the bound.
R.derived("prefill_time_one_expected", t_pre1 / u_pre + t_sync, "s",
          "expected prefill of one prompt alone under the layout: its bound at the fitted share and every "
          "layer's fixed time once", "t", "pre,1,exp")
# the rest as above, the decode step and the prefill at their expected times
for base, meaning in (("request_time_colocated", None), ("user_speed_colocated", None),
                      ("throughput_colocated", None),
                      ("cost_per_token_colocated", "expected rental cost of an answer token on colocated copies"),
                      ("request_time_inflight", None), ("user_speed_inflight", None), ("throughput_inflight", None),
                      ("cost_per_token_inflight", "expected rental cost of an answer token with in-flight batching"),
                      ("prefill_pool_ratio", None),
                      ("prefill_cost_per_token",
                       "expected rental cost per answer token of the prompt's prefill on a prefill pool"),
                      ("cost_per_token_disaggregated", "expected rental cost of an answer token with a prefill pool")):
    R.variant(base, EXPECTED, meaning)

# -- queueing: the first token waits for the prompts ahead of it ----------------------------------
# Prompts arrive at random (Poisson) and a prefill server takes the same time for each: an M/D/1
# queue, whose mean wait is Pollaczek-Khinchine's ρ·s/(2(1−ρ)) (Kleinrock, "Queueing Systems" vol. 1,
# 1975, eq. 5.73 with a deterministic service). A server batching B prompts in a pass serves one in
# pass/B; the prompt then waits for its whole pass.
rho = R.workload("prefill_load", "", "share of the time a prefill server is busy at the offered load: prompts "
                 "arriving per second times its time per prompt (below 1, or the queue grows without end)",
                 "ρ", "pre", default="0.5", share=True)
t_pass = R["prefill_time_layout"].sym
w_q = R.derived("prefill_queue_wait", rho * (t_pass * B_1 / B) / (2 * (1 - rho)), "s",
                "mean time a prompt waits for a prefill server that batches B prompts a pass, at prefill_load: "
                "M/D/1, ρ·s/(2(1−ρ)) with s the pass's time per prompt", "W", "pre",
                valid="the prefill server is busy all the time (prefill_load at or above 1): the queue never empties")
R.derived("time_to_first_token_queued", w_q + t_pass + R["kv_transfer_time"].sym, "s",
          "time to the first token on a prefill server at prefill_load: the wait in its queue, the pass of the "
          "prompt's batch, then the KV cache's transfer to a decoding copy", "t", "TTFT,queue")
rho_co = R.derived("prefill_load_colocated", B / B_1 * t_pre1 / t_req, "",
                   "share of a colocated copy's time spent prefilling: the load its own prompts put on it as a "
                   "prefill server (prefills go first, as vLLM's and SGLang's schedulers admit them)", "ρ", "coloc",
                   share=True)
R.derived("time_to_first_token_colocated",
          R.at("prefill_queue_wait", {rho: rho_co, B: B_1, t_pass: t_pre1}, keep=("prefill_time_layout",)) + t_pre1,
          "s", "time to the first token on a colocated copy: the wait for the prefills queued ahead (M/D/1 at "
          "prefill_load_colocated), then its own prefill", "t", "TTFT,coloc",
          how="prefill_queue_wait at prefill_load = prefill_load_colocated and batch = 1 sequence (each prompt "
              "served in prefill_time_one), plus prefill_time_one")
rho_if = R.derived("prefill_load_inflight", B / B_1 * t_pool / t_req_if, "",
                   "share of an in-flight batching copy's time spent on its prompts' chunks: the load its own "
                   "prompts put on it", "ρ", "IFB", share=True)
R.derived("time_to_first_token_inflight",
          R.at("prefill_queue_wait", {rho: rho_if, B: B_1, t_pass: t_pool}, keep=("prefill_time_layout",))
          + n_pass * B_1 / n_budget * t_step_layout + t_pool,
          "s", "time to the first token with in-flight batching: the wait for the prompts queued ahead, each its "
          "share of the prefill (M/D/1 at prefill_load_inflight), then the steps its chunks ride on (the prompt over "
          "the step's token budget) and its own share of the prefill", "t", "TTFT,IFB",
          how="prefill_queue_wait at prefill_load = prefill_load_inflight, each prompt served in "
              "prefill_time_pooled; plus pass_tokens / step_token_budget decode steps and prefill_time_pooled")
# ... and expected: the prompts' prefills and the decode steps at their expected times, the queue's load with them
# (plan judges a --max-ttft by these where it judges by the expected numbers)
for base in ("prefill_load_colocated", "prefill_load_inflight", "time_to_first_token_colocated",
             "time_to_first_token_inflight", "time_to_first_token_disaggregated"):
    R.variant(base, EXPECTED)
