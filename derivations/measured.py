"""From a measurement to an efficiency, and from an efficiency to an expected number.

The rest of the derivations give bounds: what the chips allow at best. A practitioner starts
from the other end, with a measured throughput, step time or a training run's chip-hours, and
asks how good that is. The measured inputs here have no default: each is given with ``--set``
(``eval mfu_measured --set measured_throughput="2500 token/s"``), and a quantity that reads one
without it says so.

Serving (one copy of the model on S chips, batch B): the model FLOP utilisation is the FLOP/s
the tokens needed over the chips' peak (Chowdhery et al. 2022, PaLM, Appendix B: MFU counts the
model's FLOPs, not the hardware's, so recomputation does not raise it); the memory-bandwidth
utilisation is the bytes a step must read over what the chips could read in the measured step
(Databricks' "MBU"). Training: the FLOPs of 6·N per token (and 8·N with the activations
recomputed, the hardware FLOP utilisation) over what the chip-hours could do.

Expected numbers take an efficiency as an input, never silently: ``step_time_expected`` divides
the compute time by ``expected_mfu`` and the memory time by ``expected_mbu``, so an expected
number always says which efficiencies it assumed: the ones given with --set, or else the one
fitted to the published measurements (chalkboard/validation/engine_fit.py), with its held-out range.
"""
import sympy as sp

from .core import Variant
from .inputs import R, B, S, F, W, delta, N_active, n_layers, price
from .layout import LAYOUT, pp, t_c as t_c_layout, t_w as t_w_layout, t_kv as t_kv_layout, t_tp, t_ep
from .reversible import c_train_re
from .roofline import t_compute, t_mem
from .textbook import fwd_params
from .training import C_pre, D_pre

# -- serving ------------------------------------------------------------------------------------
R.section(
    "measured_serving", "What does a measured speed say about efficiency and cost?",
    seeds=(),
    chapter="batch",
    question="A copy of the model on S chips was measured to make measured_throughput tokens per "
             "second at a batch of B: what FLOP/s and bytes/s did it achieve, what MFU and MBU is that, "
             "and what does a token cost at that speed?",
    takeaway="At {measured_throughput} on {chips} of {hardware}, {model} achieves {achieved_flops_per_chip} "
             "per chip ({mfu_measured} MFU) and reads {achieved_bandwidth_per_chip} per chip ({mbu_measured} "
             "MBU); a token costs {cost_per_token_measured}.",
    featured=("measured_step_time_from_throughput", "achieved_flops_per_chip", "mfu_measured",
              "achieved_bandwidth_per_chip", "mbu_measured", "cost_per_token_measured", "flops_per_dollar"),
)

thr = R.workload("measured_throughput", "token/s",
                 "tokens per second one copy of the model was measured to produce (decode)", "Θ", "meas")
t_step_meas = R.derived(
    "measured_step_time_from_throughput", B * delta / thr, "s",
    "the step time a measured throughput implies at the batch: B tokens per step", "t", "meas")
flops_chip = R.derived(
    "achieved_flops_per_chip", thr * fwd_params / S, "FLOP/s/chip",
    "model FLOP/s each chip achieved: 2 per active parameter per token produced", "F", "meas")
R.derived("mfu_measured", flops_chip / F, "",
          "model FLOP utilisation of the measurement: achieved over peak FLOP/s (weights' FLOPs only; "
          "attention raises the FLOPs done, not the model FLOPs counted)", "MFU", "meas", share=True)
bw_chip = R.derived(
    "achieved_bandwidth_per_chip", t_mem * W / t_step_meas, "byte/s/chip",
    "HBM bytes per second each chip must have read: a step's weights used and KV cache over the "
    "measured step time", "W", "meas")
R.derived("mbu_measured", bw_chip / W, "",
          "memory-bandwidth utilisation of the measurement: the bytes a step must read over what the "
          "chips could read in the measured step time", "MBU", "meas", share=True)
R.derived("cost_per_token_measured", price * S / thr, "USD/Mtoken",
          "rental cost of a token at the measured throughput", "c", "meas")
R.derived("flops_per_dollar", F / price, "FLOP/USD",
          "peak FLOPs one dollar of chip rental buys", "F", "USD")

# -- expected numbers from stated efficiencies -----------------------------------------------------
R.section(
    "expected", "What step time should one expect at a stated efficiency?",
    seeds=(),
    chapter="batch",
    question="If the compute runs at expected_mfu of peak and the memory reads at expected_mbu of "
             "the bandwidth (given, or else fitted to the published measurements), how "
             "long is a step, and what does a token cost?",
    takeaway="At {expected_mfu} MFU and {expected_mbu} MBU (as given, else the efficiency fitted to the "
             "published measurements at this set-up's place on the roofline), a step of {model} on {hardware} takes "
             "{step_time_expected} (bound {step_time}), {throughput_expected} per copy.",
    featured=("step_time_expected", "throughput_expected", "cost_per_token_expected"),
)
# Their default is the evidence: an engine model fitted to the published measurements
# (chalkboard/validation/engine_fit.py), refitted from measurements.yaml when read. Compute and reads add
# rather than overlap, each at its own share of peak, and each layer costs a fixed time: on the
# runs held out by source this lands within ×1.5 of seven in ten, where one efficiency on the
# overlapped roofline reached under half.
u = R.workload("expected_mfu", "", "share of peak FLOP/s a decode step's compute is expected to reach (stated "
               "with --set, else fitted to the published measurements)", "u", "exp", default="=evidence")
