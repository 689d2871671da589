"""The figures of the layout section: where a laid-out step's time goes as tensor or expert
parallelism grows, and the frontier of cost per token against each user's speed over every chip
(the lecture's first picture, turned into `plan`'s question). Each returns SVG text."""
from __future__ import annotations

import numpy as np

from ..data.featured import DENSE_REFERENCE_MODEL as DENSE_REFERENCE
from .drawing import C, chip_styles, legend_below, plt, svg
from ..errors import InputError, MissingInput
from ..evaluation.evaluate import Scenario
from ..evaluation.fit import within
from ..planner.search import layouts
from ..evaluation.settings import rules_of

DENSE_BATCH = "64"                # sequences: a batch every chip's HBM holds for it at a few thousand tokens
TERMS = (("compute_time_layout", "compute", "compute"), ("weight_fetch_time_layout", "weights", "weights"),
         ("kv_fetch_time_layout", "KV", "kv"), ("tp_comm_time", "TP all-reduce", "comm"),
         ("ep_comm_time", "EP all-to-all", "out"))


def _rows(data, hw, model, sets: dict, keep) -> list[tuple[str, Scenario]]:
    """One scenario per layout plan searches on this chip (planner.search.layouts) that ``keep``
    accepts, labelled by its degree."""
    rows = []
    for lay in layouts(Scenario(data, hw, model, sets)):
        label = keep(lay)
        if label:
            rows.append((label, Scenario(data, hw, model, {**sets, **{k: str(v) for k, v in lay.items()}})))
    return rows


def _panel(ax, rows: list[tuple[str, Scenario]], title: str) -> None:
    y = np.arange(len(rows))
    h = 0.8 / len(TERMS)
    for i, (name, label, color) in enumerate(TERMS):
        vals = []
        for _, sc in rows:
            try:
                vals.append(sc.value(name).to("ms").magnitude)
            except MissingInput:
                vals.append(0.0)
        ax.barh(y + (i - (len(TERMS) - 1) / 2) * h, vals, height=h, color=C[color], label=label)
    for j, (_, sc) in enumerate(rows):
        try:
            step = sc.value("step_time_layout").to("ms").magnitude
        except MissingInput:
            continue
        ax.plot([step, step], [j - 0.45, j + 0.45], color="#111", lw=1.4)
    ax.set_yticks(y, [label + ("" if sc.fit_layout() is None else " †") for label, sc in rows])
    ax.set_xlabel("time per decode step (ms); black: the step")
    ax.set_title(title, fontsize=8)


def layout_breakdown(data, hw, model, overrides=None) -> str:
    """Left: a dense model's step as the tensor-parallel degree grows on the chip's scale-up domain
    (the reads shrink, the all-reduces grow); right: the featured model's as the expert-parallel
    degree grows (attention data-parallel over the same chips)."""
    overrides = dict(overrides or {})
    base = Scenario(data, hw, model, overrides)
    panels = []
    dense_sets = {**{k: v for k, v in overrides.items() if k != "batch"}, "batch": DENSE_BATCH}
    try:   # the dense model over more tensor-parallel chips
        rows = _rows(data, hw, DENSE_REFERENCE, dense_sets, lambda lay: lay["tp"] > 1 and f"tp {lay['tp']}")
        panels.append((rows, f"{DENSE_REFERENCE}, batch {DENSE_BATCH}"))
    except (KeyError, InputError, MissingInput):
        pass
    if not base.is_dense:   # the featured model over more expert-parallel chips, attention data-parallel
        rows = _rows(data, hw, model, overrides,
                     lambda lay: lay["tp"] == 1 and lay["ep"] == lay["chips"] >= 8 and f"ep {lay['ep']}")
        panels.append((rows, f"{model}, batch {base.mag('batch'):,.0f}"))
    panels = [p for p in panels if p[0]]
    if not panels:
        raise MissingInput("no layout to draw")
    fig, axes = plt.subplots(1, len(panels), figsize=(7.0 if len(panels) > 1 else 4.2, 3.4), squeeze=False)
    for ax, (rows, title) in zip(axes[0], panels):
        _panel(ax, rows, title)
    axes[0][0].legend(fontsize=7, loc="upper center", bbox_to_anchor=(1.1 if len(panels) > 1 else 0.5, -0.26),
                      ncol=5, frameon=False)   # below both panels, clear of the axis labels
    fig.suptitle(f"Where a laid-out step's time goes on {hw} († does not fit)", fontsize=9)
    return svg(fig)


