"""How one copy of the model is laid out on its chips, and what communication costs in a step.

The lecture's picture spreads one copy evenly over S chips: every term of the roofline divides
by S (roofline.py). Deployments lay a copy out by parallelism axes instead, and each axis
decides what a chip holds, what it reads and what it sends:

* tensor parallelism (tp): each attention and dense layer is split over tp chips, which
  all-reduce the residual stream twice a layer (Megatron-LM: after attention, after the MLP);
  a chip holds 1/tp of those weights and 1/tp of the KV heads, but never less than one KV head
  (with more ranks than KV heads the cache is replicated) and, for MLA, the whole latent (one
  latent per token per layer, shared by every head, cannot be split by heads);
* attention data parallelism (dp_attention): the attention and dense weights are replicated in
  dp_attention groups inside the copy, each serving B / dp_attention of the sequences with their
  KV cache (DeepSeek-style serving);
* expert parallelism (ep): the routed experts of a layer are spread over ep chips, each token
  sent to its k experts and back (dispatch and combine, moe_rack.py), save the 1/ep that its own
  chip holds (at ep = 1 nothing is sent);
* pipeline parallelism (pp): the layers are cut into pp stages, one after the other, each
  passing its tokens' residual vectors to the next (pipeline.py).

The default layout is what a practitioner deploys on the chips of one copy (the chip's scale-up
domain, inputs.serving_chips): a dense model tensor-parallel over them as far as whole query heads
allow (on 72 chips, a 64-head model runs 9 groups of 8); a mixture of experts expert-parallel over
them with its attention data-parallel; one stage. Setting any of tp, dp_attention, pp sets the chips
too (tp · dp_attention · pp), so a layout is stated by its degrees alone. With those
defaults a dense model's weight and KV reads are the even spread's; an MoE's are not (each chip
holds and reads the attention and shared weights whole).

Each chip's work in a stage is its compute, its weight and KV reads, and its share of the
collectives. ``step_time_layout`` is what decode runs: compute and reads overlapped, the
tensor-parallel all-reduces and the expert dispatch after them (a layer needs the reduced
residual before it goes on), stage after stage. The hops between stages cross the scale-out
network, which not every chip publishes, so they are a quantity of their own (``pp_comm_time``)
and not in the step: with pp > 1 add it. ``step_time_layout_min`` is a strict lower
bound: communication overlaps the rest at best, a chip reads at least the average share of
the experts a token needs, and at least one expert where it holds any that a step reads, and a
token crosses the scale-out network once to each other domain that holds any of its experts
(``ep_comm_time_min``), in the dispatch format the deployment states.
"""
import sympy as sp

from . import rules
from .core import Variant
from .inputs import DEGREE
from .inputs import (R, B, L, F, W, W_up, W_out, D_up, E, k, delta, tau, c_F, beta_w, b_kv, a_attn,
                     d_model, n_layers, n_moe, n_kv_heads, n_lat_vec)
from .latency_cost import B_1
from .moe_rack import beta_act, c_a2a
from .params import CHOICE_INPUTS
from .pipeline import b_stage
from .roofline import N_always, N_routed, f_read
from .textbook import alpha, c_1, c_AR, b_tp, c_tp

R.section(
    "layout", "How is one copy laid out, and what does communication cost?",
    seeds=("004:33", "004:31"),
    chapter="moe",
    question="With tensor parallelism tp, attention data parallelism dp_attention, expert "
             "parallelism ep and pp pipeline stages, what does each chip hold and read, how long do "
             "the all-reduces and the expert all-to-all take, and what is one decode step?",
    takeaway="{model} on {layout_chips} of {hardware}, laid out tp = {tp}, dp_attention = {dp_attention}, "
             "ep = {ep}, pp = {pp}: each chip holds {memory_per_chip_layout} ({hbm_fill_layout} of its HBM). "
             "At the batch of {batch} a step takes {step_time_layout}, of which {comm_time_layout} is "
             "communication ({tp_comm_time} in tensor-parallel all-reduces, {ep_comm_time} in the expert "
             "all-to-all); no step can be shorter than {step_time_layout_min}. One sequence alone takes "
             "{latency_floor_layout} per token under this placement.",
    featured=("weights_per_chip_layout", "kv_per_chip_layout", "memory_per_chip_layout", "hbm_fill_layout",
              "compute_time_layout", "weight_fetch_time_layout", "kv_fetch_time_layout", "tp_comm_time",
              "ep_comm_time", "comm_time_layout", "step_time_layout", "step_time_layout_min",
              "latency_floor_layout"),
)

