"""Claims judged without a chip: identities SymPy verifies, and figures a cited source gives."""
from __future__ import annotations

import re

import sympy as sp

from derivations import REGISTRY

from ..typeset import printers
from ..typeset.fmt import sig

from .rules import (unit_suffix, band_text, listed, DEFINITION, FAILS, HOLDS, judge, judge_rule, loose_text, miss_factor, miss_text, size_text,
                    RECOMPUTED, ROUGHLY, Verdict)
from .claims import expand, Claim


def _symbolic_check(text: str, lhs, rhs) -> tuple[bool, str | None]:
    """Whether lhs = rhs once both are expanded to inputs; if not, what the difference is."""
    a, b = expand(lhs), expand(rhs)
    diff = sp.simplify(a - b)
    ok = diff == 0
    if not ok and not diff.has(sp.Max, sp.Min):
        ok = sp.simplify(sp.expand(a) - sp.expand(b)) == 0
    if ok:
        return True, None
    try:
        return False, f"{text}: the difference is {printers.text(diff)}, not 0"
    except Exception:
        return False, f"{text}: the difference does not simplify to 0"


_HELPERS = ("d(", "at(", "lhs(", "rhs(")
_DEFINITION_DEPTH = 2   # a relation the encoding states within two substitutions of its declared definitions


def _unfold(e, depth: int):
    """``e`` with each derived quantity replaced by its declared definition, ``depth`` times over."""
    for _ in range(depth):
        sub = {s: REGISTRY.by_symbol[s].expr for s in e.free_symbols
               if s in REGISTRY.by_symbol and not REGISTRY.by_symbol[s].is_input}
        if not sub:
            break
        e = e.xreplace(sub)
    return e


def restates_definition(text: str, lhs, rhs) -> bool:
    """Whether a relation is the encoding's own definition: no derivative, substitution or equation
    side, and both sides agree once each is unfolded by at most two declared definitions. Such a
    check cannot fail while the derivations stand: it is a definition, not evidence."""
    if any(h in text.replace(" ", "") for h in _HELPERS):
        return False
    sides = [[_unfold(sp.sympify(e, strict=True), k) for k in range(_DEFINITION_DEPTH + 1)] for e in (lhs, rhs)]
    for a in sides[0]:
        for b in sides[1]:
            try:
                if a == b or sp.expand(a - b) == 0 or sp.simplify(a - b) == 0:
                    return True
            except (TypeError, ValueError):
                continue
    return False


def identity_evidence(claim: Claim) -> str:
    """DEFINITION when every relation restates a declared definition, else RECOMPUTED (the lecture's
    algebra redone by SymPy: a derivative, a limit, a relation between several definitions)."""
    def every():
        return all(restates_definition(t, lhs, rhs) for t, lhs, rhs in claim.checks)
    return DEFINITION if REGISTRY.kept(("claim definition", tuple(t for t, _, _ in claim.checks)), every) else RECOMPUTED


_NAME = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")
_DERIV = re.compile(r"\bd\(([^(),]+),\s*([^(),]+)\)")
_AT = re.compile(r"\bat\(([^(),]+),\s*([^(),]+),\s*([^(),]+)\)")


def notation(text: str) -> str:
    """A relation as the report writes it: quantities by their symbols, '=' for '==', '·' for '*',
    ∂a/∂b for d(a, b) (what claims.yaml spells in the parser's names)."""
    def name(m):
        n = m.group(0)
        if n in REGISTRY and n not in ("d", "at", "lhs", "rhs"):
            try:
                return printers.text(REGISTRY[n].sym)
            except Exception:
                return n
        return {"Max": "max", "Min": "min"}.get(n, n)
    out = text.replace("==", "=").replace("**", "^").replace("*", "·")
    out = _DERIV.sub(lambda m: f"∂({m.group(1).strip()})/∂({m.group(2).strip()})", out)
    out = _AT.sub(lambda m: f"{m.group(1).strip()}[{m.group(2).strip()} → {m.group(3).strip()}]", out)
    return _NAME.sub(name, out)


