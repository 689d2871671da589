"""Each claim evaluated: its verdict over every chip in its scope, with the evidence (the formula with
numbers, the inputs, each chip's value, what can flip it), the sentence that states it, and the rejections
a claim inherits. The set-ups it is judged on, and their variants, are setups.py's."""
from __future__ import annotations

import statistics

import sympy as sp

from derivations import REGISTRY

from ..data.loader import DataError
from ..errors import InputError, MissingInput
from ..evaluation.evaluate import Scenario
from ..evaluation.dependence import PIPELINE_CHAPTERS
from ..typeset.fmt import fmt, fmt_named, sig
from units import parse
from ..data.featured import FEATURED_HARDWARE as DEFAULT_HARDWARE, FEATURED_MODEL as DEFAULT_MODEL

from .rules import (unit_suffix, listed, LISTED, Verdict, EDGE, PLACEHOLDER, AGREES, band_text, DEFINITION, DEPENDS, FAILS,
                    HOLDS, INCONCLUSIVE, judge, loose_text, miss_text, ND, RECOMPUTED, REASONABLE_SWEEPS, ROUGHLY,
                    verdict_side, TWO_THIRDS)
from .scope import default_chips, Chips
from .claims import Claim
from .fixed import judge_identity, judge_sourced, notation
from .board import claim_derivation, claim_formula
from .evidence import classify, error_size, INDEPENDENT, NUMBER_KINDS, sizes_it
from .setups import Ctx, Entry, claim_depends_on, entries_of, evaluate_part, judge_entries, leaves_of, mark, claim_scenario, sweep_entries, worst


def _inputs_used(sc: Scenario, claim: Claim, expr) -> list[dict]:
    """The inputs an expression read, stopping at values the claim fixes."""
    seen, out = set(), []

    def visit(name):
        if name in seen:
            return
        seen.add(name)
        q = REGISTRY[name]
        if name in claim.given:
            src = f"fixed by the claim (the lecture's {claim.given[name]})"
            out.append({"name": name, "value": fmt(sc.value(name)), "source": src, "short": src})
            return
        if q.is_input:
            sc.input(name)
            r = sc.records.get(name)
            out.append({"name": name, "value": fmt(sc.value(name)) if not sc.value(name).dimensionless else sig(sc.value(name).magnitude),
                        "source": r.source if r else "", "url": getattr(r, "url", None),
                        "short": ": ".join((r.source if r else "").split(": ")[:2])})
            return
        for s in sorted(q.expr.free_symbols, key=str):
            visit(REGISTRY.q(s).name)
    for s in sorted(sp.sympify(expr, strict=True).free_symbols, key=str):
        visit(REGISTRY.q(s).name)
    return out


def evaluate_claim(data, claim: Claim, chips: Chips | None = None, values=None) -> Verdict:
    """The claim's verdict. ``values``: the edit loop's keeper of each evaluated entry (setups._value)."""
    ctx = Ctx(data, chips or default_chips(data), values)
    if claim.kind == "qualitative":
        why = claim.why + (f" Source: {claim.source}" if claim.source else "")
        v = Verdict(claim, ND, detail=why, scope=_scope_text(ctx, claim, entries_of(ctx, claim)) if claim.parts else "")
    elif claim.kind == "identity":
        v = judge_identity(claim)
        if v.verdict == FAILS and claim.parts:   # a failed relation sized by the number it gets wrong
            v.size = _identity_size(ctx, claim)
    elif claim.kind == "sourced":
        v = judge_sourced(claim)
    else:
        v = _numeric(ctx, claim)
    if claim.kind == "arithmetic" and v.verdict == HOLDS:   # the lecture's own numbers, redone
        v.verdict = RECOMPUTED
    if claim.threshold:
        v.band += f"; threshold: {claim.threshold}"
    if claim.inconclusive and v.verdict == INCONCLUSIVE:   # already inconclusive (a set-up that does not fit)
        v.detail = f"inconclusive: {claim.inconclusive} " + v.detail.removeprefix("inconclusive: ")
    elif claim.inconclusive and v.verdict != ND:    # computed and shown, but not a verdict on the sentence
        v.detail = (f"inconclusive: {claim.inconclusive} On the reading it would be \"{v.verdict}\"."
                    + (f" {v.detail}" if v.detail else ""))
        v.verdict, v.miss = INCONCLUSIVE, ""
    v.note = _fill(ctx, claim, claim.note, "note")
    v.why = _fill(ctx, claim, claim.why, "why")
    v.reading = _fill(ctx, claim, claim.reading, "reading")
    if claim.kind == "qualitative":
        v.detail = v.why + (f" Source: {claim.source}" if claim.source else "")
    v.decision = decision(v)
    return v