# -- the layout ----------------------------------------------------------------------------------
tp = R.workload("tp", "", "tensor-parallel degree: chips each attention and dense layer is split over",
                "t", "TP", default="=rule:tensor_parallel",
                whole=True, most=DEGREE, divides=("n_heads", "each tensor-parallel rank holds whole query heads"))
pp = R.workload("pp", "", "pipeline stages the layers of one copy are cut into", "p", "PP", default="1",
                source="one stage: a copy on one scale-up domain",
                whole=True, most=DEGREE, divides=("layers", "each pipeline stage holds whole layers"))
dp = R.workload("dp_attention", "",
                "attention data-parallel groups inside one copy: each holds the attention and dense weights "
                "and serves its share of the sequences", "d", "attn", default="=rule:attention_groups",
                whole=True, most=DEGREE)
ep = R.workload("ep", "", "expert-parallel degree: chips the routed experts of a layer are spread over",
                "e", "EP", default="=rule:expert_parallel",
                whole=True, most=DEGREE, divides=("experts", "each chip of the expert-parallel group holds whole experts"))

R.rule("tensor_parallel", ("chips", "moe_layers", "pp", "n_heads"),
       "a dense model tensor-parallel over the chips of a pipeline stage, as far as whole query heads "
       "allow (the largest divisor of both; further groups are attention data-parallel); a mixture of "
       "experts not split (its attention data-parallel, its experts expert-parallel)",
       optional=("n_heads",))(rules.tensor_parallel)
R.rule("attention_groups", ("chips", "tp", "pp"),
       "the chips of the copy left after tensor and pipeline parallelism: chips / (tp · pp)"
       )(rules.attention_groups)
R.rule("expert_parallel", ("experts", "chips", "pp", "moe_layers"),
       "the largest number of chips of one stage that divides the experts evenly (1 for a dense model)"
       )(rules.expert_parallel)

n_split = R.model("kv_shards", "", "ways one token's KV cache can be split between tensor-parallel ranks: "
                  "its KV heads (MHA, GQA), or 1 for MLA's latent, which every head shares",
                  "h", "split", field="<attention>",
                  note="derived from the architecture (section: how is one copy laid out)")
R.derived("kv_shards_gqa", n_kv_heads, "",
          "KV heads: a tensor-parallel rank holds whole heads, so at most this many ranks share a token's KV",
          "h", "split,GQA")
R.derived("kv_shards_mla", n_lat_vec * tau, "",
          "MLA: one latent per token per layer, read by every head, so it is not split between ranks",
          "h", "split,MLA")
KV_SHARDS_BY_ATTENTION = {"mha": "kv_shards_gqa", "gqa": "kv_shards_gqa", "mla": "kv_shards_mla"}

S_layout = R.derived("layout_chips", tp * dp * pp * c_1, "chip",
                     "chips the layout uses: tp · dp_attention · pp", "S", "layout")
f_kv = R.derived("kv_share_per_rank", sp.Max(1 / tp, 1 / n_split), "",
                 "share of a sequence's KV cache each tensor-parallel rank holds and reads: 1/tp, but never "
                 "less than one KV head (replicated past that)", "f", "KV,rank", share=True)