v = R.workload("expected_mbu", "", "share of HBM bandwidth a decode step's reads are expected to reach (stated "
               "with --set, else fitted to the published measurements)", "v", "exp", default="=evidence")
t_lay = R.workload("expected_sync_time", "s", "time each layer of a step is expected to spend on neither compute "
                   "nor reads: kernel launches, synchronisation (stated with --set, else fitted to the published "
                   "measurements)", "t", "sync", default="=evidence")
t_sync = R.derived("sync_time_expected", n_layers * t_lay, "s",
                   "expected time of a step spent on neither compute nor reads: every layer's fixed time",
                   "t", "sync,exp")
t_exp = R.derived("step_time_expected", t_compute / u + t_mem / v + t_sync, "s",
                  "expected step time: compute at expected_mfu, then reads at expected_mbu, then every "
                  "layer's fixed time (the efficiencies given, else the engine model fitted to the published "
                  "measurements)", "t", "exp")
# The quantities whose expected form is not made from their bound: derived by hand (here and in
# disaggregation.py), or the layout's form of an expected one. Every other one is made from its bound
# with these in place (R.variant), and joins the table.
EXPECTED = Variant("expected", "exp", prefix="expected ", explained=False, table={
    "step_time": "step_time_expected", "cost_per_token": "cost_per_token_expected",
    "step_time_layout": "step_time_expected_layout",
    "cost_per_token_layout": "cost_per_token_expected_layout", "prefill_time_one": "prefill_time_one_expected",
    "prefill_time_pooled": "prefill_time_pooled_expected"})
thr_exp = R.variant("throughput", EXPECTED, "expected tokens per second from one copy at the expected efficiencies")
# (per token through the throughput, in USD per million tokens: not the bound's form)
R.derived("cost_per_token_expected", price * S / thr_exp, "USD/Mtoken",
          "expected rental cost of a token at the expected efficiencies", "c", "exp")
R.variant("user_speed", EXPECTED, "expected tokens per second each sequence gets at the expected efficiencies")

# Under a layout: each stage's compute and reads at the expected shares, its collectives as they
# run, and every layer's fixed time (the engine model was fitted to the published runs under the
# layouts they state, else the one eval deploys).
t_exp_l = R.derived(
    "step_time_expected_layout", pp * (t_c_layout / u + (t_w_layout + t_kv_layout) / v + t_tp + t_ep) + t_sync, "s",
    "expected decode step under the layout: in each stage compute at expected_mfu, then reads at expected_mbu, "
    "then the collectives as they run; and every layer's fixed time", "t", "exp,layout")
R.variant("throughput_expected", LAYOUT, "expected tokens per second from the layout's chips")
R.variant("cost_per_token_expected", LAYOUT, "expected rental cost of a token under the layout")
R.variant("user_speed_expected", LAYOUT, "expected tokens per second each sequence gets under the layout")

# -- training -----------------------------------------------------------------------------------
R.section(
    "measured_training", "What MFU does a training run's chip-hours imply?",
    seeds=(),
    chapter="training",
    question="A run trained N_active parameters on pretrain_tokens tokens in measured_chip_hours: "
             "what model and hardware FLOP utilisation does that imply?",
    takeaway="{pretrain_compute} in {measured_chip_hours} of {hardware} implies {training_mfu_implied} MFU "
             "({training_hfu_implied} counting the recomputed forward passes).",
    featured=("training_mfu_implied", "training_hfu_implied", "fleet_flops"),
)
H = R.workload("measured_chip_hours", "chip*hour", "chip-hours a training run took (as its report states)",
               "H", "meas")
R.derived("training_mfu_implied", C_pre / (H * F), "",
          "model FLOP utilisation a run's chip-hours imply: 6 FLOP per parameter per token over what the "
          "chip-hours could do at peak", "MFU", "run", share=True)
R.derived("training_hfu_implied", c_train_re * N_active * D_pre / (H * F), "",
          "hardware FLOP utilisation the chip-hours imply, counting the forward passes recomputed in the "
          "backward pass (8 FLOP per parameter per token)", "HFU", "run", share=True)
R.derived("fleet_flops", H * F, "FLOP",
          "FLOPs the chip-hours could do at peak: a fleet's capacity over the run", "C", "fleet")
