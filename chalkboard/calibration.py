"""The efficiency an expected number assumes: one smooth function fitted to the published runs.

Each published measurement in measurements.yaml has an efficiency e (its speed over the speed the
strict bound allows, `validate`). Where a set-up sits on the roofline is x = log10(compute time /
memory time) of its strict bound: negative when memory-bound, positive when compute-bound, 0 at the
balance batch. The fit is least squares on log e:

    log e = θ0 + θ1·min(x, 0) + θ2·max(x, 0) + θ3·[MoE]

a line on each side of the balance point that meet there (continuous in the batch and the context:
no jump between regimes), and a constant factor for a mixture of experts (its uniform-routing step
sits above the strict bound). The prediction is capped at 1: no run beats its bound.

Its spread is honest: each source (a benchmark page, an MLPerf round's logs) is left out in turn,
the fit is made without it and the left-out runs are predicted. The 10th and 90th percentiles of
those errors are the range every expected number carries; `validate` prints the median error and
the share within a factor of 1.5.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import sympy as sp

BAND = (10, 90)      # percentiles of the cross-validated error an expected number's range spans
WITHIN = 1.5         # the factor validate counts held-out runs within
TERMS = ("θ0 (intercept)", "θ1 (memory-bound slope)", "θ2 (compute-bound slope)", "θ3 (mixture of experts)")


# The fit written once, in SymPy: the design's columns, where a set-up sits and the capped
# prediction are these expressions, evaluated here with numpy and printed as JavaScript for the
# report's explorer (which evaluates an expected number in the page).
X, MOE, COMPUTE, MEMORY, E, FACTOR = sp.symbols("x moe compute memory e factor", real=True)
FEATURES = (sp.Integer(1), sp.Min(X, 0), sp.Max(X, 0), MOE)
POSITION = sp.log(COMPUTE / MEMORY, 10)      # x: where a set-up sits on the roofline
AT_END = sp.Min(1, E * FACTOR)               # the efficiency at one end of its range: e times a band factor, capped
# the strict bound's terms (quantity names) that place a set-up: compute, and memory (summed)
COMPUTE_TERMS = ("compute_time",)
MEMORY_TERMS = ("weight_fetch_time_min", "kv_fetch_time")
_NUMPY = [{"Min": np.minimum, "Max": np.maximum}, "numpy"]   # elementwise, for floats and arrays alike


@lru_cache(maxsize=None)
def _numpy(args: tuple, expr):
    """``expr`` as a numpy function of ``args``, made on first use (lambdify's numpy namespace
    imports parts of numpy that read the environment: not at import)."""
    return sp.lambdify(list(args), expr, _NUMPY)


def position(compute, memory):
    """``POSITION``, x, of strict-bound terms ``compute`` and ``memory`` (seconds; floats or arrays)."""
    return _numpy((COMPUTE, MEMORY), POSITION)(compute, memory)


def at_end(e, factor):
    """``AT_END`` of floats or arrays."""
    return _numpy((E, FACTOR), AT_END)(e, factor)


@lru_cache(maxsize=8)
def _predictor(model):
    """``model.expression()`` as a numpy function of (x, moe), made once per fit."""
    return _numpy((X, MOE), model.expression())


def _design(x, moe) -> np.ndarray:
    x, moe = np.asarray(x, float), np.asarray(moe, float)
    columns = _numpy((X, MOE), sp.Tuple(*FEATURES))(x, moe)
    return np.column_stack([np.broadcast_to(np.asarray(c, float), x.shape) for c in columns])


@dataclass(frozen=True)
class Efficiency:
    theta: tuple[float, ...]
    n: int                      # runs fitted
    sources: int                # distinct sources among them
    band: tuple[float, float]   # factors on e at the BAND percentiles of the held-out error
    cv_median: float            # median |log(measured / predicted)| held out (natural log)
    cv_within: float            # share of held-out runs within ×WITHIN
    cv_n: int                   # runs predicted held out (those whose source is not their only one)
    of: int = 0                 # published runs in all, the fitted ones among them

    def expression(self):
        """The prediction as a SymPy expression in ``X`` and ``MOE``: exp of the fitted line, capped at 1."""
        return sp.Min(1, sp.exp(sum(sp.Float(t, precision=53) * f for t, f in zip(self.theta, FEATURES))))

    def predict(self, compute, memory, dense):
        """e for strict-bound terms ``compute`` and ``memory`` (seconds; floats or arrays)."""
        x = position(np.asarray(compute, float), np.asarray(memory, float))
        moe = np.broadcast_to(1.0 - np.asarray(dense, float), np.shape(x))
        e = _predictor(self)(x, moe)
        return float(e) if np.ndim(x) == 0 else np.asarray(e, float)

    def text(self) -> str:
        lo, hi = self.band
        return (f"log e = {self.theta[0]:.3f} {self.theta[1]:+.3f}·min(x, 0) {self.theta[2]:+.3f}·max(x, 0) "
                f"{self.theta[3]:+.3f}·[MoE], x = log10(compute/memory time of the strict bound); fitted to "
                f"{self.n} of {self.of or self.n} published runs (those measuring decode at a known batch, "
                f"without speculative decoding) from {self.sources} sources; held out by source, "
                f"{BAND[0]}th-{BAND[1]}th percentile ×{lo:.2f}-×{hi:.2f}")


def fit(x, moe, log_e, source, of: int = 0) -> Efficiency:
    """The fit, and its error with each source held out."""
    x, moe, y = (np.asarray(a, float) for a in (x, moe, log_e))
    source = np.asarray(source, dtype=object)
    if y.size < 5:
        raise ValueError(f"too few published runs to fit an efficiency ({y.size}; at least 5)")
    X = _design(x, moe)
    theta = np.linalg.lstsq(X, y, rcond=None)[0]
    errors = []
    for s in dict.fromkeys(source):
        held = source == s
        if held.all():
            continue
        t = np.linalg.lstsq(X[~held], y[~held], rcond=None)[0]
        pred = np.minimum(X[held] @ t, 0.0)        # capped at e = 1, as predict does
        errors.extend(y[held] - pred)
    err = np.array(errors)
    lo, hi = np.percentile(err, BAND)
    return Efficiency(tuple(float(t) for t in theta), int(y.size), len(set(source)),
                      (math.exp(lo), math.exp(hi)), float(np.median(np.abs(err))),
                      float(np.mean(np.abs(err) <= math.log(WITHIN))), int(err.size), of or int(y.size))