def plan_frontier(data, hw, model, overrides=None) -> str:
    """Cost per million tokens against tokens per second per user: for each chip with a rental
    price, the frontier over its layouts, batches, weight formats and deployments (`plan`'s search,
    judged at the bound: full efficiency, the prompts' prefill included); the featured chip drawn heavier."""
    from ..cache.figcache import SETTINGS, once_per_data
    from ..planner import Targets, answer, plan

    overrides = dict(overrides or {})
    context = float(Scenario(data, hw, model, overrides).mag("context"))
    chips = [h for h, e in data.hardware.items() if e.get("rental_price") is not None]
    others = {k: v for k, v in overrides.items() if k not in ("batch", "context")}
    # the search does not depend on the chip drawn heavier: one for every chip's report
    found = once_per_data(data, ("plan_frontier", model, context, tuple(chips), tuple(sorted(others.items())),
                                 *(getattr(data, f) for f in SETTINGS)),
                          lambda d: plan(d, model, chips, Targets(context, 1.0, by="bound"), None, None, others))
    fits = within(found.columns["hbm_fill_layout"], found.columns["memory_share"])   # as plan and eval judge a fit
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    styles = chip_styles(data.hardware)
    drawn = 0
    for chip in chips:
        idx = answer.frontier(found, fits & (found.columns["hardware"] == chip))
        if not idx:
            continue
        speed = found.columns["speed_bound"][idx]
        cost = found.columns["cost_bound"][idx]
        heavy = chip == hw
        color, dashed = styles[chip]
        ax.plot(speed, cost, color="#111" if heavy else color, lw=2.2 if heavy else 1.3,
                ls="--" if dashed and not heavy else "-", marker="." if len(idx) < 4 else None, label=chip)
        drawn += 1
    if not drawn:
        raise MissingInput("no priced chip fits the model")
    ax.set_xscale("log")
    ax.set_yscale("log")
    import matplotlib.ticker as mt   # speeds as plain numbers: 10, 20, 50, ... (the range is about a decade)

    ax.xaxis.set_major_locator(mt.FixedLocator([v * 10.0 ** e for e in range(-1, 5) for v in (1, 2, 5)]))
    ax.xaxis.set_major_formatter(mt.FuncFormatter(lambda x, _: f"{x:g}"))
    ax.xaxis.set_minor_formatter(mt.NullFormatter())
    ax.set_xlabel("tokens per second per user (one sequence)")
    ax.set_ylabel("USD per million tokens")
    ax.set_title(f"The cheapest way to each speed: {model}, context {context:,.0f}, at the bound", fontsize=9)
    legend_below(ax, ncol=5)
    return svg(fig)


TRAIN_TP = (1, 2, 4, 8)     # tensor-parallel degrees drawn (within one 8-GPU box, as Megatron-LM runs them)
ZERO_STAGES = tuple(range(rules_of("zero_stage").most[0] + 1))   # none, then each stage ZeRO defines


def training_memory(data, hw, model, overrides=None) -> str:
    """Memory per chip of a dense model's training run on the chip's domain by ZeRO stage and
    tensor-parallel degree: the training state (weights, gradients, optimizer state, partitioned
    from its stage on over the data-parallel group) and the activations kept with full
    recomputation, against the chip's HBM."""
    overrides = {k: v for k, v in dict(overrides or {}).items() if k not in ("batch", "context")}
    chips = int(Scenario(data, hw, DENSE_REFERENCE, overrides).mag("chips"))
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    width = 0.8 / len(TRAIN_TP)
    colors = plt.get_cmap("viridis")
    cap, low = None, float("inf")
    drawn = 0
    for j, t in enumerate(TRAIN_TP):
        if chips % t:
            continue
        state, total = [], []
        for z in ZERO_STAGES:
            sc = Scenario(data, hw, DENSE_REFERENCE, {**overrides, "train_tp": str(t), "zero_stage": str(z)})
            state.append(sc.value("train_state_per_chip_zero").to("GB/chip").magnitude)
            total.append(sc.value("train_memory_per_chip_layout").to("GB/chip").magnitude)
            cap = sc.value("hbm_capacity").to("GB/chip").magnitude
        x = np.arange(len(ZERO_STAGES)) + (j - (len(TRAIN_TP) - 1) / 2) * width
        low = min(low, *state)
        ax.bar(x, state, width, color=colors(j / len(TRAIN_TP)), label=f"tp {t}: training state")
        ax.bar(x, np.array(total) - np.array(state), width, bottom=state, color=colors(j / len(TRAIN_TP)),
               alpha=0.35, hatch="//", edgecolor="white", lw=0)
        drawn += 1
    if not drawn:
        raise MissingInput("no tensor-parallel degree divides the chips")
    from matplotlib.patches import Patch

    ax.axhline(cap, color="#b22", lw=1, label=f"{hw} HBM ({cap:,.0f} GB)")
    handles, _ = ax.get_legend_handles_labels()
    handles.append(Patch(facecolor="#cccccc", hatch="//", edgecolor="white", label="activations (full recomputation)"))
    ax.set_yscale("log")
    ax.set_ylim(bottom=low / 2)
    ax.set_xticks(range(len(ZERO_STAGES)), [f"ZeRO {z}" for z in ZERO_STAGES])
    ax.set_ylabel("GB per chip")
    ax.set_title(f"Training {DENSE_REFERENCE} on {chips} × {hw}: memory per chip by ZeRO stage and tp", fontsize=9)
    legend_below(ax, ncol=3, handles=handles)
    return svg(fig)
