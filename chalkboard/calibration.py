"""The efficiencies an expected number assumes: one engine model fitted to the published runs.

A published run gives a speed; its set-up gives the terms of its bound (the compute, the weight
and KV reads and, where the layout is stated, the collectives). An engine does not reach the bound
for three reasons the runs show apart, so the model has one parameter for each:

    step    = compute / mfu + reads / mbu + collectives + layers · sync
    request = output · step / batch + prefill / prefill_efficiency

* compute and reads add rather than overlap (a decode step's kernels mostly run one after the
  other), each at its own share of peak;
* a fixed time per layer (kernel launches, barriers, the latency of small all-reduces). Held out
  by source, this constant did best (73% within ×1.5): growing it with the logarithm, the square
  root or the number of chips gave 65-68%, and a further factor for a mixture of experts' layers
  or reads did not help;
* a throughput that counts whole requests also paid for their prompts' prefill (one prompt's bound
  under the layout), which runs at its own share of that bound (without it, a run with long prompts
  looks many times less efficient than it is): a colocated engine, as derivations/disaggregation.py
  has it.

The fit is least squares on the log of the speed (a factor too fast and the same factor too slow
weigh the same), every share capped at 1 so no prediction beats its bound. Its spread is honest:
each source (a benchmark page, an MLPerf round's logs) is left out in turn, the model is fitted
without it and the left-out runs are predicted; the 10th and 90th percentiles of those errors are
the range every expected number carries, and `validate` prints the median error and the share
within a factor of 1.5.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

BAND = (10, 90)      # percentiles of the cross-validated error an expected number's range spans
WITHIN = 1.5         # the factor validate counts held-out runs within
# the parameters, in the order of the fit's vector; each is an input a user can give with --set
PARAMS = ("expected_mfu", "expected_mbu", "expected_sync_time", "expected_prefill_efficiency")
SHARES = (0, 1, 3)       # the parameters that are shares of a peak (capped at 1)
MEANING = {
    "expected_mfu": "share of peak FLOP/s a decode step's compute reaches",
    "expected_mbu": "share of HBM bandwidth a decode step's reads reach",
    "expected_sync_time": "fixed time of a layer in a step, that neither compute nor reads explain",
    "expected_prefill_efficiency": "share of its bound a prefill reaches",
}


@dataclass(frozen=True)
class Run:
    """What one published run gives the fit: its bound's terms and its measured speed."""
    compute: float      # s: compute of one decode step (under the stated layout where there is one)
    reads: float        # s: weight and KV reads of one decode step
    comm: float         # s: the step's collectives at full speed (0 where no layout is stated)
    layers: float
    batch: float        # sequences decoded together
    prefill: float      # s: the bound on one prompt's prefill where the measured rate counts it, else 0
    output: float       # tokens a request decodes (1 where the rate is per step)
    measured: float     # token/s of one copy
    source: str


def _arrays(runs):
    return {f: np.array([getattr(r, f) for r in runs], float) for f in
            ("compute", "reads", "comm", "layers", "batch", "prefill", "output", "measured")}


def _values(q: np.ndarray) -> np.ndarray:
    """The parameters from the fit's free vector (logs; shares capped at 1)."""
    v = np.exp(q)
    v[list(SHARES)] = np.exp(np.minimum(q[list(SHARES)], 0.0))
    return v


def step_time(p, compute, reads, comm, layers):
    """The expected decode step (s) at parameters ``p`` (PARAMS order); derivations/measured.py's
    step_time_expected_layout is the same sum."""
    mfu, mbu, sync = p[0], p[1], p[2]
    return compute / mfu + reads / mbu + comm + layers * sync


def _speed(p, a):
    step = step_time(p, a["compute"], a["reads"], a["comm"], a["layers"])
    return a["output"] / (a["output"] * step / a["batch"] + a["prefill"] / p[3])