def _identity_size(ctx, claim: Claim) -> str:
    """A failed identity's error as a range: the number the relation predicts (its part), evaluated as set
    and over the reasonable sweeps and choices, each miss named (a symbolic "false" has no size of its own)."""
    p, size = claim.parts[0], _numeric(ctx, claim).size
    return f"{p.label} against the {p.claimed_text} the sentence implies, {size}" if size else ""


def share(v: Verdict) -> tuple[int, int, str] | None:
    """How many of the counted set-ups a claim over several models or chips holds on: (holding, counted,
    what they are), or None for a claim judged on one set-up or on several parts."""
    c = v.claim
    if len(c.parts) != 1 or c.kind in ("identity", "sourced", "qualitative"):
        return None
    counted = [x for x in v.values.values() if x.get("counted")]
    if len(counted) < 2:
        return None
    what = ("chips" if len(c.models) <= 1 else "models" if len({x.get("hardware") for x in counted}) <= 1
            else "chip × model pairs")
    if len(counted) < len(v.values):   # some shown, not counted (same silicon, announced, does not fit)
        what = "counted " + what
    return sum(1 for x in counted if x.get("verdict") == HOLDS), len(counted), what


def decision(v: Verdict) -> str:
    """The verdict as one sentence a reader can check: what was compared with what, by which rule; a claim over
    several models or chips ends with the share it holds on."""
    text = _decision(v)
    if v.verdict == FAILS and v.size and not v.inherited_from:   # an error sized over the choices, not one
        text += f"; sized over the choices tried: {v.size}"
    if v.evidence and v.evidence != INDEPENDENT:   # a hold that data from a source cannot move: said, not counted
        text += f" [evidence: {v.evidence}, not counted as an independent hold: {v.evidence_why}]"
    sh = share(v) if v.verdict not in (ND, INCONCLUSIVE) and not v.inherited_from else None
    if not sh:
        return text
    return text + (f" ({sh[0]} of {sh[1]} {sh[2]} hold as set, before the flip)" if v.verdict == DEPENDS
                   else f" ({sh[0]} of {sh[1]} {sh[2]} hold)")