def judge_identity(claim: Claim) -> Verdict:
    results, failed = [], []
    for text, lhs, rhs in claim.checks:
        ok, why = REGISTRY.kept(("claim identity", text), lambda: _symbolic_check(text, lhs, rhs))
        results.append({"check": text, "holds": ok})
        if not ok:
            failed.append(why)
    verdict = identity_evidence(claim) if not failed else FAILS
    detail = "SymPy expands both sides to inputs and simplifies the difference: " + (
        "0 for every relation" if not failed else "; ".join(failed))
    if verdict == DEFINITION:
        detail += (" Each relation is the derivations' own definition (unfolded at most "
                   f"{_DEFINITION_DEPTH} steps), so it cannot fail while they stand: counted as a definition, not as evidence.")
    elif verdict == RECOMPUTED:
        detail += " The lecture's algebra redone on the derivations: it can catch a slip, not test the model against data."
    text = "; ".join(("✓ " if r["holds"] else "✗ ") + notation(r["check"]) for r in results)
    return Verdict(claim, verdict, {"checks": results}, text, detail, band="exact (symbolic)",
                   scope="every chip and model (symbolic)",
                   values={r["check"]: {"value": r["holds"], "verdict": HOLDS if r["holds"] else FAILS,
                                        "counted": True, "mark": None} for r in results},
                   miss="" if not failed else f"{len(failed)} of {len(results)} relations fail",
                   unswept="an identity is symbolic: it holds or fails for every chip, model, format and workload at once")


def judge_sourced(claim: Claim) -> Verdict:
    part = claim.parts[0]
    vals = {k: float(q.magnitude) for k, q in claim.cited.items()}
    args = (part.low, part.high, part.tolerance, part.band, part.compare)
    if len(vals) == 1:
        val = next(iter(vals.values()))
        verdict, summary = judge(val, *args), {"value": val}
        text = f"{sig(val)}{unit_suffix(part)} (cited)"
    else:
        verdict, med, inside = judge_rule(list(vals.values()), *args)
        lo_, hi_ = min(vals.values()), max(vals.values())
        summary = {"median": med, "min": lo_, "max": hi_}
        text = (f"{sig(med)}{unit_suffix(part)} ({len(vals)} cited figures)" if lo_ == hi_ else
                f"median {sig(med)} ({sig(lo_)}–{sig(hi_)}){unit_suffix(part)}, {len(vals)} cited figures")
    summary["unit"] = f"{part.unit:~P}"
    values = {k: {"value": v, "verdict": judge(v, *args), "counted": True, "mark": None} for k, v in vals.items()}
    miss = ""
    shown = summary.get("median", summary.get("value"))
    if len(vals) > 1 and verdict == ROUGHLY and judge(shown, *args) == HOLDS:
        # the median holds and some figure does not: name them, as the rule over chips does
        wrong = [k for k, x in values.items() if x["verdict"] == FAILS]
        out = [k for k, x in values.items() if x["verdict"] != HOLDS]
        side = "on the claimed side" if part.compare else f"within ×/÷{sig(part.tolerance)}"
        miss = (f"the median is {side}, but {listed(wrong)} {'is' if len(wrong) == 1 else 'are'} "
                + ("not" if part.compare else f"outside ×/÷{sig(part.band)}") if wrong else
                f"the median is {side}, but only {len(vals) - len(out)} of {len(vals)} figures are "
                f"(fewer than two thirds: {listed(out)} not)")
    elif verdict == FAILS or (verdict == ROUGHLY and part.compare):
        miss = miss_text(shown, part.low, part.high, part.compare)
    sized = [(f, k) for k, x in values.items() if x["verdict"] == FAILS
             for f in [miss_factor(x["value"], part.low, part.high, part.compare)] if f]
    size = size_text(sized) if verdict == FAILS and sized else ""   # the range over the cited figures
    return Verdict(claim, verdict, summary, text, f"claimed {part.claimed_text} against the cited "
                   f"{'figure' if len(vals) == 1 else 'figures'}: {claim.source}", band=band_text(part),
                   scope="the cited source", values=values, miss=miss,
                   unswept="the cited figures are the evidence: there is no set-up to sweep", size=size,
                   loose=loose_text(shown, part.low, part.compare) if verdict == HOLDS else "")
