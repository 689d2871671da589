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
weigh the same), every share capped at 1 so no prediction beats its bound. A throughput whose batch
was not published is a one-sided bound: it can be no faster than the model at the largest batch that
fits, and counts only where it is. Its spread is honest: each source (a benchmark page, an MLPerf
round's logs), then each chip, each model and each engine is left out in turn, the model is fitted
without it and the left-out runs are predicted; the range every expected number carries spans the
widest of those splits' 10th and 90th percentiles (a split that predicts worse widens it, so each
keeps at least eight in ten of its runs inside), and `validate` prints each split's median error,
share within a factor of 1.5 and share inside the range.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

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
    batch: float        # sequences decoded together (for an upper run: the largest that fits)
    prefill: float      # s: the bound on one prompt's prefill where the measured rate counts it, else 0
    output: float       # tokens a request decodes (1 where the rate is per step)
    measured: float     # token/s of one copy
    source: str
    chip: str = ""
    model: str = ""
    engine: str = ""
    id: str = ""
    regime: str = ""
    upper: bool = False  # batch not published: the measured speed is at most the one at the largest batch


def _arrays(runs):
    return {f: np.array([getattr(r, f) for r in runs], float) for f in
            ("compute", "reads", "comm", "layers", "batch", "prefill", "output", "measured", "upper")}


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


def _residuals(p, a) -> np.ndarray:
    """log(measured / predicted); a run at an unpublished batch counts only where it is faster than
    the speed at the largest batch that fits (its one-sided bound), never where it is slower."""
    r = np.log(a["measured"]) - np.log(_speed(p, a))
    return np.where(a["upper"] > 0, np.maximum(r, 0.0), r)


def _loss(a):
    """q -> the sum of squared _residuals at _values(q), with what does not depend on q worked out
    once (the simplex calls it some 200 times a fit)."""
    compute, reads, comm, layers, batch, prefill, output = (
        a[f] for f in ("compute", "reads", "comm", "layers", "batch", "prefill", "output"))
    logged, upper = np.log(a["measured"]), a["upper"] > 0
    capped = [i in SHARES for i in range(len(PARAMS))]

    def loss(q) -> float:
        mfu, mbu, sync, pre = (math.exp(min(x, 0.0)) if c else math.exp(x) for x, c in zip(q, capped))
        step = compute / mfu + reads / mbu + comm + layers * sync
        r = logged - np.log(output / (output * step / batch + prefill / pre))
        r = np.where(upper, np.maximum(r, 0.0), r)
        return float(r @ r)
    return loss


def _fit_params(a, near=None, alone: bool = False) -> np.ndarray:
    """The parameters that minimise the squared log error, from the fixed starting points; or, for
    a held-out fit, from ``near`` (the fit to these runs and a few more) and the first of them (from
    ``near`` alone a simplex can stay on a capped share's flat edge), or from ``near`` ``alone``."""
    loss = _loss(a)
    starts = _STARTS if near is None else [np.log(near)] if alone else [np.log(near), _STARTS[0]]
    best = min((_nelder_mead(loss, s, _STEPS) for s in starts), key=lambda r: r[1])
    q, _ = _nelder_mead(loss, best[0], _STEPS)     # restarted once from the best: a simplex can stall
    return _values(q)


@dataclass(frozen=True)
class Split:
    """The held-out score of one way of splitting the runs (by source, chip, model or engine): each
    group left out in turn, the model fitted on the rest, the left-out runs predicted."""
    name: str
    groups: int           # groups left out in turn (a group that is every run is not)
    n: int                # runs predicted held out at their published batch
    median: float         # median |log(measured / predicted)| (natural log)
    within: float         # share within ×WITHIN
    inside: float         # share inside the printed range (Efficiency.band)
    low: float            # factor at this split's BAND[0]th percentile
    high: float           # and at its BAND[1]th
    bounded: int = 0      # runs at an unpublished batch predicted held out
    bounded_inside: float = 1.0   # share of them not faster than the range's top at the largest batch


@dataclass(frozen=True)
class Miss:
    """One of the runs the held-out model predicts worst."""
    id: str
    chip: str
    model: str
    regime: str
    error: float          # measured / predicted, held out
    split: str            # the split whose held-out prediction this is


