"""Chapter 4's plot: memory per chip against the pipeline depth (registered in figures.FIGURES).

The two terms of the pipelined memory per chip, each the derivation evaluated over the depth:
the weight share falls as 1/P, the KV share of one balance-batch micro-batch stays flat.
Returns SVG text; nothing here writes files.
"""
from __future__ import annotations

import numpy as np

from .drawing import C, plt, svg, sweep_values
from ..evaluation.evaluate import Scenario


def memory_vs_stages(data, hw, model, overrides=None) -> str:
    """(7) Weights and KV cache per chip vs pipeline stages, with the chip's HBM and the depth at
    which the KV term overtakes the weights."""
    ps = np.arange(1, 17, dtype=float)
    r = sweep_values(data, hw, model, ("weights_per_chip_pipelined", "kv_per_chip_pipelined",
                                 "memory_per_chip_pipelined"), "pipeline_stages", ps, "", overrides,
               to="GB/chip")
    base = Scenario(data, hw, model, dict(overrides or {}))
    hbm = base.value("hbm_capacity").to("GB/chip").magnitude
    p_kv = base.value("kv_dominance_depth").to("").magnitude
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    ax.semilogy(ps, r["memory_per_chip_pipelined"], "-", color=C["step"], lw=2, label="total per chip")
    ax.semilogy(ps, r["weights_per_chip_pipelined"], "o-", color=C["weights"], ms=3,
                label="weights: N·β_w/(S·P)")
    ax.semilogy(ps, r["kv_per_chip_pipelined"], "s-", color=C["kv"], ms=3,
                label="KV cache: B*·L·b_kv/S (no P)")
    ax.axhline(hbm, color="#555", ls="--", lw=1, label=f"HBM per chip, {hbm:,.0f} GB")
    if ps[0] <= p_kv <= ps[-1]:
        ax.axvline(p_kv, color="#555", ls="-.", lw=0.9)
        ax.annotate(f"KV term larger from P = {p_kv:.2g}", (p_kv, hbm), xytext=(4, -12),
                    textcoords="offset points", fontsize=8)
    else:
        ax.annotate(f"KV term larger from P = {p_kv:.2g}" + (" (already at P = 1)" if p_kv < ps[0] else ""),
                    (0.02, 0.04), xycoords="axes fraction", fontsize=8)
    ax.set_xlabel("pipeline stages P (one balance-batch micro-batch in flight per stage)")
    ax.set_ylabel("GB per chip")
    ax.set_title(f"Memory per chip vs pipeline depth: {model} on {hw}", fontsize=9)
    ax.legend(fontsize=7.5, frameon=False, loc="center right")
    return svg(fig)
