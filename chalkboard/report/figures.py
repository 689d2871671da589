"""The lecture's blackboard plots, drawn with matplotlib as SVG from the same derivations.

Every curve is the derivation evaluated through ``Scenario`` (with ``--set``-style overrides
for the swept input), so the plots can never disagree with the numbers in the report.
Each function returns SVG text; nothing here writes files.
"""
from __future__ import annotations

import numpy as np

from .drawing import bars, C, featured_batch, legend_below, plt, points_right, shade_unfit, svg, sweep_values, unmeasured_row_labels
from ..errors import MissingInput, NotApplicable
from ..evaluation.evaluate import Scenario
from .figures_chapters import lifecycle_compute_vs_tokens, pipelining_by_chip, token_latency_vs_stages
from .figures_layout import layout_breakdown, plan_frontier, training_memory
from .figures_pipeline import memory_vs_stages
from .figures_prices import cost_vs_context

def step_time_vs_batch(data, hw, model, overrides=None) -> str:
    """(1) Step time vs batch, in two panels that share the batch axis.

    Top: the lecture's first picture, KV cache and attention ignored: the compute line meets the
    all-weights fetch at the balance batch B* (marked), memory-bound left of it, compute-bound right.
    Bottom: the same step with attention and the KV cache at the scenario's context: compute,
    weight fetch, weights + KV fetch and their max; the crossover with KV is marked where there
    is one, and said not to exist where the context is past L*. The featured batch is marked in both.
    """
    base = Scenario(data, hw, model, dict(overrides or {}))
    b_ref = base.value("balance_batch").to("sequence").magnitude
    try:
        b_kv = base.value("balance_batch_kv").to("sequence").magnitude
    except NotApplicable:
        b_kv = None
    b_op, b_name = featured_batch(base)
    top = max(3 * b_ref, 1.25 * b_op, 64)
    if b_kv is not None and b_kv < 4 * b_ref:
        top = max(top, 1.25 * b_kv)
    bs = np.linspace(1, top, 400)
    r = sweep_values(data, hw, model, ("compute_time", "compute_time_weights", "weight_fetch_time",
                                 "weight_fetch_time_all", "step_time_weights_only", "memory_time", "step_time"),
               "batch", bs, "sequence", overrides, to="ms")
    ctx = base.value("context").to("token/sequence").magnitude
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(6.4, 7.4), sharex=True,
                                 gridspec_kw={"height_ratios": [1, 1.25], "hspace": 0.62})

    # top: the lecture's first picture (KV and attention ignored)
    t_cw, t_wall = r["compute_time_weights"], r["weight_fetch_time_all"]
    a1.axvspan(0, b_ref, color=C["weights"], alpha=0.07, lw=0, label="memory-bound (B < B*)")
    a1.axvspan(b_ref, bs[-1], color=C["compute"], alpha=0.07, lw=0, label="compute-bound (B > B*)")
    a1.plot(bs, r["step_time_weights_only"], color="#bbbbbb", lw=5, solid_capstyle="butt", label="step = max of the two")
    a1.plot(bs, t_cw, color=C["compute"], label="compute  $t_{compute,w}$ (weights only)")
    a1.plot(bs, t_wall, color=C["weights"], ls="--", label="fetch every weight  $t_{weights,all}$")
    y_ref = base.value("weight_fetch_time_all").to("ms").magnitude
    a1.plot([b_ref], [y_ref], "o", color=C["step"], ms=5, zorder=5)
    a1.annotate(f"B* = {b_ref:,.0f}: compute = weight fetch", (b_ref, y_ref), xytext=(6, -14),
                textcoords="offset points", fontsize=7.5)
    a1.set_ylim(0, 1.15 * float(max(t_cw.max(), t_wall.max())))
    a1.set_ylabel("ms per decode step")
    a1.set_title("KV cache and attention ignored (the lecture's first picture)", fontsize=8.5)
    fig.suptitle(f"Step time vs batch: {model} on {hw}", fontsize=9.5, y=0.99)

    # bottom: with attention and the KV cache at the scenario's context
    t_c, t_w, t_mem, t_step = r["compute_time"], r["weight_fetch_time"], r["memory_time"], r["step_time"]
    shade_unfit(a2, base, bs[-1])
    if b_kv is not None and b_kv < bs[-1]:
        a2.axvspan(0, b_kv, color=C["weights"], alpha=0.07, lw=0, label="memory-bound")
        a2.axvspan(b_kv, bs[-1], color=C["compute"], alpha=0.07, lw=0, label="compute-bound")
    a2.plot(bs, t_step, color="#bbbbbb", lw=5, solid_capstyle="butt", label="step time = max(compute, memory)")
    a2.plot(bs, t_c, color=C["compute"], label="compute  $t_{compute}$ (weights and attention)")
    a2.plot(bs, t_mem, color=C["mem"], ls="--", label=f"weights + KV fetch  $t_{{mem}}$ (context {ctx:,.0f})")
    a2.plot(bs, t_w, color=C["weights"], ls=":", lw=1.4, label="weight fetch alone  $t_{weights}$ (experts touched)")
    if b_kv is not None and b_kv < bs[-1]:
        y_kv = float(sweep_values(data, hw, model, ("step_time",), "batch", np.array([b_kv]), "sequence", overrides,
                            to="ms")["step_time"][0])
        a2.plot([b_kv], [y_kv], "o", color=C["step"], ms=5, zorder=5)
        a2.annotate(f"with KV: compute = memory at B = {b_kv:,.0f}", (b_kv, y_kv), xytext=(6, -14),
                    textcoords="offset points", fontsize=7.5)
    else:
        l_star = base.value("context_crossover").to("token/sequence").magnitude
        why = (f"memory-bound at every batch: context {ctx:,.0f} is past the crossover L* = {l_star:,.0f}"
               if b_kv is None else f"memory-bound up to B = {b_kv:,.0f}, beyond this plot")
        a2.text(0.02, 0.96, why, transform=a2.transAxes, ha="left", va="top", fontsize=7.5, color=C["mem"],
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.5})
    floor = base.value("latency_floor").to("ms").magnitude
    a2.set_ylim(0, 1.1 * float(max(t_step.max(), t_c.max())))
    a2.set_ylabel("ms per decode step")
    a2.set_xlabel("batch B (sequences)")
    a2.set_title(f"With attention and the KV cache (context {ctx:,.0f}); latency floor at batch 1: {floor:.3g} ms",
                 fontsize=8.5)

    y_op = base.value("step_time").to("ms").magnitude
    for ax in (a1, a2):
        ax.axvline(b_op, color="#333", lw=0.9, ls="-.")
        ax.set_xlim(0, bs[-1])
    a2.plot([b_op], [y_op], "D", color=C["step"], ms=5, zorder=5)
    a2.annotate(f"{b_name}, {b_op:,.0f}: {y_op:.3g} ms", (b_op, y_op), xytext=(6, 4), textcoords="offset points",
                fontsize=7.5, bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
    a1.annotate(f"{b_name}: {b_op:,.0f}", (b_op, 1), xycoords=("data", "axes fraction"), xytext=(4, -10),
                textcoords="offset points", fontsize=7.5, va="top")
    legend_below(a1)
    legend_below(a2)
    return svg(fig)


def cost_vs_batch(data, hw, model, overrides=None) -> str:
    """(2) Cost per token vs batch, log-log, with the floor and a knee that is named for what it is.

    Where the context is below the crossover, the knee is the balance batch with KV (compute meets
    weights + KV fetch). Past it there is no such batch; the KV-ignored balance batch B* is then
    drawn only as the lecture's reference, labelled so, and the featured batch is marked on the curve.
    """
    base = Scenario(data, hw, model, dict(overrides or {}))
    floor = base.value("cost_floor").to("USD/Mtoken").magnitude
    try:
        knee = base.value("balance_batch_kv").to("sequence").magnitude
        knee_label = f"knee: balance batch with KV {knee:,.0f} (compute = weights + KV fetch)"
    except NotApplicable:
        knee = base.value("balance_batch").to("sequence").magnitude
        ctx = base.value("context").to("token/sequence").magnitude
        knee_label = (f"B* = {knee:,.0f}, KV ignored (the lecture's balance batch); with KV at context "
                      f"{ctx:,.0f} no batch is compute-bound")
    bs = np.logspace(0, 5, 121)
    cost = sweep_values(data, hw, model, ("cost_per_token",), "batch", bs, "sequence", overrides,
                  to="USD/Mtoken")["cost_per_token"]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.loglog(bs, cost, color=C["step"], lw=2, label="cost per token")
    shade_unfit(ax, base, bs[-1])
    ax.axhline(floor, color=C["compute"], ls="--", lw=1, label=f"floor {floor:.3g} USD per million tokens (as B → ∞)")
    ax.axvline(knee, color="#555", lw=0.8, ls="-.", label=knee_label)
    b_op, b_name = featured_batch(base)
    c_op = base.value("cost_per_token").to("USD/Mtoken").magnitude
    ax.plot([b_op], [c_op], "D", color=C["step"], ms=5, zorder=5,
            label=f"{b_name}, {b_op:,.0f}: {c_op:.3g} USD per million tokens")
    ax.set_xlabel("batch B (sequences)")
    ax.set_ylabel("USD per million tokens")
    ax.set_title(f"Cost per token vs batch: {model} on {hw}", fontsize=9)
    legend_below(ax, ncol=1)
    return svg(fig)


# The quantities whose rule of thumb in claims.yaml a figure marks (hardware_by_year's two panels)
MARKED_RULES_OF_THUMB = ("drain_time", "hardware_ratio")


def hardware_by_year(data, model, refs: dict | None = None) -> str:
    """(3) Drain time and hardware ratio R for every chip, by launch year.

    ``refs`` maps each of MARKED_RULES_OF_THUMB to the lecture's claimed value (from
    claims.yaml: "about 20 ms", "around 300"), drawn as a reference line.
    """
    refs = refs or {}
    rows = []
    for hid, h in data.hardware.items():
        sc = Scenario(data, hid, model, {"format": "bf16"})
        year = int(h.values["launch_year"].quantity.magnitude)
        try:
            ratio = sc.value("hardware_ratio").to("token").magnitude
        except MissingInput:  # no published bf16 rate
            ratio = float("nan")
        rows.append((year, hid, sc.value("drain_time").to("ms").magnitude, ratio))
    rows.sort(key=lambda r: (r[0], r[1]))  # barh draws the first row at the bottom
    labels = [f"{hid} ({year})" for year, hid, *_ in rows]
    y = np.arange(len(rows))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(7.6, 0.28 * len(rows) + 1.2), sharey=True)
    drain, ratio = MARKED_RULES_OF_THUMB
    panels = ((a1, 2, drain, "ms", "HBM drain time (ms)"),
              (a2, 3, ratio, "token", "hardware ratio R at bf16 (tokens)"))
    for ax, i, name, unit, xlab in panels:
        vals = [r[i] for r in rows]
        bars(ax, y, np.nan_to_num(vals), "#1f77b4", 0.6)
        after = points_right(ax, 2)   # each bar's value 2 points right of its end
        for yy, v in zip(y, vals):
            label = "no bf16 rate published" if np.isnan(v) else f"{v:.3g}"
            ax.text(0 if np.isnan(v) else v, yy, label, transform=after, va="center", fontsize=6.5)
        if name in refs:
            ref = refs[name].to(unit).magnitude
            ax.axvline(ref, color="#d62728", ls="--", lw=1, label=f"lecture: about {ref:g} {unit}")
            ax.legend(fontsize=7, frameon=False, loc="lower right")
        ax.set_xlabel(xlab)
        ax.grid(axis="y", visible=False)
    a1.set_yticks(y, labels, fontsize=7)
    for ax in (a1, a2):
        unmeasured_row_labels(ax)
    fig.suptitle("Every generation, newest at the top: drain time and hardware ratio", fontsize=9)
    return svg(fig)


