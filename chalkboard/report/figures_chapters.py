"""The plots of chapters 3, 4 and 5 (registered in figures.FIGURES).

* Chapter 3: the MoE layers a pipeline stage must hold for its boundary transfer to hide behind
  its all-to-all (the solved ``min_moe_layers_per_stage``), for every chip by launch year, against
  the layers each stage holds at the scenario's depth.
* Chapter 4: time per token against the pipeline depth, ``pipeline_token_latency``, at the
  scenario's hop latency and with each hop only the transfer of one micro-batch (``hop_transfer_time``).
* Chapter 5: the compute of a model's life, pre-training, RL and inference, against the tokens
  served.

Each figure's numbers come from a small ``*_data`` function that evaluates the declared
quantities through ``Scenario`` (``value`` or ``sweep``); the drawing reads only those arrays.
Returns SVG text; nothing here writes files.
"""
from __future__ import annotations

import numpy as np

from .drawing import bars, C, legend_below, plt, points_right, superscript, svg, sweep_values, unmeasured_row_labels
from ..errors import MissingInput, NotApplicable
from ..evaluation.evaluate import Scenario

# -- chapter 3: the pipelining condition, chip by chip ------------------------------------------


def _for_other_chips(overrides) -> dict:
    """The overrides that describe the workload or the model, not the featured chip: those apply to
    every chip of a figure drawn over all of them; a chip's own numbers stay each chip's."""
    from derivations import REGISTRY

    return {k: v for k, v in dict(overrides or {}).items()
            if not k.startswith("flops_") and not (k in REGISTRY and REGISTRY[k].origin == "hardware")}


def pipelining_by_chip_data(data, hw, model, overrides=None) -> dict:
    """Per chip (oldest first: launch year, then id): the fewest MoE layers a stage must hold for
    pipelining to hide its boundary transfer (NaN with the reason where an input is not
    published), the most stages the model's MoE layers allow; and the model's MoE layers per stage
    at the scenario's depth. Raises NotApplicable for a dense model (nothing to pipeline over)."""
    base = Scenario(data, hw, model, dict(overrides or {}))
    base.value("a2a_to_boundary_bytes")  # MoE only: NotApplicable for a dense model, before the rule refuses it
    held = base.value("moe_layers_per_stage").to("").magnitude
    stages = base.value("pipeline_stages").to("").magnitude
    others = _for_other_chips(overrides)
    rows = []
    for hid, h in data.hardware.items():
        sc = base if hid == hw else Scenario(data, hid, model, others)
        try:
            need = sc.value("min_moe_layers_per_stage").to("").magnitude
            most = sc.value("max_pipeline_stages").to("").magnitude
            why = None
        except NotApplicable as e:
            need = most = float("nan")
            why = f"not applicable: {e}"
        except MissingInput as e:
            need = most = float("nan")
            why = f"not published: {e}"
        rows.append((int(h.values["launch_year"].quantity.magnitude), hid, need, most, why))
    rows.sort(key=lambda r: (r[0], r[1]))
    return {"ids": [r[1] for r in rows], "years": [r[0] for r in rows],
            "need": np.array([r[2] for r in rows]), "max_stages": np.array([r[3] for r in rows]),
            "why": [r[4] for r in rows], "held": held, "stages": stages}


def pipelining_by_chip(data, hw, model, overrides=None) -> str:
    """(8) MoE layers per stage needed for pipelining, every chip by launch year, with the layers
    each stage holds at the scenario's depth: a bar short of that line is a chip where the
    boundary hides."""
    d = pipelining_by_chip_data(data, hw, model, overrides)
    n = len(d["ids"])
    y = np.arange(n)
    need, held = d["need"], d["held"]
    rows_in = 0.22 * n
    fig = plt.figure(figsize=(6.6, rows_in + 2.1))
    h_in = fig.get_size_inches()[1]
    fig.subplots_adjust(left=0.19, right=0.97, top=1 - 0.4 / h_in, bottom=1.3 / h_in)
    ax = fig.add_subplot()
    ok = need <= held
    colors = [C["compute"] if o else C["weights"] for o in ok]
    bars(ax, y, np.nan_to_num(need), colors, 0.62)
    top = max(float(np.nanmax(need)) if np.isfinite(need).any() else 0.0, held) * 1.25
    after = points_right(ax, 3)   # each bar's value 3 points right of its end
    for yy, v, most, why in zip(y, need, d["max_stages"], d["why"]):
        if np.isnan(v):
            text = "no scale-out bandwidth published" if "scaleout_bandwidth" in why else why.split(":")[0]
            ax.text(0, yy, text, transform=after, va="center", fontsize=6.5, color="#666")
        else:
            ax.text(v, yy, f"{v:.3g}   (P ≤ {most:.3g})", transform=after, va="center", fontsize=6.5, zorder=4,
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.6})
    p = d["stages"]
    line = ax.axvline(held, color=C["step"], ls="--", lw=1.1,
                      label=f"{model} holds {held:g} MoE layers per stage at P = {p:g} stages")
    labels = [f"{i} ({yr})" for i, yr in zip(d["ids"], d["years"])]
    ax.set_yticks(y, labels, fontsize=7)
    for tick, i in zip(ax.get_yticklabels(), d["ids"]):
        if i == hw:
            tick.set_fontweight("bold")
    ax.set_ylim(-0.6, n - 0.4)
    ax.set_xlim(0, top)
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("MoE layers per stage needed to hide the boundary transfer, W_up / (2k·W_out)\n"
                  "(P ≤ n: the most stages the model's MoE layers allow with every boundary hidden)", fontsize=8)
    # placed where matplotlib's measuring of every row's label would put them (the top of the axes;
    # the empty y label anywhere), which it would otherwise do on every draw
    ax.set_title(f"The pipelining condition by chip: {model} (newest at the top, {hw} in bold)", fontsize=8.5,
                 y=1.0)
    unmeasured_row_labels(ax)
    from matplotlib.patches import Patch
    handles = [line, Patch(color=C["compute"], label="holds: a stage has at least the layers needed"),
               Patch(color=C["weights"], label="fails: a stage has fewer layers than needed")]
    fig.legend(handles=handles, fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 0.0), ncol=1,
               frameon=False)
    return svg(fig)