# The lecture's quantities whose form under the layout is derived by hand (here, in prefill.py and
# measured.py). Every other one is made from its lecture form with these in place (R.variant), and
# joins the table; eval answers the derived ones under the layout (UNDER_LAYOUT, derivations/__init__.py).
LAYOUT = Variant("layout", "layout", "under the layout", table={
    "chips": "layout_chips", "step_time": "step_time_layout", "step_time_min": "step_time_layout_min",
    "latency_floor": "latency_floor_layout", "compute_time": "compute_time_layout",
    "weight_fetch_time": "weight_fetch_time_layout", "weight_fetch_time_min": "weight_fetch_time_layout_min",
    "kv_fetch_time": "kv_fetch_time_layout", "weights_per_chip": "weights_per_chip_layout",
    "kv_per_chip": "kv_per_chip_layout", "mfu": "mfu_layout", "step_time_expected": "step_time_expected_layout",
    "prefill_time": "prefill_time_layout", "prefill_compute_time": "prefill_compute_time_layout",
    "prefill_weight_fetch_time": "prefill_weight_fetch_time_layout"})

# -- what each chip holds ------------------------------------------------------------------------
m_w = R.derived(
    "weights_per_chip_layout", (N_always / tp + N_routed / ep) * beta_w / (pp * c_1), "byte/chip",
    "HBM each chip gives to weights under the layout: its stage's always-read weights split by tp (and "
    "replicated by dp_attention), its share of the routed experts", "m", "w,layout", fit_measure=True)
m_kv = R.derived(
    "kv_per_chip_layout", B * L * b_kv * f_kv / (dp * pp * c_1), "byte/chip",
    "HBM each chip gives to the KV cache under the layout: its group's sequences, its rank's share of "
    "each (a whole MLA latent), its stage's layers", "m", "KV,layout", fit_measure=True)
R.variant("memory_per_chip", LAYOUT, "HBM each chip needs under the layout: its weights and its KV cache")
R.variant("hbm_fill", LAYOUT, "share of each chip's HBM the layout needs: above 1 it does not fit", sub="layout")

# -- one stage, on one chip ----------------------------------------------------------------------
t_c = R.derived(
    "compute_time_layout",
    (B / dp * (c_F * delta * N_always + L * a_attn) / tp + c_F * delta * B * k / E * N_routed / ep)
    / (pp * F * c_1), "s",
    "compute of one chip in one stage: its group's tokens through its share of the attention and dense "
    "layers, and the tokens routed to its experts (balanced routing)", "t", "compute,layout")
e_chip = R.derived(
    "experts_read_per_chip", sp.Max(E * f_read / ep, 1), "",
    "routed experts one chip reads per MoE layer in a step (uniform routing), at least one: each "
    "token's experts sit whole on some chip", "E", "read,chip")
e_chip_min = sp.Max(k / ep, 1)   # the strict form: one token's k experts, spread over as many chips as ep allows
t_w = R.derived(
    "weight_fetch_time_layout", (N_always / tp + e_chip * N_routed / E) * beta_w / (pp * W * c_1), "s",
    "time for one chip of one stage to read its share of the always-read weights and the experts it "
    "holds that the step touches", "t", "weights,layout")
t_w_min = R.derived(
    "weight_fetch_time_layout_min", (N_always / tp + e_chip_min * N_routed / E) * beta_w / (pp * W * c_1), "s",
    "strict lower bound on one chip's weight reads: its share of the always-read weights and at least "
    "the experts one token needs, spread as widely as ep allows", "t", "weights,layout,min")
t_kv = R.derived("kv_fetch_time_layout", m_kv / W, "s",
                 "time for one chip to read its KV cache once", "t", "KV,layout")

# -- where the groups run: inside one scale-up domain, or across several -------------------------
# A group larger than the chip's scale-up domain sends part of its traffic over the scale-out
# network, at the per-chip network bandwidth, never at scale-up speed.
R.rule("tp_offdomain_share", ("tp", "scaleup_domain"),
       "1 where the tensor-parallel group is larger than the scale-up domain (its ring crosses the scale-out "
       "network at every step, so the all-reduce runs at that speed), else 0")(rules.tp_offdomain_share)
R.rule("ep_offdomain_share", ("ep", "scaleup_domain"),
       "share of the expert-parallel group outside one chip's scale-up domain: 1 − domain/ep, 0 within one "
       "domain")(rules.ep_offdomain_share)