def context_sweep(data, hw, model, overrides=None) -> str:
    """(4) MFU at large batch and balance batch vs context length, crossover marked."""
    base = Scenario(data, hw, model, dict(overrides or {}))
    l_star = base.value("context_crossover").to("token/sequence").magnitude
    ls_ = np.logspace(np.log10(max(l_star / 30, 64)), np.log10(l_star * 8), 160)
    mfu = sweep_values(data, hw, model, ("mfu_large_batch",), "context", ls_, "token/sequence",
                 overrides)["mfu_large_batch"]
    below = ls_[ls_ < l_star * 0.995]
    bkv = sweep_values(data, hw, model, ("balance_batch_kv",), "context", below, "token/sequence", overrides,
                 to="sequence")["balance_batch_kv"]
    fig, a1 = plt.subplots(figsize=(6.4, 3.6))
    a1.semilogx(ls_, mfu, color=C["compute"], lw=2, label="MFU as batch → ∞")
    a1.set_ylim(0, 1.08)
    a1.set_ylabel("MFU (fraction of peak)")
    a1.set_xlabel("context length L (tokens per sequence)")
    a1.axvline(l_star, color="#555", ls="-.", lw=0.9)
    a1.annotate(f"crossover L* = {l_star:,.0f}", (l_star, 0.05), xytext=(4, 0), textcoords="offset points",
                fontsize=8)
    a2 = a1.twinx()
    a2.semilogx(below, bkv, color=C["weights"], ls="--", label="balance batch incl. KV")
    a2.set_yscale("log")
    a2.set_ylabel("balance batch (sequences)", color=C["weights"])
    a2.spines["right"].set_visible(True)
    a2.grid(False)
    h1, l1 = a1.get_legend_handles_labels()
    h2, l2 = a2.get_legend_handles_labels()
    a1.legend(h1 + h2, l1 + l2, fontsize=7.5, frameon=False, loc="center left")
    a1.set_title(f"Context length: {model} on {hw}", fontsize=9)
    return svg(fig)


