"""Whole workers within a GPU budget (`plan --total-gpus N`): xPyD, x prefill workers and y decode
workers, each with its own layout and batch, rate-matched.

At the offered load the decode workers are full: y workers at batch B finish y·B·v/output requests
a second (v each sequence's speed). Those prompts go to x prefill workers, each batching b prompts
(b·prompt within its token budget, at least one) in a pass of prefill_time_layout: it serves b per
pass, so its load is prefill_load = (requests a second) · pass / (x·b). The first token waits in that
queue (derivations/disaggregation.py's prefill_queue_wait, an M/D/1 queue), then its pass, then the
KV cache's transfer: time_to_first_token_queued, evaluated here from its own compiled definition.
For each decode candidate the cheapest (x, y, prefill layout, b) within the budget that meets the
time to first token is kept; where none meets it, the one with the shortest.
"""
from __future__ import annotations

import numpy as np

from derivations import REGISTRY
from units import parse

from ..evaluation import compiled
from ..evaluation.fit import within

# A prefill worker batches prompts up to this many tokens a pass, and an in-flight step carries as many:
# the engine's token budget a step, as declared with its source (derivations/disaggregation.py)
TOKEN_BUDGET = int(parse(REGISTRY["step_token_budget"].default).to("token").magnitude)
PREFILL_BATCHES = (1, 2, 4, 8, 16)
# the most workers of one kind enumerated (a budget of thousands of chips is searched up to this)
MOST = 64
DEGREES = ("tp", "dp_attention", "ep", "pp", "chips", "batch")


def prefill_batches(prompt: float) -> list[int]:
    """The prompts a prefill worker batches a pass: powers of two whose tokens fit the budget, or one
    (a longer prompt is read in chunks of the budget, the same compute)."""
    return [b for b in PREFILL_BATCHES if b == 1 or b * prompt <= TOKEN_BUDGET]


def _queued_ttft(sc, load, t_pass, batch, t_kv):
    """time_to_first_token_queued (s) over arrays, through the declared definitions."""
    known = {"prefill_load": load, "prefill_time_layout": t_pass, "batch": batch, "kv_transfer_time": t_kv}

    def value(name):
        if name in known:
            return known[name]
        if name not in ("prefill_queue_wait", "time_to_first_token_queued"):
            return sc.base_value(name)   # a constant (one sequence)
        fn, args = compiled.array(name)
        with np.errstate(all="ignore"):
            return fn(*[value(a) for a in args])

    w = value("prefill_queue_wait")
    w = np.where((load < 1) & (w >= 0), w, np.nan)   # at full load the queue never empties
    known["prefill_queue_wait"] = w
    return value("time_to_first_token_queued")


