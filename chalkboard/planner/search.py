"""The search: every chip x weight format x layout x batch, evaluated in one vectorised pass per
chip and format, with the fit and the targets as masks."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from derivations import REGISTRY
from derivations.rules import expert_chips
from units import Quantity

from ..errors import InputError, MissingInput
from ..evaluation.evaluate import Scenario
from ..evaluation.regimes import REGIMES, regime_index

# The batches searched: every eighth of a doubling from 1 to 65,536 sequences, whole numbers.
BATCHES = np.unique(np.round(2.0 ** (np.arange(0, 16 * 8 + 1) / 8)))
# What this search does not cover yet, said with every answer.
LEFT_OUT = (
    "copies larger than one scale-up domain (tensor or expert parallelism over the scale-out network) and "
    "pipeline stages (pp = 1): their traffic crosses the scale-out network, which not every chip publishes",
    "queueing: the time to first token is one prompt's prefill alone on the layout "
    "(time_to_first_token_layout), as if no other prompt or step waited",
    "weight formats other than those given with --formats (default: the model's own)",
)
# (quantity, unit shown) read for every candidate; the expected ones after the efficiencies are known
BOUND = {"step_time_layout": "ms", "user_speed_layout": "token/s/sequence", "hbm_fill_layout": "",
         "cost_per_token_layout": "USD/Mtoken", "compute_time": "s", "weight_fetch_time_min": "s",
         "kv_fetch_time": "s"}
EXPECTED = {"step_time_expected_layout": "ms", "user_speed_expected_layout": "token/s/sequence",
            "cost_per_token_expected_layout": "USD/Mtoken"}
TTFT = "time_to_first_token_layout"


@dataclass
class Targets:
    """What the deployment must meet; ``by`` names which numbers judge it: "expected" (the bound
    at the efficiencies published measurements reach in its regime) or "bound"."""
    context: float | None             # tokens; None: the workload's default context
    min_tokens_per_user: float
    max_ttft: float | None = None      # seconds
    prompt: float | None = None        # tokens of the prompt the TTFT is for (default: the context)
    by: str = "expected"


@dataclass
class Search:
    model: str
    targets: Targets
    columns: dict = field(default_factory=dict)   # name -> numpy array over every candidate
    chips: dict = field(default_factory=dict)     # hardware id -> why it was not searched, or ""
    efficiencies: dict = field(default_factory=dict)
    searched: int = 0


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def layouts(sc: Scenario) -> list[dict]:
    """The layouts of one copy within the chip's scale-up domain (capped at a rack): a dense model
    tensor-parallel over any number of chips its query heads divide; a mixture of experts on n
    chips (each power of two up to the domain, and the domain), expert-parallel over the largest
    divisor of its experts that fits, its attention tensor-parallel by tp and data-parallel by n / tp."""
    domain, heads = int(sc.mag("chips")), int(sc.mag("n_heads"))
    if sc.is_dense:
        return [{"tp": t, "dp_attention": 1, "ep": 1, "pp": 1, "chips": t}
                for t in _divisors(heads) if t <= domain]
    experts = int(sc.mag("experts"))
    sizes = sorted({2 ** i for i in range(domain.bit_length()) if 2 ** i <= domain} | {domain})
    return [{"tp": t, "dp_attention": n // t, "ep": int(expert_chips(experts, n)), "pp": 1, "chips": n}
            for n in sizes for t in _divisors(heads) if n % t == 0]


def _sweep(sc: Scenario, names: dict, axes: dict) -> dict:
    """Each quantity over the candidates in the unit shown; NaN where it cannot be evaluated (a
    price not published)."""
    out = {}
    for name, unit in names.items():
        try:
            v = sc.sweep_many([name], {k: (a, None) for k, a in axes.items()})[name]
        except MissingInput:
            v = np.full(next(iter(axes.values())).shape, np.nan)
        out[name] = v * Quantity(1, REGISTRY[name].unit or "").to(unit or "").magnitude
    return out


def plan(data, model: str, hardware: list[str], targets: Targets, formats: list[str] | None = None,
         evidence=None, sets: dict | None = None) -> Search:
    """Evaluate every candidate of every chip in ``hardware``: the bound, the expected numbers (with
    the published measurements' efficiency of each candidate's regime, from ``evidence``) and the
    time to first token."""
    if targets.by not in ("expected", "bound"):
        raise InputError(f"--by {targets.by}: expected 'expected' or 'bound'")
    if targets.by == "expected" and evidence is None:
        raise InputError("--by expected needs the published measurements (measurements.yaml): "
                         "give --by bound to judge by the bound alone")
    stats = evidence() if evidence is not None else {}
    eff = np.array([stats.get(g, {}).get("median", np.nan) if stats.get(g, {}).get("n") else np.nan
                    for g in REGIMES])
    res = Search(model, targets, efficiencies={g: (None if np.isnan(e) else float(e)) for g, e in zip(REGIMES, eff)})
    if targets.context is None:   # the workload's default, as eval would take it
        targets.context = float(Scenario(data, hardware[0], model, dict(sets or {})).mag("context"))
    prompt = targets.prompt or targets.context

    def inputs(fmt):
        base = {**(sets or {}), "context": repr(float(targets.context)), "pass_tokens": repr(float(prompt))}
        return {**base, "weight_format": fmt} if fmt else base

    for fmt in formats or [None]:   # the user's own inputs, checked once: a bad one is an error, not a chip's verdict
        Scenario(data, hardware[0], model, inputs(fmt))
    cols: dict[str, list] = {}
    for hw in hardware:
        for fmt in formats or [None]:
            try:
                sc = Scenario(data, hw, model, inputs(fmt))
                lays = layouts(sc)
            except (MissingInput, InputError) as e:
                res.chips[hw] = str(e)
                continue
            if evidence is not None:
                sc.evidence = evidence
            grid = {k: np.repeat([float(x[k]) for x in lays], len(BATCHES)) for k in lays[0]}
            grid["batch"] = np.tile(BATCHES, len(lays))
            vals = _sweep(sc, BOUND, grid)
            idx = regime_index(vals["compute_time"], vals["weight_fetch_time_min"] + vals["kv_fetch_time"],
                               grid["batch"])
            e = eff[idx]
            if evidence is not None:
                vals.update(_sweep(sc, EXPECTED, {**grid, "expected_mfu": e, "expected_mbu": e}))
            one = {k: np.array([float(x[k]) for x in lays]) for k in lays[0]}
            ttft = _sweep(sc, {TTFT: "s"}, {**one, "batch": np.ones(len(lays))})[TTFT]
            vals[TTFT] = np.repeat(ttft, len(BATCHES))
            vals["efficiency"] = e
            n = grid["batch"].size
            meta = {"hardware": np.full(n, hw, dtype=object),
                    "weight_format": np.full(n, sc.format, dtype=object),
                    "compute_format": np.full(n, sc.compute_format or "", dtype=object)}
            for k, v in {**meta, **grid, **vals}.items():
                cols.setdefault(k, []).append(v)
            res.chips.setdefault(hw, "")
            res.searched += n
    res.columns = {k: np.concatenate(v) for k, v in cols.items()}
    return res
