"""Mixture of experts on a rack: expert parallelism and the all-to-all.

Seed 004 lines 33, 31, 29, 19, 17, 25, 23 and 13: put different experts on different GPUs
(expert parallelism). DeepSeek's 256 experts on a 72-GPU rack do not divide, so use 64
GPUs, 4 experts each (line 33). Every token is sent to its k experts and the results come
back (dispatch and combine, line 31): an all-to-all that is fast inside one scale-up domain
(NVLink, "two hops" through the switches) and "about eight times slower" over the
scale-out network (line 19). Spread one layer over two racks and half the traffic leaves
the rack (line 17), so "one rack bounds the size of an expert layer" (line 25).

Model of spreading a layer over n racks: the same S_E expert chips and the same batch are
split evenly across the racks, routing is uniform, so a fraction 1 − 1/n of each chip's
all-to-all bytes crosses the scale-out network while the rest stays on the scale-up network;
the two run in parallel. Tokens whose expert sits on their own chip are counted as traffic too
(an upper bound that matters only for small domains).
"""
import sympy as sp

from . import rules

from .inputs import (R, B, C_hbm, W, W_up, W_out, D_up, E, k, d_model, beta_w, delta,
                     n_racks, n_moe)
from .roofline import t_step

R.section(
    "moe_rack", "How is a mixture-of-experts layer laid out on a rack?",
    seeds=("004:33", "004:31", "004:19", "004:17", "004:25", "004:23", "004:13"),
    chapter="moe",
    question="How many experts go on each GPU, how much all-to-all traffic does a step make, "
             "and what happens when one MoE layer spans more than one rack?",
    takeaway="{model} on {hardware}: {expert_chips} share the experts of a layer, {experts_per_chip}; the scale-up "
             "network is {scaleup_scaleout_ratio} times faster than scale-out, so spanning two "
             "racks sends {offrack_fraction_two_racks} of the all-to-all over the slow network.",
    featured=("experts_per_chip", "tokens_per_expert", "a2a_bytes_per_token", "offrack_fraction",
              "a2a_time_scaleup", "a2a_time_scaleout", "scaleup_scaleout_ratio",
              "moe_capacity_params", "domain_dies", "cables_single_tier"),
)

n_dies = R.hardware("dies_per_package", "die/chip", "compute dies in one package", "n", "die",
                    whole=True, most=(1024, "packages hold a few dies"))
S_E = R.workload("expert_chips", "chip", "chips the experts of one layer are spread over", "S", "E",
                 default="=rule:expert_chips")
beta_act = R.workload("bytes_per_activation", "byte",
                      "bytes per activation number sent between chips (the all-to-all, tensor-parallel "
                      "all-reduces) or moved by a matmul",
                      "β", "act", default="2 byte",
                      source="bf16 activations (DeepSeek-V3 dispatches in FP8: --set bytes_per_activation=1)")
links = R.workload("links_per_chip", "cable/chip", "scale-up links (cables) from each chip to the switches",
                   "ℓ", default="18 cable/chip",
                   source="NVIDIA fifth-generation NVLink: 18 links per Blackwell GPU")
t_target = R.workload("target_step_time", "s", "the step time a service aims for", "t", "target",
                      default="20 ms", source="the lecture's common 20 ms step (seed 004, line 63)")
c_a2a = R.constant("a2a_vectors_per_token", "2 /token",
                   "activation vectors each token sends per expert: one out (dispatch), one back (combine)",
                   "c", "a2a", source="the lecture's dispatch and combine (seed 004, line 31)")


R.rule("expert_chips", ("experts", "scaleup_domain"),
       "the largest number of chips not above the scale-up domain that divides the experts evenly"
       )(rules.expert_chips)


R.derived("expert_ratio", E / k, "",
          "routed experts per expert a token uses: the lecture's expert sparsity ('1 in 32')", "s", "E", moe_only=True)
epc = R.derived("experts_per_chip", E / S_E, "1/chip", "routed experts on each chip", "E", "chip", moe_only=True)
tpe = R.derived("tokens_per_expert", B * delta * k / E, "token",
                "tokens each expert processes per step, if routing is balanced", "T", "E", moe_only=True)
a2a_tok = R.derived("a2a_bytes_per_token", c_a2a * k * d_model * beta_act, "byte/token",
                    "all-to-all bytes per token per MoE layer: k activations out and k back", "b", "a2a", moe_only=True)
a2a_chip = R.derived("a2a_bytes_per_chip", B * delta * n_moe * a2a_tok / S_E, "byte/chip",
                     "all-to-all bytes each chip sends per step, over all MoE layers", "V", "a2a", moe_only=True)
f_out = R.derived("offrack_fraction", 1 - 1 / n_racks, "",
                  "share of all-to-all traffic that leaves the rack when a layer spans n racks", "f", "out", share=True)
two_racks = R.constant("two_racks", "2", "a layer spread over two racks", "n", "2",
                       source="the lecture's example (seed 004, line 17)")
R.derived("offrack_fraction_two_racks", (1 - 1 / n_racks).xreplace({n_racks: two_racks}), "",
          "share of all-to-all traffic that leaves the rack when a layer spans two racks", "f", "out,2",
          how="offrack_fraction at racks = 2", share=True)
t_up = R.derived("a2a_time_scaleup", a2a_chip * (1 - f_out) / W_up, "s",
                 "time to send the in-rack share of the all-to-all over the scale-up network", "t", "up", moe_only=True)
t_out = R.derived("a2a_time_scaleout", a2a_chip * f_out / W_out, "s",
                  "time to send the off-rack share over the scale-out network", "t", "out", moe_only=True)
t_comm = R.derived("comm_time", sp.Max(t_up, t_out), "s",
                   "all-to-all time per step: the slower of the two networks (they run in parallel)",
                   "t", "comm", moe_only=True)
ratio_net = R.derived("scaleup_scaleout_ratio", W_up / W_out, "",
                      "how many times faster the scale-up network is than scale-out, per chip", "ρ", "net")
comm_vs_step = R.derived("comm_to_step", t_comm / t_step, "",
                         "all-to-all time over the roofline step time: above 1, communication bounds the step",
                         "κ", moe_only=True)
cap = R.derived("moe_capacity_params", S_E * C_hbm / beta_w, "parameter",
                "parameters the HBM of the expert chips can hold", "N", "cap", moe_only=True)
bw_params = R.derived("moe_bandwidth_params", S_E * W * t_target / beta_w, "parameter",
                      "parameters the expert chips can read within the target step time", "N", "bw", moe_only=True)
dies = R.derived("domain_dies", D_up * n_dies, "die", "the scale-up domain counted in dies", "D", "die")
cables = R.derived("cables_single_tier", D_up * links, "cable",
                   "cables from chips to switches in a single-tier switched domain", "K")
R.derived("cable_growth_on_doubling", R.expand(cables).subs(D_up, 2 * D_up) / R.expand(cables), "",
          "how many times the cables grow when the domain doubles", "g", "K",
          how="cables_single_tier at 2·D over cables_single_tier at D")
