"""The lecture's blackboard plots, drawn with matplotlib as SVG from the same derivations.

Every curve is the derivation evaluated through ``Scenario`` (with ``--set``-style overrides
for the swept input), so the plots can never disagree with the numbers in the report.
Each function returns SVG text; nothing here writes files.
"""
from __future__ import annotations

import io

import numpy as np

from .evaluate import MissingInput, NotApplicable, Scenario
from .figures_prices import cost_vs_context

_STYLE = {
    "svg.hashsalt": "chalkboard",      # deterministic ids: two builds give identical SVG
    "svg.fonttype": "path",            # text as outlines: renders the same everywhere
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.25,
    "figure.dpi": 100,
}


class _Pyplot:
    """matplotlib.pyplot, imported and styled the first time a figure is drawn (not on import:
    commands that draw nothing never pay for matplotlib)."""
    _module = None

    def __getattr__(self, name):
        if _Pyplot._module is None:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot

            matplotlib.pyplot.rcParams.update(_STYLE)
            _Pyplot._module = matplotlib.pyplot
        return getattr(_Pyplot._module, name)


plt = _Pyplot()
C = {"compute": "#1f77b4", "weights": "#d62728", "kv": "#2ca02c", "step": "#111111",
     "mem": "#9467bd", "up": "#1f77b4", "out": "#ff7f0e", "comm": "#8c564b"}


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return buf.getvalue()


def _sweep(data, hw, model, names, var, values, unit, extra=None, to=""):
    """Evaluate quantities ``names`` with input ``var`` swept over ``values``: name -> array in ``to``.

    One scenario, evaluated over the whole array at once (the compiled, vectorised path)."""
    from .compiled import base_factor, declared
    from units import unit as parse_unit

    base = Scenario(data, hw, model, dict(extra or {}))
    out = base.sweep(names, var, values, unit or None)
    return {n: v * declared(n)[1] / base_factor(parse_unit(to)) for n, v in out.items()}


def _shade_unfit(ax, base: Scenario, xmax: float) -> None:
    """Hatch the batches whose weights and KV cache do not fit in the chips' HBM, and say so."""
    try:
        cap = base.value("max_batch_capacity").to("sequence").magnitude
    except NotApplicable:
        cap = 0.0
    except MissingInput:
        return
    if cap >= xmax:
        return
    ax.axvspan(max(cap, 1e-9 if ax.get_xscale() == "log" else 0), xmax, facecolor="none", edgecolor="#b22",
               hatch="///", lw=0, alpha=0.35,
               label=f"does not fit in HBM (more than {cap:,.0f} sequences)" if cap >= 1
               else "does not fit in HBM at any batch")
    if cap >= 1:
        ax.axvline(cap, color="#b22", lw=0.9)


