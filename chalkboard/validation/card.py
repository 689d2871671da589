"""What `validate` shows of the evaluated records and the fitted engine model: the table and the
held-out report card as text, the same as JSON (`validate --json`, the library's cb.validate), and
the rows and numbers of the report's section "How close do real systems get?" (its figure is
chalkboard/report/figures_validation.py). Presentation only: the numbers are bounds.py's, stats.py's
and engine_fit.py's."""
from __future__ import annotations

import math

from .bounds import Result
from .engine_fit import PARAMS, WITHIN
from .records import MEASUREMENTS_FILE
from .stats import cited_figures, summary


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%" if x < 0.1 else f"{x * 100:.0f}%"


def as_json(results: list[Result], m) -> dict:
    """The records and their efficiencies, and the engine model ``m`` (``efficiency_model``) fitted to them."""
    rows = []
    for r in results:
        rec = r.record
        rows.append({
            "id": rec.id, "hardware": rec.hardware, "chips": rec.chips, "system_chips": rec.system_chips or rec.chips,
            "parallelism": rec.parallelism, "model": rec.model, "formats": r.formats,
            "batch": rec.batch, "bound_batch": r.batch, "context": r.context, "tokens_per_step": r.tokens_per_step,
            "input_tokens": rec.input_tokens, "output_tokens": rec.output_tokens,
            "measured": {k: {"value": float(q.magnitude), "unit": f"{q.units:~P}"} for k, q in rec.measured.items()},
            "step_time_min_s": r.step_time_min, "bound_token_s_per_chip": r.bound_chip_rate,
            "measured_token_s_per_chip": r.measured_chip_rate, "efficiency": r.efficiency,
            "efficiencies": r.efficiencies, "regime": r.regime, "dense": r.dense,
            "balance_batch": r.balance_batch, "measured_step_time_s": r.measured_step_time,
            "assumed": r.assumed, "fits": r.fits is None, "fit_note": r.fits, "violates": r.violates,
            "source": {"id": rec.source.id, "title": rec.source.title, "url": rec.source.url,
                       "as_of": rec.source.as_of, "where": rec.where},
            "notes": rec.notes,
        })
    fitted = {"parameters": dict(zip(PARAMS, m.params)),
              "runs": m.n, "sources": m.sources, "held_out_runs": m.cv_n,
              "held_out_median_abs_log_error": m.cv_median, "held_out_within_1_5": m.cv_within,
              "range_factors": list(m.band),
              "splits": [vars(x) for x in m.splits], "worst": [vars(x) for x in m.worst],
              "bounded_runs": m.bounded, "engines": [vars(e) for e in m.engines]}
    return {"records": rows, "summary": summary(results), "cited": cited_figures(results),
            "violations": [r.record.id for r in results if r.violates], "efficiency_fit": fitted}


def as_text(results: list[Result], m) -> str:
    lines = [f"chalkboard validate: {len(results)} published measurements against step_time_min "
             f"(efficiency = measured speed / bound speed; the bound allows at most 100%)"]
    w = max(len(r.record.id) for r in results)
    lines.append(f"  {'record':<{w}}  {'chip':<12}{'chips':>6} {'model':<16}{'batch':>7}{'context':>9}"
                 f"  {'bound tok/s/chip':>16}{'measured':>10}{'eff.':>7}  regime")
    for r in results:
        rec = r.record
        b = f"{r.batch:,.0f}" + ("" if rec.batch is not None else "*")
        lines.append(f"  {rec.id:<{w}}  {rec.hardware:<12}{rec.chips:>6.0f} {rec.model:<16}{b:>7}{r.context:>9,.0f}"
                     f"  {r.bound_chip_rate:>16,.0f}{r.measured_chip_rate:>10,.0f}{_pct(r.efficiency):>7}  {r.regime}"
                     + ("  VIOLATION" if r.violates else ""))
    lines.append("  (* batch not published: the loosest the bound allows; see --json 'assumed')")
    lines.append("  efficiency by group: median (interquartile range, min-max), records")
    for g, s in summary(results).items():
        if s["n"]:
            lines.append(f"    {g:<27} {_pct(s['median']):>6} ({_pct(s['q1'])}-{_pct(s['q3'])}, "
                         f"{_pct(s['min'])}-{_pct(s['max'])}), {s['n']}")
    lines.append(f"  expected efficiency (the fit every expected number uses, unless --set engine=NAME takes one "
                 f"below): {m.text()}")
    for e in m.engines:   # --set engine=NAME takes one of these instead
        lines.append(f"  fitted to {e.name}'s runs alone (--set engine={e.name}): {m.for_engine(e.name).formula()}; "
                     f"{e.n} runs ({e.published} at a published batch, {e.held_out} of them predicted with their "
                     f"source held out) from {e.sources} sources, range ×{e.band[0]:.2f}-×{e.band[1]:.2f}")
    lines.extend(report_card(m))
    bad = [r for r in results if r.violates]
    fams = len({r.record.hardware for r in results})
    models = len({r.record.model for r in results})
    lines.append(f"  {fams} chips, {models} models; "
                 + (f"{len(bad)} VIOLATIONS: " + ", ".join(r.record.id for r in bad) if bad
                    else "no measurement is faster than the bound"))
    return "\n".join(lines)