def _decision(v: Verdict) -> str:
    c = v.claim
    if v.verdict == ND:
        return f"not judged: {v.why or v.detail}".rstrip()
    if v.inherited_from:
        return f"does not hold: {v.miss}"
    if v.verdict == INCONCLUSIVE:
        return v.detail if v.detail.startswith("inconclusive") else f"inconclusive: {v.detail}"
    if v.verdict == DEPENDS and v.as_set == FAILS:
        return (f"depends: {v.computed_text} against the lecture's {c.claimed_text} does not hold here ({v.miss}), "
                f"but a reasonable choice turns it: " + "; ".join(f for f in v.flips_if if f.startswith(REASONABLE_SWEEPS)))
    if v.verdict == DEPENDS:   # a hold that a reasonable choice breaks: the choices on each side
        held = [s.split(": ", 1)[0] for s in v.swept if s.startswith(REASONABLE_SWEEPS) and verdict_side(_swept_verdict(s)) == "holds"]
        return (f"depends: {v.computed_text} against the lecture's {c.claimed_text} {v.as_set} as set"
                + (f" and with {'; '.join(held)}" if held else "") + ", but a reasonable choice breaks it: "
                + "; ".join(f for f in v.flips_if if f.startswith(REASONABLE_SWEEPS) and verdict_side(_swept_verdict(f)) == "fails"))
    if c.kind == "identity":
        n = len(c.checks)
        if v.verdict == FAILS:
            wrong = [notation(t) for t, x in v.values.items() if x.get("value") is False]
            return (f"does not hold: {v.miss}: SymPy finds {'; '.join(wrong)} false once both sides are expanded "
                    "to inputs" + (f" ({v.detail.rsplit(': the difference is ', 1)[-1]})"
                                   if ": the difference is " in v.detail else ""))
        what = ("restates the derivations' own definition" if v.verdict == DEFINITION
                else "follows from the derivations by SymPy's algebra")
        return f"{v.verdict}: {'the relation' if n == 1 else f'each of the {n} relations'} {what}"
    parts = []
    for p in c.parts:
        if p.compare:
            side = "above" if p.compare == ">" else "below"
            parts.append((p, f"the lecture's bound {p.claimed_text}", side))
        else:
            parts.append((p, f"the lecture's \"{p.claimed_text}\"", None))
    shown = v.computed_text
    if len(parts) == 1:
        p, claimed, side = parts[0]
        if side:
            if v.verdict in AGREES:
                return f"{v.verdict}: {shown} is {side} {claimed}" + (f"; {v.loose}" if v.loose else "")
            if v.verdict == ROUGHLY and v.miss.startswith("the median"):
                return f"holds roughly against {claimed}: {shown}; {v.miss}"
            if v.verdict == ROUGHLY:
                return f"holds roughly: {shown} is not {side} {claimed} but within ×/÷{sig(p.tolerance)} of it ({v.miss})"
            return f"does not hold: {shown} is not {side} {claimed} ({v.miss})"
        if v.verdict in AGREES:
            return f"{v.verdict}: {shown} is within ×/÷{sig(p.tolerance)} of {claimed}"
        if v.verdict == ROUGHLY and v.miss.startswith("the median"):
            return f"holds roughly against {claimed}: {shown}; {v.miss}"
        if v.verdict == ROUGHLY:
            return f"holds roughly: {shown} is outside ×/÷{sig(p.tolerance)} of {claimed} but within ×/÷{sig(p.band)}"
        return f"does not hold: {shown} is outside ×/÷{sig(p.band)} of {claimed} ({v.miss})"
    each = (v.computed or {}).get("parts") or []
    if each and v.verdict not in AGREES:   # a compound sentence: each part's verdict, the weakest decides
        return (f"{v.verdict} (the weakest of its {len(each)} parts): " + "; ".join(
            f"{p['label']} {sig(p['value'])} against {cp.claimed_text}: {p['verdict']}" for p, cp in zip(each, c.parts))
            + (f" ({v.miss})" if v.miss else ""))
    return (f"{v.verdict}: computed {shown} against claimed {c.claimed_text}, each part within its own band"
            if v.verdict in AGREES else f"{v.verdict}: computed {shown} against claimed {c.claimed_text}"
            + (f" ({v.miss})" if v.miss else ""))


def _reads(ctx, claim: Claim, entry: Entry) -> set[str]:
    """What the claim's inputs depend on here (Scenario.input_scope of each): "hardware", "model",
    "pair" (both, e.g. the FLOP/s at a format), "all" (neither); and "format" if a number format is
    read (the serving format a chip chooses)."""
    sc = claim_scenario(ctx, claim, entry.hardware, entry.model)
    out = set()
    for n in leaves_of(claim):
        try:
            out.add(sc.input_scope(n))
        except (KeyError, TypeError, MissingInput, InputError):
            out.add("pair")   # cannot tell: as if it read the chip
        if n in ("bytes_per_weight", "bytes_per_kv_number", "peak_flops"):
            out.add("format")
    return out