def a2a_vs_racks(data, hw, model, overrides=None) -> str:
    """(5) All-to-all time vs racks spanned: scale-up share vs scale-out share."""
    ns = np.arange(1, 9)
    r = sweep_values(data, hw, model, ("a2a_time_scaleup", "a2a_time_scaleout"), "racks", ns, "", overrides, to="ms")
    up, out = r["a2a_time_scaleup"], r["a2a_time_scaleout"]
    step = Scenario(data, hw, model, dict(overrides or {})).value("step_time").to("ms").magnitude
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.plot(ns, up, "o-", color=C["up"], label="in-rack share over scale-up")
    ax.plot(ns, out, "s-", color=C["out"], label="off-rack share over scale-out")
    ax.axhline(step, color="#555", ls="--", lw=1, label=f"roofline step time {step:.3g} ms (one rack)")
    ax.set_xlabel("racks one MoE layer spans (n)")
    ax.set_ylabel("all-to-all time per step (ms)")
    ax.set_title(f"All-to-all vs racks spanned: {model} on {hw}", fontsize=9)
    legend_below(ax, ncol=1)
    return svg(fig)


def step_breakdown(data, hw, model, overrides=None) -> str:
    """(6) Step-time breakdown (compute, weights, KV, communication) on one vs two racks."""
    labels, parts = [], {"compute": [], "weights": [], "KV": [], "all-to-all": []}
    for n in (1, 2):
        sc = Scenario(data, hw, model, {**(overrides or {}), "racks": str(n)})
        labels.append(f"{n} rack{'s' if n > 1 else ''}")
        parts["compute"].append(sc.value("compute_time").to("ms").magnitude)
        parts["weights"].append(sc.value("weight_fetch_time").to("ms").magnitude)
        parts["KV"].append(sc.value("kv_fetch_time").to("ms").magnitude)
        parts["all-to-all"].append(sc.value("comm_time").to("ms").magnitude)
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    y = np.arange(len(labels))
    h = 0.18
    for i, (name, vals) in enumerate(parts.items()):
        col = {"compute": C["compute"], "weights": C["weights"], "KV": C["kv"], "all-to-all": C["comm"]}[name]
        ax.barh(y + (i - 1.5) * h, vals, height=h, color=col, label=name)
    ax.set_yticks(y, labels)
    ax.set_xlabel("time per decode step (ms)")
    ax.set_title(f"Where a step's time goes: {model} on {hw}", fontsize=9)
    ax.legend(fontsize=7.5, frameon=False, loc="lower right")
    return svg(fig)