def step_time_vs_batch(data, hw, model, overrides=None) -> str:
    """(1) Step time vs batch: compute line, weight-fetch floor, KV slope, their max.

    The balance batch of the lecture (KV ignored: compute meets the weight floor) is marked;
    the regions where the actual step is memory- or compute-bound are shaded.
    """
    base = Scenario(data, hw, model, dict(overrides or {}))
    b_ref = base.value("balance_batch").to("sequence").magnitude
    try:
        b_kv = base.value("balance_batch_kv").to("sequence").magnitude
    except NotApplicable:
        b_kv = None
    bs = np.linspace(1, max(3 * b_ref, 64), 240)
    r = _sweep(data, hw, model, ("compute_time", "weight_fetch_time", "weight_fetch_time_min",
                                 "weight_fetch_time_all", "memory_time", "step_time",
                                 "step_time_weights_only"), "batch", bs, "sequence", overrides, to="ms")
    t_c, t_w, t_mem, t_step = r["compute_time"], r["weight_fetch_time"], r["memory_time"], r["step_time"]
    ctx = base.value("context").to("token/sequence").magnitude
    fig, ax = plt.subplots(figsize=(6.4, 3.9))
    ax.plot(bs, t_c, color=C["compute"], label="compute  $t_{compute}$ (weights and attention)")
    ax.plot(bs, t_w, color=C["weights"], ls="--", label="weight fetch  $t_{weights}$ (experts touched)")
    if not np.allclose(r["weight_fetch_time_min"], r["weight_fetch_time_all"]):
        ax.plot(bs, r["weight_fetch_time_all"], color=C["weights"], lw=0.7, ls=(0, (1, 2)),
                label="all weights (the lecture's fetch) / only N_active (strict bound)")
        ax.plot(bs, r["weight_fetch_time_min"], color=C["weights"], lw=0.7, ls=(0, (1, 2)))
    ax.plot(bs, t_mem, color=C["mem"], ls=":", lw=1.6,
            label=f"weights + KV fetch  $t_{{mem}}$ at context {ctx:,.0f}")
    ax.plot(bs, r["step_time_weights_only"], color="#777", lw=1, ls=(0, (6, 2)),
            label="the lecture's first picture (KV, attention ignored)")
    ax.plot(bs, t_step, color=C["step"], lw=2.2, label="step time = max(compute, memory)")
    floor = base.value("latency_floor").to("ms").magnitude
    ax.annotate(f"latency floor (batch 1) {floor:.3g} ms", (bs[-1], floor), ha="right", va="top", fontsize=8,
                color=C["weights"], xytext=(0, -3), textcoords="offset points")
    _shade_unfit(ax, base, bs[-1])
    ax.axvline(b_ref, color="#555", lw=0.8, ls="-.")
    ax.annotate(f"balance batch B* = {b_ref:,.0f}\n(KV ignored)", (b_ref, 0), xytext=(4, 18),
                textcoords="offset points", fontsize=8)
    edge = b_kv if b_kv is not None and b_kv < bs[-1] else bs[-1]
    ax.axvspan(0, edge, color=C["weights"], alpha=0.06, label="memory-bound")
    if b_kv is not None and b_kv < bs[-1]:
        ax.axvspan(edge, bs[-1], color=C["compute"], alpha=0.06, label="compute-bound")
    elif b_kv is None:
        l_star = base.value("context_crossover").to("token/sequence").magnitude
        ax.annotate(f"memory-bound at every batch:\ncontext {ctx:,.0f} is past the crossover L* = {l_star:,.0f}",
                    (0.98, 0.5), xycoords="axes fraction", ha="right", fontsize=8, color=C["mem"])
    ax.set_xlim(0, bs[-1])
    ax.set_ylim(0, None)
    ax.set_xlabel("batch B (sequences)")
    ax.set_ylabel("time per decode step (ms)")
    ax.set_title(f"Step time vs batch: {model} on {hw}", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", frameon=False)
    return _svg(fig)


def cost_vs_batch(data, hw, model, overrides=None) -> str:
    """(2) Cost per token vs batch, log-log, with the floor and the knee (the balance batch)."""
    base = Scenario(data, hw, model, dict(overrides or {}))
    floor = base.value("cost_floor").to("USD/Mtoken").magnitude
    try:
        knee = base.value("balance_batch_kv")
    except NotApplicable:
        knee = base.value("balance_batch")
    bs = np.logspace(0, 5, 121)
    cost = _sweep(data, hw, model, ("cost_per_token",), "batch", bs, "sequence", overrides,
                  to="USD/Mtoken")["cost_per_token"]
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    ax.loglog(bs, cost, color=C["step"], lw=2, label="cost per token")
    _shade_unfit(ax, base, bs[-1])
    ax.axhline(floor, color=C["compute"], ls="--", lw=1, label=f"floor {floor:.3g} USD per million tokens (as B → ∞)")
    k = knee.to("sequence").magnitude
    ax.axvline(k, color="#555", lw=0.8, ls="-.", label=f"knee: balance batch {k:,.0f}")
    ax.set_xlabel("batch B (sequences)")
    ax.set_ylabel("USD per million tokens")
    ax.set_title(f"Cost per token vs batch: {model} on {hw}", fontsize=9)
    ax.legend(fontsize=7.5, frameon=False)
    return _svg(fig)


def hardware_by_year(data, model, refs: dict | None = None) -> str:
    """(3) Drain time and hardware ratio R for every chip, by launch year.

    ``refs`` maps 'drain_time' and 'hardware_ratio' to the lecture's claimed values (from
    claims.yaml: "about 20 ms", "around 300"), drawn as reference lines.
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
    panels = ((a1, 2, "drain_time", "ms", "HBM drain time (ms)"),
              (a2, 3, "hardware_ratio", "token", "hardware ratio R at bf16 (tokens)"))
    for ax, i, name, unit, xlab in panels:
        vals = [r[i] for r in rows]
        ax.barh(y, np.nan_to_num(vals), color="#1f77b4", height=0.6)
        for yy, v in zip(y, vals):
            label = "no bf16 rate published" if np.isnan(v) else f"{v:.3g}"
            ax.annotate(label, (0 if np.isnan(v) else v, yy), xytext=(2, 0), textcoords="offset points",
                        va="center", fontsize=6.5)
        if name in refs:
            ref = refs[name].to(unit).magnitude
            ax.axvline(ref, color="#d62728", ls="--", lw=1, label=f"lecture: about {ref:g} {unit}")
            ax.legend(fontsize=7, frameon=False, loc="lower right")
        ax.set_xlabel(xlab)
        ax.grid(axis="y", visible=False)
    a1.set_yticks(y, labels, fontsize=7)
    fig.suptitle("Every generation, newest at the top: drain time and hardware ratio", fontsize=9)
    return _svg(fig)


def context_sweep(data, hw, model, overrides=None) -> str:
    """(4) MFU at large batch and balance batch vs context length, crossover marked."""
    base = Scenario(data, hw, model, dict(overrides or {}))
    l_star = base.value("context_crossover").to("token/sequence").magnitude
    ls_ = np.logspace(np.log10(max(l_star / 30, 64)), np.log10(l_star * 8), 160)
    mfu = _sweep(data, hw, model, ("mfu_large_batch",), "context", ls_, "token/sequence",
                 overrides)["mfu_large_batch"]
    below = ls_[ls_ < l_star * 0.995]
    bkv = _sweep(data, hw, model, ("balance_batch_kv",), "context", below, "token/sequence", overrides,
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
    return _svg(fig)


def a2a_vs_racks(data, hw, model, overrides=None) -> str:
    """(5) All-to-all time vs racks spanned: scale-up share vs scale-out share."""
    ns = np.arange(1, 9)
    r = _sweep(data, hw, model, ("a2a_time_scaleup", "a2a_time_scaleout"), "racks", ns, "", overrides, to="ms")
    up, out = r["a2a_time_scaleup"], r["a2a_time_scaleout"]
    step = Scenario(data, hw, model, dict(overrides or {})).value("step_time").to("ms").magnitude
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    ax.plot(ns, up, "o-", color=C["up"], label="in-rack share over scale-up")
    ax.plot(ns, out, "s-", color=C["out"], label="off-rack share over scale-out")
    ax.axhline(step, color="#555", ls="--", lw=1, label=f"roofline step time {step:.3g} ms (one rack)")
    ax.set_xlabel("racks one MoE layer spans (n)")
    ax.set_ylabel("all-to-all time per step (ms)")
    ax.set_title(f"All-to-all vs racks spanned: {model} on {hw}", fontsize=9)
    ax.legend(fontsize=7.5, frameon=False)
    return _svg(fig)


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
    return _svg(fig)


FIGURES = {
    "step_time_vs_batch": ("Step time vs batch", step_time_vs_batch, "roofline"),
    "cost_vs_batch": ("Cost per token vs batch", cost_vs_batch, "latency_cost"),
    "hardware_by_year": ("Drain time and hardware ratio by launch year", None, "schedule"),
    "context_sweep": ("MFU and balance batch vs context length", context_sweep, "context"),
    "a2a_vs_racks": ("All-to-all time vs racks spanned", a2a_vs_racks, "moe_rack"),
    "step_breakdown": ("Step-time breakdown, one vs two racks", step_breakdown, "moe_rack"),
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


# Two groups of about equal drawing time (measured), one per forked process.
_GROUPS = (("step_time_vs_batch", "context_sweep", "step_breakdown"),
           ("cost_vs_batch", "hardware_by_year", "a2a_vs_racks"))


def draw_all_background(data, hw, model, overrides=None, refs=None, extra=None):
    """Start drawing the figures in two forked processes (the figures split in two groups,
    ``extra`` with the second), while the caller goes on; returns a function that waits for
    them. ``extra`` maps more figure names to functions that draw them (an SVG string each,
    returned with no chip). Where fork is not available (or fails), the figures are drawn at
    once and the function returns them."""
    import multiprocessing as mp

    jobs = [(_GROUPS[0], None), (_GROUPS[1] + tuple(n for n in FIGURES if n not in _GROUPS[0] + _GROUPS[1]),
                                 extra)]
    try:
        ctx = mp.get_context("fork")
        started = []
        for only, more in jobs:
            receive, send = ctx.Pipe(duplex=False)
            # the child closes every read end it inherits, so a parent that dies or stops reading
            # breaks the pipe and the child's send fails instead of blocking for ever
            ends = [r for r, _ in started] + [receive]
            child = ctx.Process(target=_draw_and_send, args=(send, data, hw, model, overrides, refs, more, only,
                                                              ends), daemon=True)
            child.start()
            send.close()
            started.append((receive, child))
    except (ValueError, OSError):
        done = _draw_everything(data, hw, model, overrides, refs, extra, None)
        return lambda: done

    def wait():
        out, failed = {}, None
        try:
            for receive, child in started:
                try:
                    kind, payload = receive.recv()
                except EOFError:
                    kind, payload = "error", "a process drawing the figures ended without a result"
                if kind == "error":
                    failed = failed or payload
                else:
                    out.update(payload)
        finally:  # also on an interruption: no child is left behind
            for receive, child in started:
                receive.close()
                if child.is_alive():
                    child.terminate()
                child.join()
        if failed:
            raise RuntimeError(f"drawing the figures failed: {failed}")
        return {n: out[n] for n in [*FIGURES, *(extra or {})] if n in out}  # the declared order
    return wait


def _draw_everything(data, hw, model, overrides, refs, extra, only):
    out = draw_all(data, hw, model, overrides, refs, only)
    for name, draw in (extra or {}).items():
        out[name] = (draw(), None)
    return out


def _draw_and_send(conn, data, hw, model, overrides, refs, extra=None, only=None, read_ends=()):
    for end in read_ends:
        end.close()
    try:
        conn.send(("ok", _draw_everything(data, hw, model, overrides, refs, extra, only)))
    except BaseException as e:  # reported by the parent as one line
        conn.send(("error", f"{type(e).__name__}: {e}"))
    finally:
        conn.close()