def _scope_text(ctx, claim: Claim, entries: list[Entry], evaluated: int | None = None) -> str:
    counted = [e for e in entries if e.counted]
    names = {"all": "all chips", "gpus": "GPUs", "nvidia": "NVIDIA chips", "named chips": "named chips",
             "one chip": "one chip"}
    desc = ctx.chips.scopes.get(claim.scope_name, {}).get("text")
    head = names.get(claim.scope_name, claim.scope_name) + (f" ({desc})" if desc else "")
    what = "distinct chips" if len(claim.models) == 1 else "chip × model pairs" if len(claim.hardware) > 1 else "models"
    reads = _reads(ctx, claim, entries[0]) if len(entries) == 1 and not claim.relative_to else None
    if reads is not None and not reads & {"hardware", "pair"}:   # no chip enters: no chip scope
        bits = [f"no chip: {entries[0].model}'s data and the workload" if "model" in reads
                else "no chip or model: constants and the workload"]
    elif len(entries) == 1:
        bits = [f"{entries[0].hardware}" + (f" × {entries[0].model}" if entries[0].model != DEFAULT_MODEL else "")]
    else:
        bits = [f"{head}: {len(counted)} {what}" + (f", {evaluated} evaluated" if evaluated is not None and evaluated != len(counted) else "")]
    grouped = [f"{e.key} ({e.mark})" for e in entries
               if not e.counted and e.mark and e.mark.startswith("same silicon")]
    if grouped:
        bits.append("not counted again: " + listed(grouped))
    unfit = [e.key for e in entries if not e.counted and (e.mark or "").startswith("does not fit")]
    if unfit:
        bits.append("not counted (the set-up does not fit in HBM): " + listed(unfit))
    ann = [e.key for e in entries if (e.mark or "").startswith("announced")]
    if ann:
        shown = all(e.counted for e in entries if e.key in ann)
        bits.append(("announced, not shipping: " if shown else "announced, not shipping (shown, not counted): ")
                    + listed(ann))
    if claim.relative_to:
        r = claim.relative_to
        ref = "the previous chip in the list" if r.get("hardware") == "previous" else " × ".join(
            str(r[k]) for k in ("hardware", "model") if r.get(k))
        if r.get("set"):
            ref = (ref + " " if ref else "the same chip ") + "with " + ", ".join(f"{k}={v}" for k, v in r["set"].items())
        bits.append(f"each value relative to {ref}")
    fmts = sorted({ctx.chips.serving_format(ctx.data.hardware[e.hardware], e.model) or "?" for e in entries})
    if "format" in claim.set:
        bits.append(f"format {claim.set['format']} (set by the claim)")
    elif fmts and (reads is None or "format" in reads):
        bits.append("serving format " + "/".join(fmts))
    return "; ".join(bits)


def _numeric(ctx, claim: Claim) -> Verdict:
    entries = entries_of(ctx, claim)
    fit = []
    ctx.unfit = {}
    if claim_depends_on(claim, ("batch", "context")):
        for e in entries:
            reason = _fit(ctx, claim, e)
            if reason:
                ctx.unfit[e.key] = reason
                fit.append(f"{e.key}: {reason}")
    try:
        return _numeric_fitting(ctx, claim, entries, fit)
    finally:
        ctx.unfit = {}