R.rule("offdomain_bandwidth", ("tp", "ep", "scaleup_domain", "scaleup_bandwidth", "scaleout_bandwidth"),
       "the chip's scale-out bandwidth where a tensor- or expert-parallel group spans scale-up domains (needed "
       "then); within one domain no traffic leaves it", optional=("scaleout_bandwidth",))(rules.offdomain_bandwidth)
f_tp_x = R.workload("tp_offdomain_share", "", "share of the tensor-parallel all-reduce's traffic that crosses "
                    "the scale-out network: 1 where the group spans scale-up domains", "f", "TP,out",
                    default="=rule:tp_offdomain_share")
f_ep_x = R.workload("ep_offdomain_share", "", "share of the expert all-to-all's bytes sent to chips in another "
                    "scale-up domain (uniform routing)", "f", "EP,out", default="=rule:ep_offdomain_share")
W_x = R.workload("offdomain_bandwidth", "byte/s/chip",
                 "bandwidth each chip's traffic to another scale-up domain gets: its scale-out network's",
                 "W", "x", default="=rule:offdomain_bandwidth")
# How an all-reduce runs depends on the fabric. A ring (what NCCL runs on any fabric, and what a
# torus runs) makes 2·(n−1) steps; where every chip reaches every other in one hop, the serving
# libraries run a one-shot all-reduce for small buffers (each chip sends its whole buffer to every
# peer and sums what it receives: one step, (n−1) buffers sent) and a two-shot one for larger ones
# (a reduce-scatter and an all-gather of one step each, the ring's bytes): TensorRT-LLM's
# AllReduceStrategy ONESHOT/TWOSHOT, vLLM's custom all-reduce; NVIDIA, "3x Faster AllReduce with
# NVSwitch and TensorRT-LLM MultiShot" (2024): two communication steps instead of 2·(n−1).
d_dir = R.hardware("direct_collectives", "",
                   "1 where every chip of the scale-up domain reaches every other in one hop (a switch, or a "
                   "full mesh of links), so an all-reduce runs in one or two steps; 0 on a torus, where it "
                   "runs around a ring", "d", "direct", field="<scaleup_topology>")
CHOICE_INPUTS["direct_collectives"] = ("scaleup_topology", {
    "switch": "1", "mesh": "1", "torus": "0",
    None: ("torus", "a ring all-reduce assumed, which runs on any fabric")})

# The fixed time of a one- or two-shot step is what the fastest published all-reduce of a few hundred
# bytes takes on the fabric (kernel launch, the flags each peer waits on, one NVLink crossing): about
# 3 µs on Hopper, not the scaling-book's 1 µs ICI hop, which stays the ring's step (hardware.yaml).
a_meas = R.hardware("allreduce_latency", "s",
                    "time of one small all-reduce on the chip's scale-up fabric: the fastest published "
                    "measurement of a one-shot call of a few hundred bytes, launch and synchronisation included",
                    "α", "AR,meas")
R.rule("allreduce_call_latency", ("allreduce_latency", "ring_hop_latency"),
       "the chip's measured small all-reduce (allreduce_latency, the fastest published on its fabric) where "
       "hardware.yaml gives one, else the ring's per-hop latency", optional=("allreduce_latency",)
       )(rules.allreduce_call_latency)
a_call = R.workload("allreduce_step_latency", "s",
                    "fixed time of each step of a one- or two-shot all-reduce: the fabric's fastest measured "
                    "small all-reduce", "α", "step", default="=rule:allreduce_call_latency")

# The deployment's wire formats: DeepEP's kernels and DeepSeek-V3/R1's inference system dispatch in FP8 and
# combine in BF16, so the two directions of the all-to-all need not carry the same bytes.
beta_disp = R.workload("dispatch_bytes_per_activation", "byte",
                       "bytes per activation number a token's dispatch to its experts sends (the combine returns "
                       "the results at bytes_per_activation)", "β", "disp", default="=bytes_per_activation",
                       source="the activations' format unless the deployment states its own: DeepEP's normal and "
                              "low-latency kernels run 'FP8 dispatching and BF16 combining' "
                              "(https://github.com/deepseek-ai/DeepEP, README)")
