"""The figures of the report's "How close do real systems get?": every published measurement
against chalkboard's bound, and each run at a published batch against the speed the engine model
expects of it held out by source (the records and the fit are chalkboard/validation/'s, their
regimes chalkboard/evaluation/regimes.py's)."""
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
    return _finished(fig, ax, lo, hi, "chalkboard's bound: output tokens/s per chip (batch / step_time_min)",
                     f"How close do real systems get? {len(pts)} published measurements")


def _finished(fig, ax, lo: float, hi: float, xlabel: str, title: str) -> str:
    """Both figures' log axes over the same span, against the published measurement, as SVG."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("published measurement: output tokens/s per chip")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper left", frameon=False)
    return svg(fig)


def held_out_points(results: list[Result], m) -> list[tuple]:
    """What the measured-against-expected figure reads of each decode run the engine model ``m``
    predicted held out by source (Efficiency.held_out): (expected and measured output tokens/s per
    chip, its regime). The fit counts a copy's steps a second; measured / expected is the same ratio
    in any unit, so the expected speed per chip is the measured one over it. A prefill alone is left
    out: its speed is prompt tokens, not output tokens."""
    by_id = {r.record.id: r for r in results}
    return [(by_id[i].measured_chip_rate * predicted / measured, by_id[i].measured_chip_rate, by_id[i].regime)
            for i, measured, predicted in m.held_out if by_id[i].regime in REGIMES]


def held_out_svg(argument: tuple) -> str:
    """Measured against expected, output tokens/s per chip on log axes: one marker per run, coloured by
    regime, with y = x and the printed range (factors on the speed) as a band; ``argument`` is
    (held_out_points(), Efficiency.band)."""
    pts, (low, high) = argument
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    xs = [p[0] for p in pts] + [p[1] for p in pts]
    lo, hi = min(xs) / 2, max(xs) * 2
    ax.fill_between([lo, hi], [lo * low, hi * low], [lo * high, hi * high], color="#dddddd", lw=0,
                    label=f"the printed range, ×{low:.2f} to ×{high:.2f}")
    ax.plot([lo, hi], [lo, hi], color="#111111", lw=1, label="measured = expected (y = x)")
    for g in REGIMES:
        these = [p for p in pts if p[2] == g]
        if these:
            ax.scatter([p[0] for p in these], [p[1] for p in these], s=26, color=REGIME_COLOURS[g], label=g, zorder=3)
    inside = sum(low <= y / x <= high for x, y, _ in pts)
    return _finished(fig, ax, lo, hi, "expected, held out by source: output tokens/s per chip",
                     f"Measured against expected: {len(pts)} decode runs at a published batch, {inside} inside the range")