FIGURES = {
    "step_time_vs_batch": ("Step time vs batch. Top: the lecture's first picture, KV cache and attention "
                           "ignored, where compute meets the weight fetch at the balance batch B*. Bottom: the "
                           "same step with attention and the KV cache at the featured context; the featured "
                           "batch is marked in both", step_time_vs_batch, "roofline"),
    "cost_vs_batch": ("Cost per token vs batch, log axes, with the floor the cost approaches as the batch grows "
                      "and the featured batch marked", cost_vs_batch, "latency_cost"),
    "hardware_by_year": ("Drain time and hardware ratio by launch year", None, "schedule"),
    "context_sweep": ("MFU and balance batch vs context length", context_sweep, "context"),
    "a2a_vs_racks": ("All-to-all time vs racks spanned", a2a_vs_racks, "moe_rack"),
    "step_breakdown": ("Step-time breakdown, one vs two racks", step_breakdown, "moe_rack"),
    "pipelining_by_chip": ("MoE layers a pipeline stage must hold for its boundary transfer to hide behind its "
                           "all-to-all, for every chip by launch year, against the layers each stage holds at "
                           "the featured depth", pipelining_by_chip, "pipeline_boundary"),
    "memory_vs_stages": ("Memory per chip vs pipeline stages", memory_vs_stages, "pipeline_memory"),
    "layout_breakdown": ("Where a laid-out decode step's time goes as the copy is spread wider: compute, the "
                         "weights and KV cache each chip reads, the tensor-parallel all-reduces and the expert "
                         "all-to-all, with the step they make (black); left, a dense model over more "
                         "tensor-parallel chips, right, the featured model over more expert-parallel chips",
                         layout_breakdown, "layout"),
    "plan_frontier": ("The lecture's first picture for every chip with a rental price: the cheapest cost per "
                      "million tokens at each speed per user, over the layouts within the chip's scale-up "
                      "domain and every batch that fits (plan's search, at the bound: full efficiency; "
                      "`build.py plan` gives the expected numbers and the cheapest for a target)",
                      plan_frontier, "layout"),
    "training_memory": ("Memory per chip of a dense 70B model's training run over the chip's scale-up domain, by "
                        "ZeRO stage (0: none; 1: the optimizer state, 2: also the gradients, 3: also the weights "
                        "partitioned over the data-parallel group) and tensor-parallel degree: the training state "
                        "(solid) and the activations kept with full recomputation (hatched), against the chip's HBM",
                        training_memory, "training_layout"),
    "token_latency_vs_stages": ("Time per token vs pipeline stages: one micro-batch's step plus one hop per "
                                "stage, at the featured hop latency and with each hop only the transfer of one "
                                "micro-batch's activations", token_latency_vs_stages, "pipeline_latency"),
    "lifecycle_compute_vs_tokens": ("Compute over a model's life, pre-training, RL and inference, against the "
                                    "tokens it serves, with the featured tokens served and the point where "
                                    "inference costs as much as pre-training", lifecycle_compute_vs_tokens,
                                    "training_compute"),
    "cost_vs_context": ("Chip time per token vs context, and the price tier", cost_vs_context, "price_tiers"),
}