b_ep = R.derived("ep_bytes_per_token", k * d_model * (beta_disp + beta_act) / tau, "byte/token",
                 "expert all-to-all bytes per token per MoE layer in the deployment's formats: k activations "
                 "dispatched, k results combined", "b", "EP", moe_only=True)
# A token whose experts sit on several chips of one other scale-up domain need cross the scale-out network
# only once to reach them: DeepEP's internode dispatch sends it once to each node that holds one of its
# experts and forwards it there over NVLink, and its combine reduces there before the return trip.
r_dom = R.derived(
    "ep_remote_domains_per_token", f_ep_x / (1 - f_ep_x) * (1 - f_ep_x ** k), "",
    "scale-up domains other than the sender's that hold at least one of a token's k experts (uniform "
    "routing): the copies of it that must cross the scale-out network", "n", "EP,dom")

# seconds per byte a chip sends: the in-domain and off-domain shares go out in parallel
s_tp = sp.Max((1 - f_tp_x) / W_up, f_tp_x / W_x)
# Of a chip's dispatch, the 1/ep routed to its own experts crosses no link (an all-to-all copies a rank's
# split for itself in place; Megatron-Core's all_to_all returns its input on an expert group of one,
# tensor_parallel/mappings.py), so the scale-up link carries 1 − f_out − 1/ep and the scale-out network f_out.
s_ep = sp.Max((1 - f_ep_x - 1 / ep) / W_up, f_ep_x / W_x)

# -- communication ------------------------------------------------------------------------------
# (the all-to-all bytes per token are read through their definition, not the moe_only quantity:
# for a dense model there are no MoE layers, and the expert traffic is zero, not "not applicable")
n_ar = c_tp * tau                          # all-reduces per layer
v_tp = B / dp * delta * b_tp * s_tp / c_1  # seconds to send one layer's all-reduce buffers once
lat = sp.Min(1, tp - 1)                    # no all-reduce, and no latency, at tp = 1
lat_ep = sp.Min(1, ep - 1)                 # no dispatch or combine leaves the chip, so no hop, at ep = 1
v_call = v_tp / n_ar                       # seconds to send one all-reduce's buffer once
t_ring = c_AR * (tp - 1) * (alpha + v_call / tp)
t_one = lat * a_call + (tp - 1) * v_call
t_two = c_AR * (lat * a_call + (tp - 1) * v_call / tp)
R.derived(
    "tp_allreduce_call_time", d_dir * sp.Min(t_one, t_two) + (1 - d_dir) * t_ring, "s",
    "one tensor-parallel all-reduce of the step's residual vectors (of the two a layer): one-shot or two-shot, "
    "whichever is faster, where every chip reaches every other in one hop, else a ring", "t", "AR,call",
    note="TensorRT-LLM's custom all-reduce (AllReduceStrategy ONESHOT/TWOSHOT) on the fabric's measured step")
t_tp_ring = R.derived("tp_allreduce_time_ring", n_layers / pp * n_ar * t_ring, "s",
                      "the stage's tensor-parallel all-reduces run as rings: 2·(tp − 1) steps each",
                      "t", "TP,ring")
t_tp_one = R.derived("tp_allreduce_time_one_shot", n_layers / pp * n_ar * t_one, "s",
                     "the stage's tensor-parallel all-reduces run one-shot: one step each, every chip sending its "
                     "buffer to every peer", "t", "TP,1")
t_tp_two = R.derived("tp_allreduce_time_two_shot", n_layers / pp * n_ar * t_two, "s",
                     "the stage's tensor-parallel all-reduces run two-shot: a one-step reduce-scatter, then a "
                     "one-step all-gather", "t", "TP,2")
t_tp = R.derived(
    "tp_comm_time", d_dir * sp.Min(t_tp_one, t_tp_two) + (1 - d_dir) * t_tp_ring, "s",
    "tensor-parallel all-reduces of one stage: two a layer of the group's residual vectors over tp chips, "
    "one-shot or two-shot (whichever is faster) where every chip reaches every other in one hop, else a "
    "ring; at the scale-up link, or the scale-out network where the group spans domains",
    "t", "TP", note="Megatron-LM (Shoeybi et al. 2019): two all-reduces per layer in the forward pass; "
                    "ring, one-shot and two-shot all-reduces as in the section on collectives")