def _numeric_fitting(ctx, claim: Claim, entries: list, fit: list) -> Verdict:
    part_results = []
    all_skipped = {}
    for part in claim.parts:
        vals, skipped = evaluate_part(ctx, claim, part, entries)
        all_skipped.update(skipped)
        v, summ = judge_entries(claim, part, vals, entries)
        part_results.append((part, vals, v, summ))
    vals0 = part_results[0][1]
    mark(ctx, entries, vals0)
    n_all = len({e.group or e.hardware for e in entries}) if len(claim.models) == 1 else len(entries)
    scope = _scope_text(ctx, claim, entries, sum(1 for e in entries if e.counted and e.key in vals0))
    if n_all != sum(1 for e in entries if e.counted):
        scope = scope.replace(f": {sum(1 for e in entries if e.counted)} ", f": {n_all} ", 1)
    if any(v is None for _, _, v, _ in part_results) and ctx.unfit and any(part_results[0][1]):
        return Verdict(claim, INCONCLUSIVE, detail="inconclusive: no set-up in scope fits in HBM, and a set-up "
                       "that does not fit never decides a verdict", scope=scope, fit=fit,
                       computed_text="; ".join(f"{k} {sig(x)}{unit_suffix(claim.parts[0])}" for k, x in part_results[0][1].items()))
    if any(v is None for _, _, v, _ in part_results):
        why = "; ".join(f"{k}: {m}" for k, m in all_skipped.items())
        return Verdict(claim, ND, detail=f"no chip in scope has the inputs: {why}", scope=scope)
    verdict = worst([v for _, _, v, _ in part_results])
    # the formula and inputs shown: the lecture's reference chip where the claim judges it, else the first
    ref = ctx.chips.reference
    e0 = next((e for e in entries if e.key in part_results[0][1] and e.hardware == ref and e.counted),
              next((e for e in entries if e.key in part_results[0][1] and e.counted),
                   next(e for e in entries if e.key in part_results[0][1])))
    sc0 = claim_scenario(ctx, claim, e0.hardware, e0.model)
    values, texts, details, misses, inputs, looses = {}, [], [], [], [], []
    for part, vals, v, summ in part_results:
        _part_evidence(ctx, claim, entries, e0, (part, vals, v, summ), values, texts, details, misses, looses)
        for rec in _inputs_used(sc0, claim, part.expr):
            if rec["name"] not in {r["name"] for r in inputs}:
                inputs.append(rec)
    if all_skipped:
        skipped = [f"{k} ({m})" for k, m in all_skipped.items()]
        details.append("not evaluated: " + "; ".join(skipped[:LISTED])
                       + (f"; and {len(skipped) - LISTED} more" if len(skipped) > LISTED else ""))
    formula, derivation = None, []
    try:
        formula = claim_formula(sc0, claim.parts[0])
        derivation = claim_derivation(sc0, claim.parts[0])
    except (MissingInput, InputError):
        pass
    unfit, ctx.unfit = ctx.unfit, {}    # the sweeps judge their own variants on every chip
    swept, sizes = [], []
    flips, moves, turns = sweep_entries(ctx, claim, entries, verdict, [r[1] for r in part_results], swept, sizes)
    ctx.unfit = unfit
    size = (error_size(part_results, [x for x in sizes if sizes_it(ctx, claim, x[0])], every=claim.kind == "identity")
            if verdict == FAILS or claim.kind == "identity" else "")
    turned = [label for label, v in turns if label.startswith(REASONABLE_SWEEPS) and verdict_side(v) != verdict_side(verdict)]
    as_set = verdict
    if turned:   # an error, or a confirmation, only if it survives the reasonable sweeps
        verdict = DEPENDS
        holding = turned if as_set == FAILS else ["as set"] + [
            s.split(": ", 1)[0] for s in swept if s.startswith(REASONABLE_SWEEPS) and verdict_side(_swept_verdict(s)) == "holds"]
        failing = turned if as_set != FAILS else []
        details.insert(0, (f"depends: it {as_set} as set, but " if as_set != FAILS else "depends: it does not hold as set, but ")
                       + f"holds with {'; '.join(holding)}" + (f"; does not hold with {'; '.join(failing)}" if failing else ""))
    p0 = part_results[0][0]
    mark(ctx, entries, vals0)
    summary = {"unit": f"{p0.unit:~P}"}
    counted0 = [vals0[e.key] for e in entries if e.counted and e.key in vals0]
    if len(counted0) == 1 and len(claim.parts) == 1:
        summary.update(value=counted0[0], hardware=e0.hardware, model=e0.model)
    elif len(claim.parts) == 1:
        summary.update(min=min(counted0), median=statistics.median(counted0), max=max(counted0),
                       outside=sorted(k for k, x in values.items() if x["counted"] and x["verdict"] != HOLDS),
                       values={k: x["value"] for k, x in sorted(values.items())})
    else:
        summary["parts"] = [{"label": p.label, "value": s, "unit": f"{p.unit:~P}", "verdict": v}
                            for p, _, v, s in part_results]
    evidence, evidence_why = (classify(ctx, claim, swept, e0.hardware, e0.model)   # what a hold would count as
                              if claim.kind in NUMBER_KINDS and verdict in (HOLDS, ROUGHLY) else ("", ""))
    return Verdict(claim, verdict, summary, "; ".join(texts), "; ".join(details), as_set=as_set, size=size,
                   evidence=evidence, evidence_why=evidence_why,
                   band="; ".join((f"{p.label}: " if len(claim.parts) > 1 else "") + band_text(p) for p in claim.parts),
                   scope=scope, values=values, inputs=inputs, formula=formula, flips_if=flips, sensitivity=moves,
                   fit=fit, miss="; ".join(misses), loose="; ".join(looses), swept=swept, derivation=derivation,
                   unswept="" if swept else ("it reads only published figures and the workload it fixes ("
                                             + ", ".join(r["name"] for r in inputs) + "): no context, batch, "
                                             "format or chip choice in its scope moves it"))


