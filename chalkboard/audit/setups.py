"""A claim judged on its set-ups: each chip x model entry of its scope (same silicon counted once,
announced parts and set-ups that do not fit shown but not counted), evaluated as a Scenario with the
claim's settings, judged part by part; and the variants (context, batch, number format, chip set,
spec-sheet readings) that may flip the verdict, each judged the same way. Apart from verdicts.py,
which writes a verdict's evidence and its sentence from what these return."""
from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass

import sympy as sp

from derivations import REGISTRY

from ..errors import InputError, MissingInput

from ..evaluation.evaluate import Scenario
from ..evaluation.walk import walk
from ..typeset.fmt import sig

from .rules import (unit_suffix, BATCHES, CONTEXTS, FAILS, FORMATS, GIB_PER_GB, HOLDS, judge, judge_rule, ROUGHLY,
                    SPARSE_HEADLINE_FACTOR)
from .scope import serving_scope
from .claims import expand, Claim, Part


def claim_scenario(ctx, claim: Claim, hid: str, mid: str, extra: dict | None = None, tweak=None) -> Scenario:
    data = ctx.data
    sc = Scenario(data, hid, mid, {**serving_scope(ctx.chips, data, hid, mid, claim, extra), **claim.set, **(extra or {})})
    for name, text in claim.given.items():
        sc.fix(name, text)
    if tweak is not None:
        tweak(sc, hid)
    return sc


def eval_expr(sc: Scenario, expr) -> object:
    return walk(expr, lambda s: sc.value(REGISTRY.q(s).name), where="claim")


@dataclass
class Entry:
    key: str
    hardware: str
    model: str
    reference: tuple | None = None     # (hardware, model) of a ratio's denominator
    counted: bool = True
    mark: str | None = None            # "announced", "same silicon as X, counted once"
    group: str | None = None           # the same-silicon group's counted chip, if any


def entries_of(ctx, claim: Claim, hardware: list[str] | None = None) -> list[Entry]:
    hw = list(hardware if hardware is not None else claim.hardware)
    models = claim.models
    rel = claim.relative_to or {}
    out = []
    pairs = []
    if rel.get("hardware") == "previous":
        for prev, h in zip(hw, hw[1:]):
            for m in models:
                pairs.append((f"{h} / {prev}", h, m, (prev, rel.get("model", m))))
    else:
        for h in hw:
            for m in models:
                key = h if len(models) == 1 else (m if len(hw) == 1 else f"{h} × {m}")
                ref = (rel.get("hardware", h), rel.get("model", m)) if rel else None
                pairs.append((key, h, m, ref))
    for key, h, m, ref in pairs:
        e = Entry(key, h, m, ref)
        if rel.get("hardware") != "previous":
            e.group = ctx.chips.group_of(h)
        out.append(e)
    mark(ctx, out, {e.key: 1.0 for e in out})
    return out


def mark(ctx, entries: list[Entry], vals: dict) -> None:
    """Count one entry per distinct chip among those evaluated: of a same-silicon group, its
    representative if it has a value, else the first member that does."""
    chosen = {}     # (group, model) -> the entry counted: same silicon counts once per model
    for e in entries:
        if e.group is not None and e.key in vals:
            if (e.group, e.model) not in chosen or e.hardware == e.group:
                chosen[e.group, e.model] = e
    unfit = getattr(ctx, "unfit", None) or {}
    for e in entries:
        e.counted, e.mark = True, None
        if e.key in unfit:   # a set-up that does not fit in HBM is shown, never the deciding case
            e.counted, e.mark = False, "does not fit in HBM, not counted"
        elif e.group is not None and e.key in vals and chosen.get((e.group, e.model)) is not e:
            other = chosen[e.group, e.model]
            e.counted, e.mark = False, f"same silicon as {other.hardware}, counted once"
        elif e.hardware in ctx.chips.announced:   # shown, not counted: not a shipping part
            e.counted, e.mark = False, "announced, not counted"
    if not any(e.counted for e in entries if e.key in vals):   # a claim about announced parts alone
        for e in entries:
            if e.hardware in ctx.chips.announced and e.key not in unfit:
                e.counted, e.mark = True, "announced"


def _value(ctx, claim: Claim, part: Part, e: Entry, extra=None, tweak=None) -> float:
    if ctx.values is None:
        return _computed(ctx, claim, part, e, extra, tweak)
    # kept by the edit loop under what it read: after an edit to one chip, a rule of thumb over
    # every chip evaluates that chip's entries again, not every entry (chalkboard/cache/incremental.py)
    key = (claim.parts.index(part), e.hardware, e.model, e.reference, repr(sorted((extra or {}).items())),
           None if tweak is None else tweak.__qualname__)
    return ctx.values(key, lambda data: _computed(Ctx(data, ctx.chips), claim, part, e, extra, tweak))