# -- chapter 4: hops add up ---------------------------------------------------------------------

STAGES = np.arange(1, 17, dtype=float)


def token_latency_data(data, hw, model, overrides=None, stages=STAGES) -> dict:
    """Time per token (ms) against the pipeline depth, ``pipeline_token_latency`` swept over
    ``pipeline_stages``: at the scenario's hop latency, and with each hop taking only the time to
    move one micro-batch's activations (``hop_latency`` set to ``hop_transfer_time``). Also the
    micro-batch's step time, the two hop times and the scenario's depth. Where the chip publishes no
    scale-out bandwidth the transfer-only line is None, with the reason in ``transfer_missing``."""
    o = dict(overrides or {})
    base = Scenario(data, hw, model, o)
    hop = base.value("hop_latency").to("ms").magnitude
    step = base.value("micro_batch_step_time").to("ms").magnitude
    at_hop = sweep_values(data, hw, model, ("pipeline_token_latency",), "pipeline_stages", stages, "", o,
                    to="ms")["pipeline_token_latency"]
    try:
        xfer = base.value("hop_transfer_time").to("s").magnitude
        missing = None
    except MissingInput as e:
        xfer, missing = None, str(e)
    at_xfer = None if xfer is None else sweep_values(
        data, hw, model, ("pipeline_token_latency",), "pipeline_stages", stages, "",
        {**o, "hop_latency": f"{float(xfer)!r} s"}, to="ms")["pipeline_token_latency"]
    return {"stages": np.asarray(stages, dtype=float), "latency_hop": at_hop, "latency_transfer": at_xfer,
            "hop_ms": hop, "transfer_ms": None if xfer is None else xfer * 1e3, "transfer_missing": missing,
            "step_ms": step,
            "depth": base.value("pipeline_stages").to("").magnitude,
            "hop_is_lecture": "lecture" in str(base.records["hop_latency"].source)
                              and "--set" not in str(base.records["hop_latency"].source)}