def report_card(m) -> list[str]:
    """Each held-out split's score (runs at a published batch: median error, share within ×1.5, share
    inside the printed range; runs at an unpublished batch: share not above the range's top), and the
    runs predicted worst, with their regime."""
    lo, hi = m.band
    out = [f"  held out (each group left out of the fit in turn, its runs predicted; printed range ×{lo:.2f}-×{hi:.2f}):",
           f"    {'left out':<10}{'groups':>7}{'runs':>6}{'median error':>14}{f'within ×{WITHIN:g}':>13}"
           f"{'inside range':>14}   at an unpublished batch: not above the range"]
    for s in m.splits:
        if not s.n:
            continue
        out.append(f"    {'by ' + s.name:<10}{s.groups:>7}{s.n:>6}{'×' + format(math.exp(s.median), '.2f'):>14}"
                   f"{s.within:>13.0%}{s.inside:>14.0%}   {s.bounded_inside:.0%} of {s.bounded}")
    out.append(f"  held out by source: median error ×{math.exp(m.cv_median):.2f}, {m.cv_within:.0%} of "
               f"{m.cv_n} held-out runs within ×1.5 of the expected number")
    out.append("  worst held-out predictions (measured / expected, the split that held it out):")
    w = max((len(x.id) for x in m.worst), default=0)
    for x in m.worst:
        out.append(f"    {x.id:<{w}}  {x.chip:<12}{x.model:<16}{x.regime:<27}×{x.error:<7.2f} by {x.split}")
    return out


# -- the report -------------------------------------------------------------------------------
def _n(x: float) -> str:
    from ..typeset.fmt import sig
    return sig(x)


def for_report(results: list[Result], m, label: str = MEASUREMENTS_FILE) -> dict:
    """What the report's section "How close do real systems get?" shows (figure added later)."""
    rows = []
    for r in results:
        rec = r.record
        rows.append({
            "id": rec.id, "hardware": rec.hardware, "chips": f"{rec.chips:.0f}", "parallelism": rec.parallelism,
            "model": rec.model, "formats": r.formats,
            "batch": f"{r.batch:,.0f}" + ("" if rec.batch is not None else " *"),
            "context": f"{r.context:,.0f}", "bound_ms": _n(r.step_time_min * 1e3),
            "bound": _n(r.bound_chip_rate), "measured": _n(r.measured_chip_rate),
            "efficiency": _pct(r.efficiency), "regime": r.regime, "kind": r.kind,
            "assumed": "; ".join(r.assumed), "notes": rec.notes or "", "violates": r.violates,
            "source_title": rec.source.title, "source_url": rec.source.url, "where": rec.where,
        })
    stats = []
    for g, s in summary(results).items():
        if s["n"]:
            stats.append({"group": g, "n": s["n"], "median": _pct(s["median"]),
                          "iqr": f"{_pct(s['q1'])}–{_pct(s['q3'])}", "range": f"{_pct(s['min'])}–{_pct(s['max'])}"})
    bad = [r.record.id for r in results if r.violates]
    fit = {"text": m.text(), "within": _pct(m.cv_within), "held_out": m.cv_n,
           "median": f"×{math.exp(m.cv_median):.2f}", "low": f"×{m.band[0]:.2f}", "high": f"×{m.band[1]:.2f}"}
    return {"file": label, "count": len(results), "rows": rows, "stats": stats, "violations": bad, "fit": fit,
            "chips": len({r.record.hardware for r in results}), "models": len({r.record.model for r in results}),
            "svg": None, "held_out_svg": None}