def _computed(ctx, claim: Claim, part: Part, e: Entry, extra=None, tweak=None) -> float:
    sc = claim_scenario(ctx, claim, e.hardware, e.model, extra, tweak)
    q = eval_expr(sc, part.expr)
    if e.reference is not None:
        rh, rm = e.reference
        rel_set = (claim.relative_to or {}).get("set") or {}
        rsc = claim_scenario(ctx, claim, rh, rm, {**(extra or {}), **rel_set}, tweak)
        q = q / eval_expr(rsc, part.expr)
    return float(q.to(part.unit).magnitude)


class Ctx:
    def __init__(self, data, chips, values=None):
        self.data, self.chips = data, chips
        self.unfit = {}     # entry key -> why its set-up does not fit in HBM (while judging the base case)
        self.values = values   # (key, compute(data)) -> a value kept under what it read, or None


def judge_entries(claim: Claim, part: Part, vals: dict, entries: list[Entry]):
    """(verdict, summary) for one part over its evaluated entries."""
    counted = [vals[e.key] for e in entries if e.key in vals and e.counted]
    if not counted:
        return None, None
    args = (part.low, part.high, part.tolerance, part.band, part.compare)
    if len(counted) == 1:
        return judge(counted[0], *args), counted[0]
    verdict, med, _ = judge_rule(counted, *args)
    return verdict, med


def evaluate_part(ctx, claim, part, entries, extra=None, tweak=None):
    vals, skipped = {}, {}
    for e in entries:
        try:
            vals[e.key] = _value(ctx, claim, part, e, extra, tweak)
        except (MissingInput, InputError) as err:
            skipped[e.key] = str(err)
    mark(ctx, entries, vals)
    return vals, skipped


def worst(verdicts):
    order = {HOLDS: 0, ROUGHLY: 1, FAILS: 2}
    vs = [v for v in verdicts if v is not None]
    return max(vs, key=order.get) if vs else None


def _overall(ctx, claim, entries, extra=None, tweak=None):
    """The claim's verdict (all parts) for a variant, or None when nothing evaluates."""
    out = []
    for part in claim.parts:
        vals, _ = evaluate_part(ctx, claim, part, entries, extra, tweak)
        v, _ = judge_entries(claim, part, vals, entries)
        if v is None:
            return None, None
        out.append((v, vals))
    return worst([v for v, _ in out]), out


def leaves_of(claim: Claim) -> set[str]:
    names = set()
    for part in claim.parts:
        for s in part.expr.free_symbols:
            names.add(REGISTRY.q(s).name)
    leaves = set()
    for n in names - set(claim.given):
        leaves |= {q.name for q in REGISTRY.leaves(n)} if not REGISTRY[n].is_input else {n}
    return leaves


def claim_depends_on(claim: Claim, names) -> bool:
    """Whether a part's value still depends on any of ``names`` once common factors cancel
    (a ratio of two KV reads does not depend on the batch)."""
    for part in claim.parts:
        free = REGISTRY.kept(("claim part inputs", str(part.expr), tuple(sorted(claim.given))),
                             lambda: _free_names(part.expr, claim.given))
        if set(names) & free:
            return True
    return False


def _free_names(expr, given) -> frozenset:
    """The quantities an expression still depends on once common factors cancel."""
    e = expand(expr).xreplace({REGISTRY[k].sym: sp.Symbol(k + "_given", positive=True) for k in given})
    try:
        free = e.free_symbols if e.has(sp.Max, sp.Min, sp.floor) else sp.cancel(e).free_symbols
    except Exception:
        free = e.free_symbols
    return frozenset(REGISTRY.q(s).name for s in free if s in REGISTRY.by_symbol)


def _gib_flip(sc, hid):
    """Read the chip's HBM capacity in the other binary/decimal unit than its source wrote."""
    text = sc.data.hardware[hid].values["hbm_capacity"].text
    cap = sc.input("hbm_capacity")
    sc.fix("hbm_capacity", cap / GIB_PER_GB if "GiB" in text else cap * GIB_PER_GB)


def _sparse(sc, hid):
    sc.fix("peak_flops", sc.input("peak_flops") * SPARSE_HEADLINE_FACTOR)