def _nelder_mead(f, x0, steps, iters=1500, tol=1e-10):
    """Minimise f from x0 (the simplex method of Nelder and Mead 1965; deterministic)."""
    pts = [np.array(x0, float)] + [np.array(x0, float) + np.eye(len(x0))[i] * steps[i] for i in range(len(x0))]
    vals = [f(p) for p in pts]
    for _ in range(iters):
        order = np.argsort(vals)
        pts, vals = [pts[i] for i in order], [vals[i] for i in order]
        if vals[-1] - vals[0] < tol:
            break
        centre = np.mean(pts[:-1], axis=0)
        xr = centre + (centre - pts[-1])
        fr = f(xr)
        if fr < vals[0]:
            xe = centre + 2 * (centre - pts[-1])
            fe = f(xe)
            pts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = xr, fr
        else:
            xc = centre + 0.5 * (pts[-1] - centre)
            fc = f(xc)
            if fc < vals[-1]:
                pts[-1], vals[-1] = xc, fc
            else:
                pts = [pts[0]] + [pts[0] + 0.5 * (p - pts[0]) for p in pts[1:]]
                vals = [vals[0]] + [f(p) for p in pts[1:]]
    i = int(np.argmin(vals))
    return pts[i], vals[i]


# starting points: shares at 0.5 and 0.25, a sync time of 10 µs and 100 µs per layer
_STARTS = [np.log([s, s, t, 0.5]) for s in (0.5, 0.25) for t in (1e-5, 1e-4)]
_STEPS = (1.0, 1.0, 2.0, 1.0)


def _fit_params(a) -> np.ndarray:
    y = np.log(a["measured"])

    def loss(q):
        return float(np.sum((y - np.log(_speed(_values(q), a))) ** 2))
    best = min((_nelder_mead(loss, s, _STEPS) for s in _STARTS), key=lambda r: r[1])
    q, _ = _nelder_mead(loss, best[0], _STEPS)     # restarted once from the best: a simplex can stall
    return _values(q)


@dataclass(frozen=True)
class Efficiency:
    params: tuple[float, ...]   # PARAMS order
    n: int                      # runs fitted
    sources: int                # distinct sources among them
    band: tuple[float, float]   # factors on the speed at the BAND percentiles of the held-out error
    cv_median: float            # median |log(measured / predicted)| held out (natural log)
    cv_within: float            # share of held-out runs within ×WITHIN
    cv_n: int                   # runs predicted held out (those whose source is not their only one)
    of: int = 0                 # published runs in all, the fitted ones among them

    def inputs(self, factor: float = 1.0) -> dict[str, float]:
        """The expected-number inputs of derivations/measured.py, at a speed ``factor`` times the fit's
        (the shares times it, capped at 1; the fixed time over it)."""
        mfu, mbu, sync, pre = self.params
        return {"expected_mfu": min(1.0, mfu * factor), "expected_mbu": min(1.0, mbu * factor),
                "expected_sync_time": sync / factor, "expected_prefill_efficiency": min(1.0, pre * factor)}

    def ends(self) -> tuple[dict[str, float], dict[str, float]]:
        """The inputs at the low and the high end of the held-out range."""
        return self.inputs(self.band[0]), self.inputs(self.band[1])

    def text(self) -> str:
        lo, hi = self.band
        mfu, mbu, sync, pre = self.params
        return (f"step = compute/{mfu:.3g} + reads/{mbu:.3g} + collectives + layers·{sync * 1e6:.3g} µs, a prefill "
                f"at {pre:.0%} of its bound; fitted to {self.n} of "
                f"{self.of or self.n} published runs (those at a known batch without speculative decoding) from "
                f"{self.sources} sources; held out by source, {BAND[0]}th-{BAND[1]}th percentile ×{lo:.2f}-×{hi:.2f}")


def fit(runs: list[Run], of: int = 0) -> Efficiency:
    """The fit, and its error with each source held out."""
    if len(runs) < 6:
        raise ValueError(f"too few published runs to fit an efficiency ({len(runs)}; at least 6)")
    a = _arrays(runs)
    source = np.array([r.source for r in runs], dtype=object)
    params = _fit_params(a)
    errors = []
    for s in dict.fromkeys(source):
        held = source == s
        if held.all():
            continue
        p = _fit_params({k: v[~held] for k, v in a.items()})
        errors.extend(np.log(a["measured"][held]) - np.log(_speed(p, {k: v[held] for k, v in a.items()})))
    err = np.array(errors)
    lo, hi = np.percentile(err, BAND)
    return Efficiency(tuple(float(p) for p in params), len(runs), len(set(source)),
                      (math.exp(lo), math.exp(hi)), float(np.median(np.abs(err))),
                      float(np.mean(np.abs(err) <= math.log(WITHIN))), int(err.size), of or len(runs))
