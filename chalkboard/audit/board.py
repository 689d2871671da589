"""A claim's deciding derivation as the board shows it: the judged quantity's definition with the
numbers substituted, and each derived quantity it names, as derived and then with its numbers."""
from __future__ import annotations

from derivations import REGISTRY

from ..errors import InputError, MissingInput

from ..evaluation.evaluate import Scenario
from ..evaluation.walk import walk
from ..typeset import printers
from ..typeset.fmt import fmt_named, sig
from ..typeset.linebreak import formula

from .claims import Part


def _eval(sc: Scenario, expr) -> object:
    return walk(expr, lambda s: sc.value(REGISTRY.q(s).name), where="claim")


def claim_formula(sc: Scenario, part: Part):
    """The part's definition with each symbol's value substituted: (text, mathml, typst)."""
    expr = REGISTRY[part.quantity].expr if part.quantity and not REGISTRY[part.quantity].is_input else part.expr
    if part.quantity and REGISTRY[part.quantity].is_input:
        return None
    values = {s: sc.value(REGISTRY.q(s).name) for s in expr.free_symbols}
    lhs = REGISTRY[part.quantity] if part.quantity else None
    text, _, ty = printers.with_values(expr, values)   # the PDF's is inline, where Typst breaks it
    ml = formula(expr, values=values)[1]                 # the page's is a display, set over lines
    if lhs is not None:
        sym = printers.text_symbol(lhs)
        text = f"{sym} = {text}"
    return text, ml, ty


DERIVATION_STEPS = 6   # a card shows at most this many steps; the report section has the rest


def claim_derivation(sc: Scenario, part: Part) -> list[dict]:
    """The deciding derivation as on the board: each derived quantity the judged expression names (its
    definition as derived, then with the numbers substituted, then its value), and the expression itself
    last. A quantity that is an input has none."""
    top = REGISTRY[part.quantity] if part.quantity else None
    if top is not None and top.is_input:
        return []
    expr = top.expr if top is not None else part.expr
    steps = []

    def step(q, e):
        values = {t: sc.value(REGISTRY.q(t).name) for t in e.free_symbols}
        sym_text, sym_ml, sym_ty = formula(e, lhs=q)
        num_text, num_ml, num_ty = formula(e, values=values)
        return {"name": q.name if q is not None else None, "symbolic": sym_text, "numbers": num_text,
                "mathml_symbolic": sym_ml, "mathml_numbers": num_ml, "typst_symbolic": sym_ty, "typst_numbers": num_ty}
    inner = [REGISTRY.q(t) for t in sorted(expr.free_symbols, key=str)
             if t in REGISTRY.by_symbol and not REGISTRY.q(t).is_input]
    for q in inner[:DERIVATION_STEPS - 1]:
        d = step(q, q.expr)
        d["value"] = fmt_named(q.name, sc.value(q.name))
        steps.append(d)
    last = step(top, expr)
    try:
        last["value"] = (fmt_named(top.name, sc.value(top.name)) if top is not None
                         else sig(float(_eval(sc, expr))))
    except (MissingInput, InputError, TypeError, ValueError):
        last["value"] = None
    steps.append(last)
    return steps