def match(sc, n_gpus: int, dec: dict, pre: dict, max_ttft: float | None) -> dict:
    """For each decode candidate (arrays in ``dec``: chips, rate = requests a second one worker
    finishes, fits), the best xPyD with the prefill candidates in ``pre`` (chips, t_pass in s, batch,
    t_kv in s, fits): arrays of x, y, the prefill candidate's index, its load, the time to first token
    and the chips used (0 where no whole deployment fits the budget)."""
    n_d = dec["chips"].size
    best = {k: np.zeros(n_d) for k in ("x", "y", "pre", "load", "ttft", "used")}
    best["ttft"][:] = np.nan
    score = np.full(n_d, np.inf)           # chips per decode chip, among those that meet the target
    quick = np.full(n_d, np.inf)           # the shortest first token, where none meets the target
    s_d, s_p = dec["chips"][:, None], pre["chips"][None, :]
    ok_both = dec["fits"][:, None] & pre["fits"][None, :]
    for y in range(1, min(MOST, n_gpus // int(dec["chips"].min())) + 1):
        rate = y * dec["rate"][:, None]
        for x in range(1, min(MOST, n_gpus // int(pre["chips"].min())) + 1):
            used = x * s_p + y * s_d
            load = rate * pre["t_pass"][None, :] / (x * pre["batch"][None, :])
            ok = ok_both & (used <= n_gpus) & (load < 1)
            if not ok.any():
                continue
            ttft = _queued_ttft(sc, load, pre["t_pass"][None, :], pre["batch"][None, :], pre["t_kv"][None, :])
            ok &= np.isfinite(ttft)
            meets = ok & (ttft <= max_ttft) if max_ttft is not None else ok
            ratio = np.where(meets, used / (y * s_d), np.inf)   # the cost grows with the chips per decode chip
            ratio = ratio + 1e-9 * np.nan_to_num(ttft, nan=0)   # at equal chips, the quicker first token
            j = np.argmin(ratio, axis=1)
            r = ratio[np.arange(n_d), j]
            t_any = np.where(ok, ttft, np.inf)
            jq = np.argmin(t_any, axis=1)
            tq = t_any[np.arange(n_d), jq]
            take = r < score
            slow = ~np.isfinite(score) & ~np.isfinite(r) & (tq < quick)
            for pick, jj in ((take, j), (slow, jq)):
                rows = np.flatnonzero(pick)
                best["x"][rows], best["y"][rows], best["pre"][rows] = x, y, jj[rows]
                best["load"][rows] = load[rows, jj[rows]]
                best["ttft"][rows] = ttft[rows, jj[rows]]
                best["used"][rows] = used[rows, jj[rows]]
            score = np.where(take, r, score)
            quick = np.where(slow, tq, quick)
    best["meets"] = np.isfinite(score)
    return best


def budget(sc, way: str, row: dict, vals: dict, lays: list[dict], targets, prompt: float, sweep) -> None:
    """Recast one chip and format's candidates of deployment ``way`` as whole workers within
    targets.total_gpus, in place: colocated or in-flight, as many copies as the budget holds; disaggregated, the
    best xPyD for each decode candidate (its cost the decode worker's times the chips per decode chip)."""
    n_gpus, share = targets.total_gpus, row["memory_share"]
    n = row["chips"].size
    if way in ("colocated", "in-flight"):
        row["copies"] = n_gpus // row["chips"]
        row["within"] = row["copies"] >= 1
        for k in ("prefill_workers", "prefill_load", *("prefill_" + k for k in DEGREES)):
            row[k] = np.zeros(n)   # no prefill workers of their own
        return
    bs = prefill_batches(prompt)
    grid = {k: np.repeat([float(x[k]) for x in lays], len(bs)) for k in lays[0]}
    grid["batch"] = np.tile(np.array(bs, dtype=float), len(lays))
    pv = sweep(sc, {"prefill_time_layout": "s", "kv_transfer_time": "s", "hbm_fill_layout": ""}, grid)
    pre = {"chips": grid["chips"], "t_pass": pv["prefill_time_layout"], "batch": grid["batch"],
           "t_kv": pv["kv_transfer_time"], "fits": within(pv["hbm_fill_layout"], share[0])}
    # requests a second one decode worker finishes: its batch, each sequence at its speed, over the answer
    dec = {"chips": row["chips"], "rate": row["batch"] * row[f"speed_{targets.by}"] / targets.output,
           "fits": within(row["hbm_fill_layout"], share)}
    m = match(sc, n_gpus, dec, pre, targets.max_ttft)
    per_decode_chip = m["used"] / np.where(m["y"] > 0, m["y"] * row["chips"], np.nan)
    decode_cost = {"cost_bound": vals["cost_per_token_layout"]}
    for end in ("", "_low", "_high"):
        if "cost_per_token_expected_layout" + end in vals:
            decode_cost["cost_expected" + end] = vals["cost_per_token_expected_layout" + end]
    for col in ("cost_bound", "cost_expected", "cost_expected_low", "cost_expected_high"):
        row[col] = decode_cost[col] * per_decode_chip if col in decode_cost else np.full(n, np.nan)
    j = m["pre"].astype(int)
    row["ttft"] = m["ttft"]
    row["pool_ratio"] = per_decode_chip - 1
    row["within"] = m["used"] > 0
    row["copies"] = m["y"]
    row["prefill_workers"] = m["x"]
    row["prefill_load"] = m["load"]
    for k in DEGREES:
        row["prefill_" + k] = grid[k][j]