@dataclass(frozen=True)
class Engine:
    """The model fitted to one engine's runs alone (``--set engine=NAME``)."""
    name: str
    params: tuple[float, ...]   # PARAMS order
    n: int                      # its runs fitted
    published: int              # of them, at a published batch
    sources: int
    band: tuple[float, float]   # the range its expected numbers carry: see _engines
    held_out: int               # its runs predicted with their source left out (0: one source)


@dataclass(frozen=True)
class Efficiency:
    params: tuple[float, ...]   # PARAMS order
    n: int                      # runs fitted
    sources: int                # distinct sources among them
    band: tuple[float, float]   # factors on the speed: the widest of the splits' BAND percentiles
    cv_median: float            # held out by source: median |log(measured / predicted)| (natural log)
    cv_within: float            # held out by source: share of runs within ×WITHIN
    cv_n: int                   # held out by source: runs predicted (those whose source is not their only one)
    of: int = 0                 # published runs in all, the fitted ones among them
    splits: tuple[Split, ...] = ()
    worst: tuple[Miss, ...] = ()
    bounded: int = 0            # fitted runs at an unpublished batch (one-sided)
    # each run at a published batch predicted held out by source: (run id, measured, predicted), in the
    # fit's speed (steps or prompts a second of one copy); the report's measured-against-expected figure
    held_out: tuple[tuple[str, float, float], ...] = ()
    engines: tuple[Engine, ...] = ()   # the engines with runs enough for a fit of their own
    engine: str = ""            # the engine whose fit this is ("": every engine's runs)
    shipped: bool = field(default=False, compare=False)   # read from engine_fit.json, not fitted in this run

    def inputs(self, factor: float = 1.0) -> dict[str, float]:
        """The expected-number inputs of derivations/measured.py, at a speed ``factor`` times the fit's
        (the shares times it, capped at 1; the fixed time over it)."""
        mfu, mbu, sync, pre = self.params
        return {"expected_mfu": min(1.0, mfu * factor), "expected_mbu": min(1.0, mbu * factor),
                "expected_sync_time": sync / factor, "expected_prefill_efficiency": min(1.0, pre * factor)}

    def ends(self) -> tuple[dict[str, float], dict[str, float]]:
        """The inputs at the low and the high end of the held-out range."""
        return self.inputs(self.band[0]), self.inputs(self.band[1])

    def formula(self) -> str:
        mfu, mbu, sync, pre = self.params
        return (f"step = compute/{mfu:.3g} + reads/{mbu:.3g} + collectives + layers·{sync * 1e6:.3g} µs, a prefill "
                f"at {pre:.0%} of its bound (a prompt alone: and every layer's fixed time once)")

    def for_engine(self, name: str) -> "Efficiency":
        """This model with one engine's own fit and range in place of the fit to every engine's runs;
        ValueError naming the engines that have one, if ``name`` has none."""
        for e in self.engines:
            if e.name == name:
                return replace(self, params=e.params, band=e.band, engine=name)
        known = ", ".join(e.name for e in self.engines)
        raise ValueError(f"no engine fit for {name!r}: the published runs fit one for {known} "
                         f"(an engine needs {ENGINE_RUNS} runs at a published batch)")

    def text(self) -> str:
        lo, hi = self.band
        ways = ", ".join(s.name for s in self.splits) or "source"
        own = next((e for e in self.engines if e.name == self.engine), None)
        if own is not None:
            return (f"{self.formula()}; fitted to the {own.n} published runs of {own.name} alone ({own.published} at a "
                    f"published batch) from {own.sources} sources (--set engine={own.name}); its range ×{lo:.2f}-×{hi:.2f}: "
                    f"the whole model's, or where its own runs held out by source fall, if wider")
        return (f"{self.formula()}; fitted to {self.n} of {self.of or self.n} published runs (those that "
                f"measure decode or prefill as an expected number runs it; {self.bounded} at an unpublished batch, "
                f"as a bound) from {self.sources} sources; held out by {ways}, the widest "
                f"{BAND[0]}th-{BAND[1]}th percentile ×{lo:.2f}-×{hi:.2f}")

    def as_dict(self) -> dict:
        return {"params": list(self.params), "n": self.n, "sources": self.sources, "band": list(self.band),
                "cv_median": self.cv_median, "cv_within": self.cv_within, "cv_n": self.cv_n, "of": self.of,
                "splits": [vars(s) for s in self.splits], "worst": [vars(w) for w in self.worst],
                "bounded": self.bounded, "held_out": [list(h) for h in self.held_out],
                "engines": [vars(e) for e in self.engines]}

    @classmethod
    def from_dict(cls, d: dict) -> "Efficiency":
        return cls(tuple(d["params"]), d["n"], d["sources"], tuple(d["band"]), d["cv_median"], d["cv_within"],
                   d["cv_n"], d["of"], tuple(Split(**s) for s in d["splits"]), tuple(Miss(**w) for w in d["worst"]),
                   d["bounded"], tuple((i, m, p) for i, m, p in d["held_out"]),
                   tuple(Engine(e["name"], tuple(e["params"]), e["n"], e["published"], e["sources"], tuple(e["band"]),
                                e["held_out"]) for e in d.get("engines", ())))