def token_latency_vs_stages(data, hw, model, overrides=None) -> str:
    """(9) Time per token vs pipeline stages: one micro-batch's step plus a hop per stage, at the
    lecture's few-ms hop and with only the activations' transfer time per hop."""
    d = token_latency_data(data, hw, model, overrides)
    ps = d["stages"]
    fig = plt.figure(figsize=(6.4, 4.0))
    fig.subplots_adjust(left=0.1, right=0.97, top=0.92, bottom=0.3)
    ax = fig.add_subplot()
    hop_name = "the lecture's 'a few ms'" if d["hop_is_lecture"] else "the featured hop"
    ax.plot(ps, d["latency_hop"], "o-", color=C["comm"], ms=3.5,
            label=f"hop latency {d['hop_ms']:.3g} ms ({hop_name}): t_step + P·t_hop")
    if d["latency_transfer"] is not None:
        ax.plot(ps, d["latency_transfer"], "s-", color=C["compute"], ms=3.5,
                label=f"hop = moving one micro-batch's activations only, {d['transfer_ms'] * 1e3:.3g} µs")
    else:
        ax.plot([], [], " ", label=f"no transfer-only line: {hw} publishes no scale-out bandwidth"
                if "scaleout" in d["transfer_missing"] else f"no transfer-only line: {d['transfer_missing']}")
    ax.axhline(d["step_ms"], color="#555", ls=":", lw=1,
               label=f"micro-batch step through every layer, {d['step_ms']:.3g} ms (no hops)")
    p = d["depth"]
    if ps[0] <= p <= ps[-1]:
        i = int(np.argmin(abs(ps - p)))
        y = d["latency_hop"][i]
        ax.axvline(p, color="#333", lw=0.8, ls="-.")
        ax.plot([p], [y], "D", color=C["step"], ms=5, zorder=5)
        ax.annotate(f"featured depth P = {p:g}: {y:.3g} ms per token", (p, 0.97), xycoords=("data", "axes fraction"),
                    xytext=(4, 0), textcoords="offset points", fontsize=7.5, ha="left", va="top",
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
    ax.set_xlim(0.5, ps[-1] + 0.5)
    ax.set_ylim(0, 1.08 * float(np.nanmax(d["latency_hop"])))
    ax.set_xticks(ps[::max(1, len(ps) // 16)])
    ax.set_xlabel("pipeline stages P (racks a token passes through)")
    ax.set_ylabel("ms per token")
    ax.set_title(f"Time per token vs pipeline depth: {model} on {hw}", fontsize=9)
    legend_below(ax, ncol=1)
    return svg(fig)


# -- chapter 5: a model's life ------------------------------------------------------------------

SERVED = np.geomspace(1e12, 1e15, 121)   # tokens served over the model's life


def lifecycle_data(data, hw, model, overrides=None, served=SERVED) -> dict:
    """Pre-training, RL, inference and total compute (FLOP) with ``inference_tokens`` swept over
    ``served``; the scenario's tokens served and the tokens at which inference costs as much as
    pre-training."""
    o = dict(overrides or {})
    base = Scenario(data, hw, model, o)
    names = ("pretrain_compute", "rl_compute", "inference_compute", "lifecycle_compute")
    r = sweep_values(data, hw, model, names, "inference_tokens", served, "token", o, to="FLOP")
    tokens = base.value("inference_tokens").to("token").magnitude
    src = str(base.records["inference_tokens"].source)
    return {"served": np.asarray(served, dtype=float), **r,
            "tokens": tokens,
            "lifecycle_at_tokens": base.value("lifecycle_compute").to("FLOP").magnitude,
            "equal_cost": base.value("inference_tokens_equal_cost").to("token").magnitude,
            "pretrain": base.value("pretrain_compute").to("FLOP").magnitude,
            "tokens_is_lecture": "lecture" in src and "--set" not in src}


def _sci(x: float) -> str:
    """3 significant figures as a power of ten, plain text: 1.59×10²⁶."""
    e = int(np.floor(np.log10(abs(x)))) if x else 0
    return f"{x / 10 ** e:.3g}×10{superscript(e)}"


def _tokens(n: float) -> str:
    return f"{n / 1e12:,.0f} T" if n >= 1e12 else f"{n / 1e9:,.0f} B"


def lifecycle_compute_vs_tokens(data, hw, model, overrides=None) -> str:
    """(10) A model's life in FLOP against the tokens it serves: pre-training and RL flat,
    inference rising, their total; the lecture's ~200 T tokens and the equal-cost point marked."""
    d = lifecycle_data(data, hw, model, overrides)
    x = d["served"]
    fig = plt.figure(figsize=(6.4, 4.4))
    fig.subplots_adjust(left=0.11, right=0.97, top=0.93, bottom=0.34)
    ax = fig.add_subplot()
    ax.loglog(x, d["lifecycle_compute"], color=C["step"], lw=2.2, label="total over the model's life")
    ax.loglog(x, d["pretrain_compute"], color=C["compute"], ls="--", label="pre-training: 6·N_active·D_pre")
    ax.loglog(x, d["rl_compute"], color=C["kv"], ls="-.", label="RL: k_RL·N_active·D_RL / η_RL")
    ax.loglog(x, d["inference_compute"], color=C["out"], label="inference: 2·N_active·D_inf / η_inf")
    eq, tok = d["equal_cost"], d["tokens"]
    lo, hi = float(np.nanmin(d["inference_compute"])), float(np.nanmax(d["lifecycle_compute"]))
    ax.set_ylim(lo / 1.5, hi * 3)
    ax.set_xlim(x[0], x[-1])
    if x[0] <= eq <= x[-1]:
        ax.plot([eq], [d["pretrain"]], "o", color=C["step"], ms=5, zorder=5,
                label=f"inference costs as much as pre-training at {_tokens(eq)} tokens served")
        ax.annotate(f"= pre-training\nat {_tokens(eq)}", (eq, d["pretrain"]), xytext=(-6, -6),
                    textcoords="offset points", ha="right", va="top", fontsize=7.5)
    if x[0] <= tok <= x[-1]:
        name = "the lecture's ~" if d["tokens_is_lecture"] else "the featured "
        ax.axvline(tok, color="#555", lw=0.9, ls=":")
        ax.plot([tok], [d["lifecycle_at_tokens"]], "D", color=C["step"], ms=5, zorder=5)
        ax.annotate(f"{name}{_tokens(tok)} tokens served:\n{_sci(d['lifecycle_at_tokens'])} FLOP in all",
                    (tok, d["lifecycle_at_tokens"]), xytext=(-8, 10), textcoords="offset points",
                    ha="right", va="bottom", fontsize=7.5,
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
    ax.set_xlabel("tokens served over the model's life, D_inf (tokens)")
    ax.set_ylabel("FLOP (pre-training-equivalent machine time)")
    ax.set_title(f"Compute over a model's life: {model} (FLOP do not depend on the chip, here {hw})",
                 fontsize=8.5)
    legend_below(ax, ncol=1)
    return svg(fig)
