"""The efficiencies of the evaluated records summed up: by regime, dense against MoE, one chip against
many (what `validate` and the report print), and the figures the lecture's sourced claims are judged
against (claims.yaml quotes them). Apart from bounds.py, which computes each record's efficiency, and
card.py, which shows these."""
from __future__ import annotations

import math
import statistics

from ..evaluation.regimes import REGIMES, SMALL_BATCH
from .bounds import PREFILL, Result


def _stats(values: list[float]) -> dict:
    v = sorted(values)
    if not v:
        return {"n": 0}
    q = statistics.quantiles(v, n=4, method="inclusive") if len(v) > 1 else [v[0], v[0], v[0]]
    return {"n": len(v), "median": statistics.median(v), "min": v[0], "max": v[-1],
            "q1": q[0], "q3": q[2], "geomean": math.exp(sum(math.log(x) for x in v) / len(v))}


def summary(results: list[Result]) -> dict:
    """Efficiency statistics: all records, and by regime, dense vs MoE, single chip vs many."""
    groups = {"all records": [r.efficiency for r in results]}
    for g in (*REGIMES, PREFILL):
        groups[g] = [r.efficiency for r in results if r.regime == g]
    for g in ("dense", "MoE"):
        groups[g] = [r.efficiency for r in results if r.kind == g]
    for g in ("single chip", "many chips"):
        groups[g] = [r.efficiency for r in results if r.chips_group == g]
    return {k: _stats(v) for k, v in groups.items()}


def cited_figures(results: list[Result]) -> dict[str, dict[str, float]]:
    """What the lecture's claims are judged against (claims.yaml's sourced rows quote these):

    * roofline: the median efficiency in each regime;
    * batch: published operating batch / balance batch, for records with a published batch
      above SMALL_BATCH (throughput set-ups);
    * step: the measured step time (ms) of those records;
    * batch_setups: one batch ratio per set-up (chip, model and formats, which fix the balance batch):
      its largest published batch, the one a throughput run chose; the smaller batches of the same
      sweep are its latency points."""
    stats = summary(results)
    roofline = {g: stats[g]["median"] for g in REGIMES if stats[g]["n"]}
    big = [r for r in results if r.record.batch is not None and r.record.batch > SMALL_BATCH]
    batch = {r.record.id: r.record.batch / r.balance_batch for r in big if r.balance_batch}
    step = {r.record.id: r.measured_step_time * 1e3 for r in big if r.measured_step_time}
    largest = {}
    for r in big:
        if r.balance_batch:
            key = (r.record.hardware, r.record.model, repr(r.formats))
            if key not in largest or r.record.batch > largest[key].record.batch:
                largest[key] = r
    setups = {r.record.id: batch[r.record.id] for r in largest.values()}
    return {"roofline": roofline, "batch": batch, "step": step, "batch_setups": setups}