SPLITS = ("source", "chip", "model", "engine")
WORST = 10           # the held-out misses validate lists


def _held_out(a, labels, near) -> tuple[np.ndarray, int]:
    """log(measured / predicted) of every run with its group (``labels``) left out of the fit, NaN
    where its group is every run; and how many groups were left out. Each fit starts from ``near``,
    the fit to every run (and a fixed start where the group is most of the runs): over the 133
    held-out fits of the measurements today (by source, chip, model and engine, and each engine's
    runs by source), four fixed starts found the same minima (the held-out fits were 2/3 of a
    build's validate stage after an edit)."""
    err = np.full(len(labels), np.nan)
    groups = 0
    for g in dict.fromkeys(labels):
        held = labels == g
        if held.all() or not g:
            continue
        # most runs kept: their minimum is the fit's own, found from it alone; most left out (one
        # engine's runs are 84% of them) it can lie in another basin, so a fixed start too
        p = _fit_params({k: v[~held] for k, v in a.items()}, near, alone=held.mean() <= 0.5)
        err[held] = np.log(a["measured"][held]) - np.log(_speed(p, {k: v[held] for k, v in a.items()}))
        groups += 1
    return err, groups


def _band(errors: dict[str, np.ndarray], upper: np.ndarray) -> tuple[float, float]:
    """The printed range: each split's BAND percentiles of its held-out error at a published batch,
    the widest of them (a split that predicts worse widens it), and never excluding the fit itself."""
    lo, hi = 0.0, 0.0
    for e in errors.values():
        e = e[~np.isnan(e) & ~upper]
        if e.size:
            a, b = np.percentile(e, BAND)
            lo, hi = min(lo, a), max(hi, b)
    return math.exp(lo), math.exp(hi)


def _split(name, e, groups, upper, band) -> Split:
    lo, hi = math.log(band[0]), math.log(band[1])
    point = e[~np.isnan(e) & ~upper]
    capped = e[~np.isnan(e) & upper]
    if not point.size:
        return Split(name, groups, 0, math.nan, math.nan, math.nan, math.nan, math.nan, int(capped.size))
    a, b = np.percentile(point, BAND)
    return Split(name, groups, int(point.size), float(np.median(np.abs(point))),
                 float(np.mean(np.abs(point) <= math.log(WITHIN))),
                 float(np.mean((point >= lo - 1e-12) & (point <= hi + 1e-12))), math.exp(a), math.exp(b),
                 int(capped.size), float(np.mean(capped <= hi + 1e-12)) if capped.size else 1.0)


def _worst(runs, errors: dict[str, np.ndarray]) -> tuple[Miss, ...]:
    """The WORST runs at a published batch farthest from their held-out prediction, over every split."""
    rows = []
    for name, e in errors.items():
        for r, x in zip(runs, e):
            if not np.isnan(x) and not r.upper:
                rows.append((abs(x), Miss(r.id or r.source, r.chip, r.model, r.regime, math.exp(x), name)))
    seen, out = set(), []
    for _, m in sorted(rows, key=lambda t: -t[0]):
        if m.id not in seen:
            seen.add(m.id)
            out.append(m)
    return tuple(out[:WORST])


