"""Pipeline parallelism across racks (chapter 3 of the lecture, from 0:47).

The seeds stop before this chapter; what it claims is restated in the lecture notes'
chapters-3-7.md, ids P-01 to P-14, cited as ``chapters-3-7.md#P-04``.

Expert parallelism keeps its all-to-all inside one rack; pipeline parallelism cuts the model
along its layers and puts each run of layers (a stage) on its own rack (P-01, P-06). Between
two stages each token crosses the scale-out network once, carrying its residual vector:
d·β_a bytes (P-02). Inside a stage every MoE layer sends the token to its k experts and back:
2·k·d·β_a bytes over the scale-up network. The boundary transfer hides behind the stage's own
all-to-all when 2·k·L_stage·W_out/W_up ≥ 1 (P-04); SymPy solves it for the fewest MoE layers
a stage must hold, per chip. One batch stepping through P stages leaves each idle (P−1)/P of
the time; in inference P micro-batches fill the pipe (P-09), while training's forward-then-
backward leaves a bubble (P−1)/(m+P−1) (P-10). Each stage holds 1/P of the weights (P-12).
"""
import sympy as sp

from . import rules

from .inputs import STEPS
from .inputs import R, S, C_hbm, C_host, W_up, W_out, k, d_model, n_moe
from .moe_rack import a2a_tok, beta_act, ratio_net
from .textbook import M_w as w_bytes   # the weights' bytes, one copy

# -- what crosses a stage boundary, and how deep a stage must be ----------------------------
R.section(
    "pipeline_boundary", "What crosses a rack boundary, and how many layers must a stage hold?",
    seeds=(),
    chapter="pipeline",
    question="When consecutive layers sit on different racks, how many bytes per token cross the "
             "scale-out network at a stage boundary, against the in-rack all-to-all of each MoE "
             "layer, and how many MoE layers must a stage hold for the slow boundary to hide behind "
             "its own all-to-all (chapters-3-7.md#P-02, #P-04)?",
    takeaway="{model} on {hardware}: a token carries {stage_boundary_bytes_per_token} across a "
             "stage boundary and {a2a_bytes_per_token} through each MoE layer's all-to-all "
             "({a2a_to_boundary_bytes} times more); with scale-up {scaleup_scaleout_ratio} times "
             "faster than scale-out, a stage needs at least {min_moe_layers_per_stage} MoE layers, so the "
             "{moe_layers} MoE layers allow up to {max_pipeline_stages} stages. At {pipeline_stages} "
             "stages (the deepest holding {moe_layers_per_stage} MoE layers) the ratio is "
             "{pipelining_ratio}.",
    featured=("stage_boundary_bytes_per_token", "a2a_to_boundary_bytes", "pipelining_ratio",
              "min_moe_layers_per_stage", "max_pipeline_stages"),
)

P = R.workload("pipeline_stages", "", "pipeline stages (racks) one copy of the model is cut into", "P",
               default="4", source="the lecture's example of 4 racks (chapters-3-7.md#P-09)",
               whole=True, most=STEPS)
c_res = R.constant("residual_vectors_per_boundary", "1 /token",
                   "activation vectors each token carries across a stage boundary: its residual "
                   "stream, once", "c", "res",
                   source="the lecture's stage boundary (chapters-3-7.md#P-02)")
L_stage = R.workload("moe_layers_per_stage", "", "MoE layers each pipeline stage holds", "L", "stage",
                     default="=rule:moe_layers_per_stage",
                     whole=True, most=STEPS)


R.rule("moe_layers_per_stage", ("moe_layers", "pipeline_stages"),
       "the model's MoE layers split evenly over the pipeline stages, rounded up (the deepest stage)"
       )(rules.moe_layers_per_stage)


b_stage = R.derived(
    "stage_boundary_bytes_per_token", c_res * d_model * beta_act, "byte/token",
    "bytes each token sends across a pipeline-stage boundary: its residual vector", "b", "stage")
R.derived(
    "a2a_to_boundary_bytes", a2a_tok / b_stage, "",
    "all-to-all bytes per token of one MoE layer over the bytes per token crossing a stage "
    "boundary (2k)", "r", "a2a/stage", moe_only=True)
ratio_pipe = R.derived(
    "pipelining_ratio", L_stage * a2a_tok * W_out / (b_stage * W_up), "",
    "per token, the scale-up time of a stage's all-to-all over the scale-out time of its boundary "
    "transfer: at least 1 and the boundary hides behind the stage (2·k·L_stage·W_out/W_up)",
    "ρ", "pipe", moe_only=True)
eq_pipe = R.equation(
    "pipelining_condition", ratio_pipe, 1,
    "the pipelining condition at its edge: a stage's all-to-all takes as long as its boundary transfer")