def _variants(ctx, claim: Claim, entries: list[Entry]):
    """(label, extra overrides, tweak, hardware list or None) that may move the verdict."""
    leaves = leaves_of(claim)
    base = claim_scenario(ctx, claim, entries[0].hardware, entries[0].model)
    out = []

    def current(name):
        try:
            return base.value(name).magnitude
        except (MissingInput, InputError):
            return None
    # what the claim fixes or sets is the sentence's own premise (a ratio of two contexts, "a batch of
    # 2,000"), never swept, as a format the claim sets is not
    pinned = set(claim.given) | set(claim.set) | set(((claim.relative_to or {}).get("set") or {}))
    if "context" in leaves and "context" not in pinned:
        now = current("context")
        for L in CONTEXTS:
            if now is None or abs(L - now) > 0.5:
                out.append((f"context {L:,} tokens", {"context": f"{L} token/sequence"}, None, None))
    if "batch" in leaves and "batch" not in pinned:
        now = current("batch")
        for b in BATCHES:
            if now is None or abs(b - now) > 0.5:
                out.append((f"batch {b:,}", {"batch": f"{b} sequence"}, None, None))
    if {"peak_flops", "bytes_per_weight"} & leaves and "format" not in claim.set:
        have = set()
        for e in entries:
            have |= {f for f in FORMATS if f"flops_{f}" in ctx.data.hardware[e.hardware].values}
        for f in FORMATS:
            if f in have:
                out.append((f"format {f}" + (" (chips with that rate)" if len(entries) > 1 else ""), {"format": f}, None, None))
    if ("bytes_per_kv_number" in leaves or "kv_bytes_per_token" in leaves) and "kv_format" not in pinned:
        out.append(("KV cache in fp8", {"kv_format": "fp8"}, None, None))
    if "bytes_per_activation" in leaves and "bytes_per_activation" not in pinned:
        out.append(("fp8 activations in the all-to-all (1 byte)", {"bytes_per_activation": "1 byte"}, None, None))
    if "hbm_capacity" in leaves:
        out.append(("HBM capacity read as GiB for GB (or back)", {}, _gib_flip, None))
    if "peak_flops" in leaves:
        out.append(("2:4-sparse headline FLOP/s instead of dense", {}, _sparse, None))
    multi = sum(1 for e in entries if e.counted) > 1
    if multi and claim.relative_to is None or (multi and (claim.relative_to or {}).get("hardware") != "previous"):
        present = set(claim.hardware)
        if claim.scope_name != "nvidia" and any(ctx.data.hardware[h].tags.get("vendor") != "NVIDIA" for h in present):
            out.append(("NVIDIA chips only", {}, None,
                        [h for h in claim.hardware if ctx.data.hardware[h].tags.get("vendor") == "NVIDIA"]))
        if claim.scope_name not in ("all", "named chips"):
            out.append(("every chip in hardware.yaml", {}, None, list(ctx.data.hardware)))
        if any(h in ctx.chips.announced for h in present):
            out.append(("without announced parts", {}, None, [h for h in claim.hardware if h not in ctx.chips.announced]))
    for h in claim.also_on:
        out.append((f"on {h}", {}, None, [h]))
    for ch in claim.choices:   # the sentence's own other values, named in claims.yaml
        out.append((f"choice {ch['label']}", ch["set"], None, None))
    # a claim judged on one model: the same sentence on every published model of the catalogue (shown,
    # not a reasonable choice by itself: many sentences name their model)
    if len(claim.models) <= 1 and claim.relative_to is None and any(
            REGISTRY[n].origin == "model" for n in leaves if n in REGISTRY.quantities):
        models = [m for m, md in ctx.data.models.items() if "illustrative" not in (getattr(md, "name", "") or "")]
        if len(models) > 1:
            out.append(("every model in models.yaml", {}, None, None, models))
    return out


def sweep_entries(ctx, claim: Claim, entries: list[Entry], verdict: str, base_vals: list[dict], swept: list | None = None,
                  sizes: list | None = None):
    """What each variant does to the verdict: the flips, the moves that do not flip it and the turns
    (label, verdict); `swept`, when given, collects every variant tried, flipping or not; `sizes`, when
    given, each variant's value of every part, (label, [value per part]), and each model's own under
    the variant over the catalogue's models (an error is sized over them)."""
    flips, moves, turns = [], [], []    # turns: (label, verdict) of each flip
    part0 = claim.parts[0]
    base_key = next((e.key for e in entries if e.counted and e.key in base_vals[0]), None)
    for label, extra, tweak, hw, *models in _variants(ctx, claim, entries):
        judged = dataclasses.replace(claim, models=models[0]) if models else claim
        ents = entries if hw is None and not models else entries_of(ctx, judged, hw)
        try:
            v, per_part = _overall(ctx, judged, ents, extra, tweak)
        except (MissingInput, InputError):
            continue
        if v is None:
            continue
        vals = per_part[0][1]
        counted = [vals[e.key] for e in ents if e.counted and e.key in vals]
        shown = (sig(counted[0]) if len(counted) == 1 else f"median {sig(statistics.median(counted))}") + unit_suffix(part0)
        if swept is not None:
            swept.append(f"{label}: {v} ({shown})")
        if sizes is not None:
            sizes.append((label, [judge_entries(judged, p, vs, ents)[1] for p, (_, vs) in zip(judged.parts, per_part)]))
            if models:
                sizes.extend((f"model {e.model}", [vs[e.key] for _, vs in per_part]) for e in ents
                             if e.counted and all(e.key in vs for _, vs in per_part))
        if v != verdict:
            flips.append(f"{label}: {v} ({shown})")
            turns.append((label, v))
        elif hw is None and not models and base_key is not None and base_key in vals and base_vals[0][base_key]:
            change = vals[base_key] / base_vals[0][base_key] - 1
            if abs(change) >= 0.01:
                moves.append(f"{label}: {sig(vals[base_key])}{unit_suffix(part0)} ({change * 100:+.0f}%)")
    return flips, moves, turns