t_tp_min = R.derived(
    "tp_comm_time_min", sp.Min(t_tp_one, t_tp_two), "s",
    "strict lower bound on the tensor-parallel all-reduces of one stage: the faster of one step (one-shot) "
    "and two (two-shot) on any fabric", "t", "TP,min")
t_ep = R.derived(
    "ep_comm_time",
    n_moe / pp * (lat_ep * c_a2a * tau * alpha + B * delta * R.expand(b_ep) * s_ep / (ep * c_1)), "s",
    "expert dispatch and combine of one stage: each MoE layer sends every token's k activations to its "
    "experts and back, spread over ep chips' links (scale-up within the domain, scale-out to the chips of "
    "other domains, in parallel), with one hop of latency each way; the 1/ep routed to the sender's own "
    "experts stays on the chip (at ep = 1 nothing is sent)",
    "t", "EP")
# strict: each copy in the domain sent once, and across domains one copy per remote domain touched
s_ep_min = sp.Max(k * (1 - f_ep_x - 1 / ep) / W_up, r_dom / W_x)
t_ep_min = R.derived(
    "ep_comm_time_min",
    n_moe / pp * (lat_ep * c_a2a * tau * alpha + B * delta * d_model * (beta_disp + beta_act) / tau * s_ep_min / (ep * c_1)),
    "s", "strict lower bound on the expert dispatch and combine of one stage: a token crosses the scale-out "
    "network once to each other scale-up domain holding any of its experts and is forwarded there over the "
    "scale-up links (DeepEP's internode kernels), in the dispatch format stated", "t", "EP,min")
t_pp = R.derived(
    "pp_comm_time", (pp - 1) * (alpha + B * delta * b_stage / (dp * W_out * c_1)), "s",
    "hops between pipeline stages: each passes the group's residual vectors over the scale-out network",
    "t", "PP")
t_x = R.derived("comm_time_layout", pp * (t_tp + t_ep), "s",
                "communication in one decode step under the layout: every stage's all-reduces and "
                "all-to-all (the hops between stages apart: pp_comm_time)", "t", "comm,layout")

# -- the step -----------------------------------------------------------------------------------
t_step = R.derived(
    "step_time_layout", pp * (sp.Max(t_c, t_w + t_kv) + t_tp + t_ep), "s",
    "decode step under the layout, as it runs: in each stage compute and reads overlapped, then the "
    "all-reduces and the expert all-to-all that the next layer waits for (the hops between stages "
    "apart: pp_comm_time)", "t", "step,layout")
R.derived(
    "step_time_layout_min", pp * sp.Max(t_c, t_w_min + t_kv, t_tp_min + t_ep_min), "s",
    "strict lower bound on a decode step under the layout: communication overlapped with compute and "
    "reads at best, each chip reading at least its share of one token's experts, each token crossing the "
    "scale-out network once to each other domain holding its experts", "t", "step,layout,min")
R.derived(
    "latency_floor_layout", R.at("step_time_layout", {B: B_1}), "s",
    "least time per token under the layout: one sequence, each layer waiting for the chip that holds the "
    "experts it reads", "t", "floor,layout", how="step_time_layout at batch = 1 sequence")
# the lecture's throughput, speeds and cost with the layout's step, floor and chips in place
R.variant("throughput", LAYOUT, "tokens per second from the chips of the layout")
R.variant("throughput_per_chip", LAYOUT)
R.variant("user_speed", LAYOUT)
R.variant("speed_ceiling", LAYOUT, "most tokens per second one sequence can get under the layout, at its latency floor")
R.variant("cost_per_token", LAYOUT, "rental cost of the layout's chips for one step, shared by the tokens it makes")
R.derived("mfu_layout", t_c / t_step, "",
          "fraction of peak compute used in a step under the layout: one chip's compute over the step it "
          "runs in (below 1/pp with pp stages, each chip idle while the others run)", "MFU", "layout", share=True)
R.derived("comm_share_layout", t_x / t_step, "",
          "share of a decode step spent in communication under the layout", "κ", "layout", share=True)