L_min = R.derived(
    "min_moe_layers_per_stage", R.solve(eq_pipe, L_stage), "",
    "fewest MoE layers a stage must hold for its boundary transfer to hide behind its all-to-all",
    "L", "stage,min", how="solved pipelining_ratio = 1 for moe_layers_per_stage", moe_only=True)
R.equation("min_layers_is_bandwidth_ratio_over_2k", L_min, ratio_net * b_stage / a2a_tok,
           "the solved depth is the bandwidth ratio W_up/W_out over 2k (the lecture's 8/(2k))",
           identity=True)
R.derived(
    "max_pipeline_stages", n_moe / L_min, "",
    "most pipeline stages the model's MoE layers allow with every boundary hidden",
    "P", "max", moe_only=True)

# -- idle time: one batch, micro-batches, training's bubble ----------------------------------
R.section(
    "pipeline_schedule", "Does a pipeline sit idle, in inference and in training?",
    seeds=(),
    chapter="pipeline",
    question="With P stages and one batch stepping through them, how much of the time is each "
             "rack idle; how many micro-batches remove that in inference, and what bubble is left "
             "in training (chapters-3-7.md#P-09, #P-10)?",
    takeaway="With {pipeline_stages} stages one batch leaves each rack idle {pipeline_idle_one_batch} "
             "of the time; {micro_batches} micro-batches in flight leave it idle {pipeline_idle_fraction} of the time. "
             "Training with {micro_batches} micro-batches per step keeps a bubble of "
             "{training_bubble_fraction}.",
    featured=("pipeline_idle_one_batch", "pipeline_idle_fraction", "training_bubble_fraction"),
)

m = R.workload("micro_batches", "", "micro-batches in flight through the pipeline", "m",
               default="=rule:micro_batches",
               whole=True, most=STEPS)


R.rule("micro_batches", ("pipeline_stages",),
       "one micro-batch per stage, the fewest with no idle time on wrap-around (chapters-3-7.md#M-04)"
       )(rules.micro_batches)


R.derived(
    "pipeline_idle_one_batch", (P - 1) / P, "",
    "share of the time each stage idles while one batch steps through P stages", "f", "idle,1", share=True)
R.derived(
    "pipeline_idle_fraction", sp.Max(0, 1 - m / P), "",
    "share of the time each stage idles in decode with m micro-batches circling the ring of stages "
    "(none once m ≥ P)", "f", "idle", share=True)
R.derived(
    "training_bubble_fraction", (P - 1) / (m + P - 1), "",
    "share of a training step's time each stage idles: fill and drain around m micro-batches "
    "(GPipe/1F1B bubble, before zero-bubble schedules fill it)", "f", "bubble", share=True)

# -- what pipelining saves: memory, not time -------------------------------------------------
R.section(
    "pipeline_weights", "What does pipelining save?",
    seeds=(),
    chapter="pipeline",
    question="Pipelining moves compute and memory time between racks without saving any (P-08); "
             "how much of the weights does each rack hold, and how many racks does a model need "
             "just to hold them (chapters-3-7.md#P-12, #P-13)?",
    takeaway="{model} weighs {weight_bytes}; over {pipeline_stages} stages each rack holds "
             "{weights_per_stage}, {weights_per_chip_pipelined}. One stage of {chips} of {hardware} "
             "has {rack_hbm} of HBM, so the weights alone fill {weights_to_stage_hbm} of one "
             "stage's HBM.",
    featured=("weight_bytes", "weights_per_stage", "weights_per_chip_pipelined", "rack_hbm",
              "weights_to_stage_hbm"),
)

w_stage = R.derived(
    "weights_per_stage", w_bytes / P, "byte",
    "weight bytes each pipeline stage (rack) holds: 1/P of the model", "M", "stage")
w_chip_pipe = R.derived(
    "weights_per_chip_pipelined", w_stage / S, "byte/chip",
    "weight bytes each chip holds with the model cut into P stages of S chips", "m", "w,P",
    fit_measure=True)
hbm_rack = R.derived(
    "rack_hbm", S * C_hbm, "byte", "HBM of the S chips of one stage (one scale-up domain, at most a rack)",
    "C", "rack", fit_measure=True)
R.derived(
    "rack_fast_memory", S * (C_hbm + C_host), "byte",
    "fast memory of the S chips of one stage: their HBM and the CPU memory they reach coherently", "C",
    "rack,fast", fit_measure=True)
R.derived(
    "weights_to_stage_hbm", w_bytes / hbm_rack, "",
    "the weights over one stage's HBM: above 1 the model needs that many stages, rounded up, just "
    "to hold its weights (no room left for the KV cache)", "P", "w", fit_measure=True)
