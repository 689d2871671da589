"""What a number claim of claims.yaml tests, which follows from its expression: "derived" (through
the model), "spec" (a ratio of published figures) or "input" (an input read back); and the checks
that the kind a claim states is that one and that a bound it judges is one the lecture states; and
claims that test the same number the same way folded into one."""
from __future__ import annotations

import re

import sympy as sp

from derivations import REGISTRY
from units import UnitParseError, parse

from ..data.loader import DataError
from ..typeset.fmt import fmt

PUBLISHED = ("hardware", "model", "price", "tier")   # figures read from the data files, each sourced
_READ_BACK = 2     # a product or ratio of at most this many inputs is read back, not derived


def _monomial(e) -> bool:
    return bool(e.is_Mul or e.is_Pow or e.is_Symbol)


def _after_cancelling(expr, fixed) -> tuple[frozenset, bool] | None:
    """The inputs an expression still reads once its common factors cancel (quantities the claim
    fixes count as numbers), and whether what is left is a product or ratio; None when a max, min
    or floor keeps SymPy from cancelling."""
    def work():
        e = REGISTRY.expand(expr)
        if e.has(sp.Max, sp.Min, sp.floor, sp.ceiling):
            return None
        e = e.xreplace({REGISTRY[k].sym: sp.Dummy(k, positive=True) for k in fixed if k in REGISTRY})
        c = sp.cancel(e)
        names = frozenset(REGISTRY.q(x).name for x in c.free_symbols if x in REGISTRY.by_symbol
                          and REGISTRY.q(x).origin != "constant")
        return names, _monomial(c) or c.is_number
    return REGISTRY.kept(("claim inputs after cancelling", str(expr), tuple(sorted(fixed))), work)


def tested_kind(parts: list, relative: bool, fixed=()) -> tuple[str, str]:
    """What the claim's numbers test, and why: "derived" when at least one goes through the model
    (a derivation reading more than a product or ratio of two inputs); "spec" when each is a
    product or ratio of published figures (two chips' or one chip's: a drain time is capacity over
    bandwidth); "input" when each reads back an input or a definition applied to at most two
    inputs (the experts per GPU the workload sets). A claim is "derived" only if it is."""
    kinds, why = [], []
    for p in parts:
        direct = [REGISTRY.by_symbol[s] for s in p.expr.free_symbols if s in REGISTRY.by_symbol]
        # the inputs below (each definition's leaves, kept with SymPy's work): no expansion needed
        read = sorted({x.name for q in direct for x in ([q] if q.is_input else REGISTRY.leaves(q.name))
                       if x.origin != "constant"})
        no_derivation = all(q.is_input for q in direct)     # the claim's own arithmetic on inputs
        one_step = len(read) <= _READ_BACK and _monomial(REGISTRY.expand(p.expr))   # small when it runs
        left = _after_cancelling(p.expr, fixed) if not (no_derivation or one_step) else None
        if left is not None and left[1] and len(left[0]) <= _READ_BACK:   # the model cancels out
            read, one_step = sorted(left[0]), True
            why.append(f"{p.label}: everything but {', '.join(read) or 'constants'} cancels")
        if not (no_derivation or one_step):
            kinds.append("derived")
            continue
        published = all(REGISTRY[n].origin in PUBLISHED for n in read)
        kinds.append("spec" if published and (relative or len(read) >= _READ_BACK) else "input")
        why.append(f"{p.label} reads only {', '.join(read) or 'constants'}")
    kind = "derived" if "derived" in kinds else "spec" if "spec" in kinds else "input"
    return kind, "; ".join(why)


def check_kind(label, cid, claim) -> None:
    """A number claim says what it tests: "derived" only if its path goes through the model, and
    never when one of its inputs is set to the number claimed (an echo)."""
    if claim.kind not in ("derived", "spec", "input"):
        return
    kind, why = tested_kind(claim.parts, claim.relative_to is not None, tuple(claim.set) + tuple(claim.given))
    if kind != claim.kind:
        meaning = {"derived": "goes through the model", "spec": "is a ratio of published figures",
                   "input": "reads back an input or a definition"}[kind]
        raise DataError(label, cid, "kind", f"{claim.kind!r}, but the claim {meaning}"
                        + (f" ({why})" if why else "") + f": use kind {kind!r}")
    for name, text in {**claim.set, **claim.given}.items():
        try:
            q = parse(text)
        except UnitParseError:
            continue
        for p in claim.parts:
            lo, hi = p.claimed
            if q.dimensionality == lo.dimensionality and not p.compare and \
                    lo.magnitude / p.tolerance <= q.to(lo.units).magnitude <= hi.magnitude * p.tolerance:
                raise DataError(label, cid, "set" if name in claim.set else "given",
                                f"{name} = {text} is the number claimed: the verdict would read its own claim "
                                "(judge it as arithmetic on the lecture's numbers, or derive the input)")


def _stated(number: float, text: str) -> bool:
    """Whether ``text`` states ``number`` (as digits, with or without thousands commas, or as 128k)."""
    found = []
    for m in re.finditer(r"(\d[\d,]*(?:\.\d+)?)\s*([kKmM](?![a-zA-Z]))?", text):
        try:
            x = float(m.group(1).replace(",", ""))
        except ValueError:
            continue
        found.append(x * {"k": 1e3, "m": 1e6}.get((m.group(2) or "").lower(), 1))
    return any(abs(x - number) <= 0.025 * abs(number) for x in found)


def check_thresholds(label, cid, claim, c: dict) -> None:
    """A bound ("> X", "< X") is judged against a threshold the lecture states, a crossover (1: one
    side against the other), or one the claim sources or derives (`threshold:`); otherwise the
    verdict cannot be more than a reading of words such as "not a big deal": `inconclusive:`."""
    if claim.threshold or claim.inconclusive:
        return
    for p in claim.parts:
        if not p.compare or p.low == 1 or p.low == 0:
            continue
        if _stated(p.low, claim.quote):
            continue
        raise DataError(label, cid, "claimed", f"'{p.compare} {fmt(p.claimed[0])}' is a threshold the quote does "
                        "not state: name its source or derivation (threshold:), or say why the claim is "
                        "inconclusive (inconclusive:)")


def _same_test(c):
    """What a claim's verdict depends on: two claims with the same are one test said twice."""
    if c.kind == "qualitative":
        return None
    if c.kind == "identity":
        return ("identity", tuple(sorted(t for t, _, _ in c.checks)))
    parts = tuple((str(p.expr), p.claimed_text, p.tolerance, p.band) for p in c.parts)
    return (c.kind, parts, tuple(c.hardware), tuple(c.models), tuple(sorted(c.set.items())),
            tuple(sorted(c.given.items())), repr(c.relative_to), repr(c.cited), c.inconclusive, c.threshold)


def fold(claims: list) -> list:
    """Claims that test the same number the same way fold into the first: one row, one verdict,
    listing every place the lecture says it (a claim inheriting a folded one inherits the first)."""
    first, kept, into = {}, [], {}
    for c in claims:
        key = _same_test(c)
        if key is not None and key in first:
            first[key].also.append({"id": c.id, "where": c.where, "quote": c.quote})
            into[c.id] = first[key].id
            continue
        if key is not None:
            first[key] = c
        kept.append(c)
    for c in kept:
        c.inherits = into.get(c.inherits, c.inherits)
    return kept
