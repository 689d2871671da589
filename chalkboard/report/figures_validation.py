"""The figure of the report's "How close do real systems get?": every published measurement
against chalkboard's bound (the records are chalkboard/validation/'s, their regimes
chalkboard/evaluation/regimes.py's)."""
from __future__ import annotations

from ..evaluation.regimes import REGIMES
from ..validation import Result
from .drawing import plt, svg


def points(results: list[Result]) -> list[tuple]:
    """What the figure reads of each record: (bound and measured output tokens/s per chip, its
    regime, whether its batch was published, whether the model is dense). Small, so that it
    travels to the drawing process at once."""
    return [(r.bound_chip_rate, r.measured_chip_rate, r.regime, r.record.batch is not None, r.dense)
            for r in results]

REGIME_COLOURS = {REGIMES[0]: "#d62728", REGIMES[1]: "#ff7f0e", REGIMES[2]: "#1f77b4"}


def figure_svg(pts: list[tuple]) -> str:
    """Measured against bound, output tokens/s per chip on log axes: one marker per record
    (filled: batch published; open: the loosest batch), coloured by regime, with y = x; ``pts``
    as points() gives them."""
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    xs = [p[0] for p in pts] + [p[1] for p in pts]
    lo, hi = min(xs) / 2, max(xs) * 2
    ax.plot([lo, hi], [lo, hi], color="#111111", lw=1, label="measured = bound (y = x)")
    for frac, style in ((0.5, "--"), (0.1, ":")):
        ax.plot([lo, hi], [lo * frac, hi * frac], color="#888888", lw=0.8, ls=style,
                label=f"{frac:.0%} of the bound")
    for g in REGIMES:
        for known in (True, False):
            these = [p for p in pts if p[2] == g and p[3] == known]
            if not these:
                continue
            ax.scatter([p[0] for p in these], [p[1] for p in these], s=26,
                       color=REGIME_COLOURS[g], facecolors=REGIME_COLOURS[g] if known else "none",
                       label=g + ("" if known else " (batch not published)"), zorder=3)
    for bound, measured, _, _, dense in pts:
        if not dense:
            ax.scatter([bound], [measured], s=70, marker="s",
                       facecolors="none", edgecolors="#555555", lw=0.7, zorder=2)
    ax.scatter([], [], s=70, marker="s", facecolors="none", edgecolors="#555555", lw=0.7, label="MoE model")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("chalkboard's bound: output tokens/s per chip (batch / step_time_min)")
    ax.set_ylabel("published measurement: output tokens/s per chip")
    ax.set_title(f"How close do real systems get? {len(pts)} published measurements")
    ax.legend(fontsize=7, loc="upper left", frameon=False)
    return svg(fig)
