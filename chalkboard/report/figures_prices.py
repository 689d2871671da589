"""Chapter 6's blackboard plot: chip time per token against context, with the price tier.

The lecture (chapters-3-7.md#A-02, #A-03): compute is flat in context, memory is the weights
(an offset) plus the KV cache (linear in L), and the step is the larger, with a kink at the
crossover; a two-tier price steps up near it. The curves are the derivations swept through
``Scenario``; the price steps are the selected snapshot of prices.yaml. Returns SVG text.
"""
from __future__ import annotations

import numpy as np

from .drawing import C, plt, svg, sweep_values
from ..errors import MissingInput
from ..evaluation.evaluate import Scenario


def cost_vs_context(data, hw, model, overrides=None) -> str:
    base = Scenario(data, hw, model, dict(overrides or {}))
    per_token = (base.value("chips").to("chip").magnitude
                 / (base.value("batch").to("sequence").magnitude * base.value("tokens_per_step").magnitude))
    contexts = np.geomspace(1e3, 2e6, 240)
    r = sweep_values(data, hw, model, ("compute_time", "memory_time", "step_time"), "context", contexts,
               "token/sequence", overrides, to="ms")
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    ax.plot(contexts, r["compute_time"] * per_token, color=C["compute"], lw=1.2,
            label="compute (weights + attention)")
    ax.plot(contexts, r["step_time"] * per_token, color=C["step"], lw=2.4, alpha=0.45, label="step: the larger")
    ax.plot(contexts, r["memory_time"] * per_token, color=C["mem"], lw=1.2, ls="--", label="memory (weights + KV)")
    L_star = base.value("context_crossover").to("token/sequence").magnitude
    if contexts[0] <= L_star <= contexts[-1]:
        ax.axvline(L_star, color=C["kv"], ls="--", lw=1, label=f"KV slope = compute slope: {L_star:,.0f} tokens")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("context [tokens per sequence]")
    ax.set_ylabel("chip time per token [chip·ms]")
    try:
        thr = base.value("long_context_threshold").to("token/sequence").magnitude
        p_in = base.value("input_price").to("USD/Mtoken").magnitude
        p_long = base.value("long_input_price").to("USD/Mtoken").magnitude
    except MissingInput:
        thr = None
    if thr is not None:
        ax2 = ax.twinx()
        ax2.step([contexts[0], thr, contexts[-1]], [p_in, p_long, p_long], where="post",
                 color=C["out"], lw=1.2, label=f"input price ({base.price.id})")
        ax2.set_ylabel("input price [USD per million tokens]")
        ax2.set_ylim(0, p_long * 1.4)
        ax2.grid(False)
        ax2.spines["right"].set_visible(True)
        ax2.legend(loc="lower right", fontsize=7, frameon=False)
    ax.legend(loc="upper left", fontsize=7, frameon=False)
    ax.set_title(f"{base.model.name} on {base.hw.name}, batch {base.value('batch').magnitude:,.0f}",
                 fontsize=8)
    return svg(fig)