def priced_stand_in(data, hw: str) -> str | None:
    """The chip the cost figure uses: the featured one if it has a public price, else the
    newest priced chip of the same vendor, else the newest priced chip."""
    if "rental_price" in data.hardware[hw].values:
        return hw
    priced = [h for h in data.hardware.values() if "rental_price" in h.values]
    if not priced:
        return None
    year = lambda h: h.values["launch_year"].quantity.magnitude  # noqa: E731
    same = [h for h in priced if h.tags.get("vendor") == data.hardware[hw].tags.get("vendor")]
    return max(same or priced, key=lambda h: (year(h), h.id)).id


def draw_all(data, hw, model, overrides=None, refs=None, only=None) -> dict[str, tuple[str, str]]:
    """Every figure (or those named in ``only``): name -> (SVG text, hardware id drawn).
    Figures lacking inputs are left out."""
    out = {}
    for name, (_, fn, _) in FIGURES.items():
        if only is not None and name not in only:
            continue
        chip = priced_stand_in(data, hw) if name == "cost_vs_batch" else hw
        if chip is None:
            continue
        try:
            svg = hardware_by_year(data, model, refs) if fn is None else fn(data, chip, model, overrides)
        except MissingInput:
            continue
        out[name] = (svg, chip)
    return out


# The figures that draw one row per chip: their work grows with the chips, the others' does not.
PER_CHIP = ("hardware_by_year", "pipelining_by_chip", "plan_frontier")