def _part_evidence(ctx, claim: Claim, entries: list, e0, result: tuple, values: dict, texts: list, details: list,
                   misses: list, looses: list) -> None:
    """One part's evidence added to the card's: each set-up's value, the computed text, the detail (over how
    many set-ups, on which chip shown), and how far it misses or how loose a bound that holds is."""
    part, vals, v, summ = result
    args = (part.low, part.high, part.tolerance, part.band, part.compare)
    multi = sum(1 for e in entries if e.counted and e.key in vals) > 1
    for e in entries:
        if e.key not in vals:
            continue
        key = e.key if len(claim.parts) == 1 else f"{part.label} · {e.key}"
        values[key] = {"value": vals[e.key], "unit": f"{part.unit:~P}", "verdict": judge(vals[e.key], *args),
                       "counted": e.counted, "mark": e.mark, "hardware": e.hardware, "model": e.model,
                       "format": _format_of(ctx, claim, e)}
    u = unit_suffix(part)
    if multi:
        counted = sorted(vals[e.key] for e in entries if e.counted and e.key in vals)
        inside = sum(1 for x in counted if judge(x, *args) == HOLDS)
        texts.append(f"median {sig(summ)} ({sig(counted[0])}–{sig(counted[-1])}){u}")
        what = ("distinct chips" if len(claim.models) <= 1 else "models" if len(claim.hardware) <= 1
                else "chip × model pairs")
        details.append(f"{part.label}: median {sig(summ)}{u} over {len(counted)} {what}; "
                       f"{inside} of {len(counted)} within the band "
                       f"({'at least' if inside >= TWO_THIRDS * len(counted) - EDGE else 'fewer than'} two thirds); "
                       f"the formula and inputs shown are {e0.hardware}'s"
                       + (" (the lecture's reference chip)" if e0.hardware == ctx.chips.reference else ""))
    else:
        texts.append(f"{sig(summ)}{u}")
        details.append(f"{part.label} on {e0.hardware} with {e0.model}" + (
            f" relative to {' × '.join(str(x) for x in e0.reference)}" if e0.reference else ""))
    if v == ROUGHLY and multi and judge(summ, *args) == HOLDS:   # the median holds, some chip does not
        mine = [e.key for e in entries if e.counted and e.key in vals]
        wrong = [k for k in mine if judge(vals[k], *args) == FAILS]
        out = [k for k in mine if judge(vals[k], *args) != HOLDS]
        side = "on the claimed side" if part.compare else f"within ×/÷{sig(part.tolerance)}"
        if wrong:
            misses.append(f"the median is {side}, but {listed(wrong)} {'is' if len(wrong) == 1 else 'are'} "
                          + ("not" if part.compare else f"outside ×/÷{sig(part.band)}"))
        else:
            misses.append(f"the median is {side}, but only {len(mine) - len(out)} of {len(mine)} values are "
                          f"(fewer than two thirds: {listed(out)} not)")
    elif v == FAILS or (v == ROUGHLY and part.compare):   # a bound missed, within its tolerance or not
        misses.append(miss_text(summ, part.low, part.high, part.compare))
    elif v == HOLDS and loose_text(summ, part.low, part.compare):   # a bound that holds: how loose
        looses.append(loose_text(summ, part.low, part.compare))


def _swept_verdict(entry: str) -> str:
    """The verdict of one swept variant as the card lists it ("context 1,024 tokens: holds (1.2)")."""
    text = entry.split(": ", 1)[1]
    return next((v for v in (ROUGHLY, FAILS, HOLDS) if text.startswith(v)), text)