def _by_source(runs, e: np.ndarray) -> tuple[tuple[str, float, float], ...]:
    """(id, measured, predicted) of each run at a published batch that the by-source split predicted:
    the prediction is measured / exp(error), the very number the split scored."""
    return tuple((r.id or r.source, r.measured, r.measured / math.exp(x))
                 for r, x in zip(runs, e) if not np.isnan(x) and not r.upper)


def fit(runs: list[Run], of: int = 0, splits: tuple[str, ...] = SPLITS) -> Efficiency:
    """The fit, and its error with each source (chip, model, engine) held out in turn."""
    if sum(not r.upper for r in runs) < 6:
        raise ValueError(f"too few published runs to fit an efficiency ({len(runs)}; at least 6)")
    a = _arrays(runs)
    upper = a["upper"] > 0
    params = _fit_params(a)
    errors, groups = {}, {}
    for name in dict.fromkeys(("source", *splits)):
        errors[name], groups[name] = _held_out(a, np.array([getattr(r, name) for r in runs], dtype=object), params)
    band = _band(errors, upper)
    scores = tuple(_split(n, errors[n], groups[n], upper, band) for n in errors)
    src = scores[0]
    return Efficiency(tuple(float(p) for p in params), len(runs), len({r.source for r in runs}), band,
                      src.median, src.within, src.n, of or len(runs), scores, _worst(runs, errors),
                      int(upper.sum()), _by_source(runs, errors["source"]), _engines(runs, a, params, band))


ENGINE_RUNS = 10   # runs at a published batch an engine needs for a fit of its own


def _engines(runs, a, params, band) -> tuple[Engine, ...]:
    """Each engine with ENGINE_RUNS runs at a published batch, fitted to its runs alone. Its range is
    the whole model's, widened to the BAND percentiles of its own runs predicted with their source
    left out (fitted to the engine's other sources): never narrower than either says."""
    upper = a["upper"] > 0
    names = np.array([r.engine for r in runs], dtype=object)
    out = []
    for name in sorted({r.engine for r in runs if r.engine}):
        mine = names == name
        if (mine & ~upper).sum() < ENGINE_RUNS or mine.all():
            continue
        own = {k: v[mine] for k, v in a.items()}
        p = _fit_params(own, params)
        sources = np.array([r.source for r, m in zip(runs, mine) if m], dtype=object)
        err, _ = _held_out(own, sources, p)
        own_upper = own["upper"] > 0
        lo, hi = _band({"source": err}, own_upper)
        out.append(Engine(name, tuple(float(x) for x in p), int(mine.sum()), int((mine & ~upper).sum()),
                          len(set(sources)), (min(lo, band[0]), max(hi, band[1])),
                          int((~np.isnan(err) & ~own_upper).sum())))
    return tuple(out)


# -- the shipped fit --------------------------------------------------------------------------
# The held-out fits take a second or more; a build reads the fit shipped in engine_fit.json beside
# this file (data, written by `python3 -m chalkboard.validation --ship`) where its key (this file and
# every run's numbers) matches, and fits afresh where it does not.
SHIPPED = Path(__file__).with_name("engine_fit.json")


def key(runs: list[Run], of: int) -> str:
    import hashlib
    h = hashlib.sha256(Path(__file__).read_bytes())
    for r in runs:
        h.update(repr(tuple(f"{x:.9g}" if isinstance(x, float) else str(x) for x in vars(r).values())).encode())
    h.update(str(of).encode())
    return h.hexdigest()[:32]


def shipped_or_fit(runs: list[Run], of: int = 0) -> Efficiency:
    """The fit shipped with the project where it was made from these very runs, else a fresh one."""
    import json
    try:
        shipped = json.loads(SHIPPED.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        shipped = {}
    if shipped.get("key") == key(runs, of):
        return replace(Efficiency.from_dict(shipped["fit"]), shipped=True)
    return fit(runs, of)


def ship_text(runs: list[Run], of: int = 0) -> str:
    """engine_fit.json's text (SHIPPED): the fit of ``runs`` and its key."""
    import json
    return json.dumps({"key": key(runs, of), "fit": fit(runs, of).as_dict()}, indent=1) + "\n"