"""Speculative decoding and multi-token prediction: more than one token per decode step.

The lecture names the escape from one token per sequence per step in its first minutes
("speculative decoding or multi-token prediction"). A cheap draft (a small model, or the
multi-token-prediction module DeepSeek-V3 ships) proposes k tokens; the model then checks all
of them in one pass over k + 1 positions of each sequence, keeping the drafted tokens up to the
first it disagrees with, plus one token of its own. The check is a decode step with k + 1 tokens
per sequence: the weights are read once, the compute and the experts touched grow with the
tokens, and the KV cache is read once for all of them.

With each drafted token accepted with probability a (given the ones before it were), the
expected tokens a step gains per sequence is the geometric sum 1 + a + ... + a^k =
(1 − a^(k+1))/(1 − a) (Leviathan, Kalman and Matias 2023, "Fast Inference from Transformers via
Speculative Decoding", eq. 1). The strict bound stays strict for any acceptance: at best every
drafted token is accepted (k + 1 tokens a step) and drafting costs nothing.
"""
import sympy as sp

from .inputs import PROBABILITY
from .inputs import R, B, F, W, c_F, delta, tau, beta_w, price
from .layout import S_layout, t_step as t_step_layout

R.section(
    "speculative", "How much faster is decoding with speculative decoding or multi-token prediction?",
    seeds=("000@1:49",),
    chapter="batch",
    question="A draft proposes draft_tokens tokens per sequence, each accepted with probability "
             "draft_acceptance; the model verifies them in one pass over draft_tokens + 1 positions. "
             "How many tokens does a step gain, how long does it take with the draft's own passes, "
             "and what is the fastest any acceptance allows?",
    takeaway="With {draft_tokens} drafted by {model}'s draft and accepted at {draft_acceptance}, a step "
             "gains {accepted_tokens_per_step} and takes {spec_step_time} (verify "
             "{verify_step_time}, drafting {draft_time}): each sequence gets {user_speed_spec}, "
             "{spec_speedup} times the speed without a draft; no acceptance can give more than "
             "{user_speed_spec_max}.",
    featured=("accepted_tokens_per_step", "verify_step_time", "draft_time", "spec_step_time",
              "user_speed_spec", "spec_speedup", "cost_per_token_spec", "user_speed_spec_max"),
)

# A model card that ships a draft states it: DeepSeek-V3's one MTP module (models.yaml)
mtp_k = R.model("mtp_draft_tokens", "token/sequence",
                "tokens the model's own multi-token-prediction modules draft per step (one per module)",
                "k", "MTP")
mtp_a = R.model("mtp_acceptance", "", "acceptance rate of a drafted token, as the model's report states it",
                "a", "MTP",
                below=PROBABILITY)
mtp_n = R.model("mtp_params", "parameter", "parameters of the multi-token-prediction modules", "N", "MTP")
mtp_na = R.model("mtp_params_active", "parameter",
                 "parameters the multi-token-prediction modules use for one drafted token", "N", "MTP,act")

k_d = R.workload("draft_tokens", "token/sequence", "tokens the draft proposes per sequence per step", "k", "d",
                 default="=mtp_draft_tokens",
                 zero=True)
a_d = R.workload("draft_acceptance", "",
                 "probability that the model accepts a drafted token, given it accepted the ones before it",
                 "a", "d", default="=mtp_acceptance",
                 below=PROBABILITY)
N_d = R.workload("draft_params", "parameter", "parameters of the draft (a draft model, or MTP modules)",
                 "N", "d", default="=mtp_params")
N_da = R.workload("draft_params_active", "parameter", "parameters the draft uses for one drafted token",
                  "N", "d,act", default="=mtp_params_active")

n_d = k_d / delta      # drafted tokens per step, as a count: the exponent of the acceptance

acc = R.derived(
    "accepted_tokens_per_step", delta * (1 - a_d ** (n_d + 1)) / (1 - a_d), "token/sequence",
    "expected tokens a step gains per sequence: the drafted tokens accepted in a row, plus the model's "
    "own (Leviathan et al. 2023, eq. 1)", "δ", "spec")
t_verify = R.derived(
    "verify_step_time", R.at("step_time_layout", {delta: delta + k_d}), "s",
    "the verifying pass: a decode step under the layout over draft_tokens + 1 tokens per sequence (weights "
    "and KV read once; compute, experts touched and communication for every token)", "t", "verify",
    how="step_time_layout at tokens_per_step = draft_tokens + 1")
t_verify_min = R.derived(
    "verify_step_time_min", R.at("step_time_layout_min", {delta: delta + k_d}), "s",
    "strict lower bound on the verifying pass", "t", "verify,min",
    how="step_time_layout_min at tokens_per_step = draft_tokens + 1")
# the draft spread evenly over the copy's chips, its communication left out: a cost it cannot beat
t_draft_one = sp.Max(c_F * delta * B * N_da / (S_layout * F),
                     sp.Min(N_d, delta * B * N_da / tau) * beta_w / (S_layout * W))
t_draft = R.derived(
    "draft_time", n_d * t_draft_one, "s",
    "the draft's passes, one per drafted token: its active parameters' compute, and reading its weights "
    "(at most those the batch's tokens use), spread over the copy's chips", "t", "draft")
t_spec = R.derived("spec_step_time", t_verify + t_draft, "s",
                   "a decode step with speculation: the draft's passes, then the verifying pass", "t", "spec")
R.derived("user_speed_spec", acc / t_spec, "token/s/sequence",
          "expected tokens per second each sequence gets with speculation", "v", "spec")
R.derived("throughput_spec", B * acc / t_spec, "token/s",
          "expected tokens per second from the layout's chips with speculation", "Θ", "spec")
R.derived("cost_per_token_spec", price * S_layout * t_spec / (B * acc), "USD/token",
          "rental cost of a token with speculation", "c", "tok,spec")
R.derived("spec_speedup", acc * t_step_layout / (delta * t_spec), "",
          "speed each sequence gets with speculation over its speed without (both under the layout)",
          "g", "spec")
R.derived("user_speed_spec_max", (delta + k_d) / t_verify_min, "token/s/sequence",
          "most tokens per second any acceptance allows with draft_tokens drafted: every drafted token "
          "accepted, drafting free, the verifying pass at its strict bound", "v", "spec,max")