def _format_of(ctx, claim, e: Entry) -> str | None:
    if "format" in claim.set:
        return claim.set["format"]
    return ctx.chips.serving_format(ctx.data.hardware[e.hardware], e.model)


def _fit(ctx, claim, e: Entry) -> str | None:
    try:
        sc = claim_scenario(ctx, claim, e.hardware, e.model)
        q = REGISTRY[claim.quantity] if claim.quantity is not None else None
        if q is not None and q.section and REGISTRY.sections[q.section].chapter in PIPELINE_CHAPTERS:
            return sc.flag(q.name)  # a pipelined set-up: its own fit, or none for a non-set-up
        return sc.fit()
    except (MissingInput, InputError):
        return None


def _fill(ctx, claim: Claim, text: str | None, fld: str) -> str | None:
    """Fill {quantity} placeholders with values from the claim's first scenario; a placeholder
    that cannot be filled is an error naming the claim, never printed as a brace."""
    if not text or "{" not in text:
        return text
    hid = claim.hardware[0] if claim.hardware else DEFAULT_HARDWARE
    mid = claim.models[0] if claim.models else DEFAULT_MODEL
    try:
        sc = claim_scenario(ctx, claim, hid, mid)
    except (MissingInput, InputError) as e:
        raise DataError("claims.yaml", claim.id, fld, f"cannot fill its placeholders on {hid} × {mid}: {e}") from None

    def rep(m):
        try:
            return fmt_named(m.group(1), sc.value(m.group(1)))
        except (MissingInput, InputError) as e:
            raise DataError("claims.yaml", claim.id, fld,
                            f"placeholder {{{m.group(1)}}} cannot be filled on {hid} × {mid}: {e}") from None
    out = PLACEHOLDER.sub(rep, text)
    if PLACEHOLDER.search(out):
        raise DataError("claims.yaml", claim.id, fld, "a placeholder is left unfilled")
    return out


def _as_claimed(text: str, part) -> float | None:
    """A ``given`` value in the unit of a part's claim, or None when the dimensions differ."""
    try:
        q = parse(text)
        return float(q.to(part.unit).magnitude)
    except Exception:
        return None


def inherit_rejections(verdicts: list[Verdict]) -> None:
    """A claim that reads a number another card rejects inherits that rejection: it does not hold,
    and its error is the rejecting card's, counted once. A card names the input that carries the
    lecture's number it tests (``lecture_input``); a claim that fixes a quantity (``given``) to the
    value a failed card claimed for that quantity reads it too."""
    rejected_inputs, rejected_values = {}, {}
    for v in verdicts:
        if v.verdict != FAILS or v.inherited_from:
            continue
        if v.claim.lecture_input:
            rejected_inputs[v.claim.lecture_input] = v
        if v.claim.quantity and not v.claim.parts[0].compare:
            rejected_values[v.claim.quantity] = v
    if not rejected_inputs and not rejected_values:
        return
    for v in verdicts:
        c = v.claim
        if c.kind not in ("derived", "arithmetic", "spec", "input") or v.verdict not in AGREES + (ROUGHLY,):
            continue
        found = None
        for name in sorted(leaves_of(c) & set(rejected_inputs)):
            f = rejected_inputs[name]
            if f.claim.id != c.id:
                found = (f, f"it reads {name}, set to the lecture's {f.claim.claimed_text}")
                break
        for name, text in sorted(c.given.items()):
            f = rejected_values.get(name)
            if found or f is None or f.claim.id == c.id:
                continue
            p = f.claim.parts[0]
            x = _as_claimed(text, p)
            if x is not None and p.low / p.tolerance <= x <= p.high * p.tolerance:
                found = (f, f"it fixes {name} = {text}, the lecture's number")
        if found is None:
            continue
        f, how = found
        v.verdict, v.inherited_from = FAILS, f.claim.id
        v.miss = f"{how}, which {f.claim.id} rejects ({f.miss}" + (f"; over the choices tried {f.size}" if f.size else "") + ")"
        if c.inherits is None:
            c.inherits = f.claim.id
