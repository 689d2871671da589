"""The Pint walk: a SymPy expression evaluated with Pint quantities, so adding seconds to bytes,
or taking the max of a time and a size, raises DimensionMismatch naming the terms. The dimension
check (chalkboard.check) runs it on unit-valued placeholders; Scenario.pint_value on numbers."""
from __future__ import annotations

import math

import sympy as sp
from sympy.core.function import AppliedUndef

from derivations import REGISTRY
from units import Quantity, unit as parse_unit


_ONE = parse_unit("")


class DimensionMismatch(Exception):
    def __init__(self, where: str, a, da, b, db):
        self.where, self.terms = where, (a, b)
        super().__init__(f"{where}: cannot combine {a} [{da}] with {b} [{db}]")


def _dims(q):
    d = q.dimensionality
    return str(d) if d else "dimensionless"


def walk(expr: sp.Expr, leaf, where: str = "expression", dims_only: bool = False):
    """Evaluate ``expr`` with Pint: ``leaf(symbol)`` gives each symbol's quantity.

    ``dims_only`` (the dimension check) evaluates logarithms and fractional powers of
    placeholder magnitudes that may be negative by their absolute value: only the
    dimensions are compared there.
    """
    if isinstance(expr, sp.Symbol):
        return leaf(expr)
    if expr.is_Number:
        return Quantity(float(expr), _ONE)
    args = [walk(a, leaf, where, dims_only) for a in expr.args]
    if isinstance(expr, (sp.Add, sp.Max, sp.Min)):
        first = args[0]
        for a, term in zip(args[1:], expr.args[1:]):
            if a.dimensionality != first.dimensionality:
                raise DimensionMismatch(where, expr.args[0], _dims(first), term, _dims(a))
        if isinstance(expr, sp.Add):
            total = first
            for a in args[1:]:
                total = total + a.to(first.units)
            return total
        mags = [a.to(first.units).magnitude for a in args]
        pick = max(mags) if isinstance(expr, sp.Max) else min(mags)
        return Quantity(pick, first.units)
    if isinstance(expr, sp.Mul):
        out = args[0]
        for a in args[1:]:
            out = out * a
        return out
    if isinstance(expr, sp.Pow):
        base, exp = args
        if not exp.dimensionless:
            raise DimensionMismatch(where, expr.args[1], _dims(exp), "an exponent", "dimensionless")
        if expr.args[1].is_Number:
            return base ** float(expr.args[1])
        if not base.dimensionless:
            raise DimensionMismatch(where, expr.args[0], _dims(base), "the base of a symbolic power",
                                    "dimensionless")
        if dims_only:   # a dimensionless power of placeholders: its size says nothing (and may overflow)
            return Quantity(1.0, _ONE)
        b, x = base.to("").magnitude, exp.to("").magnitude
        if b < 0:
            raise ValueError(f"{expr.args[0]} is negative ({b:g}) under a fractional power")
        return Quantity(b ** x, _ONE)
    if isinstance(expr, (sp.log, sp.floor, sp.ceiling)):
        (a,), (term,) = args, expr.args
        if not a.dimensionless:
            kind = ("a logarithm" if isinstance(expr, sp.log) else
                    "floor()" if isinstance(expr, sp.floor) else "ceiling()")
            raise DimensionMismatch(where, term, _dims(a), f"the argument of {kind}", "dimensionless")
        x = a.to("").magnitude
        if isinstance(expr, sp.floor):
            return Quantity(float(math.floor(x + 1e-9)), _ONE)  # 1e-9: 2.9999999999 counts as 3
        if isinstance(expr, sp.ceiling):
            return Quantity(float(math.ceil(x - 1e-9)), _ONE)  # 3.0000000001 counts as 3
        if x <= 0:
            if not dims_only:
                raise ValueError(f"the logarithm of {term} = {x:g} is undefined")
            x = abs(x) or 1.0
        return Quantity(math.log(x), _ONE)
    if isinstance(expr, AppliedUndef):
        # an arbitrary map f of one argument (a layer of a reversible network): it keeps its
        # argument's dimension, so y + f(x) is checked like y + x. It has no value to compute.
        if not dims_only:
            raise TypeError(f"{where}: {expr.func} is an undefined function; it has no value")
        if len(args) != 1:
            raise TypeError(f"{where}: undefined function {expr} of {len(args)} arguments")
        return args[0]
    raise TypeError(f"{where}: cannot evaluate {type(expr).__name__} ({expr})")


def placeholders(registry=REGISTRY):
    """Each symbol's declared unit as a quantity (the leaves of the dimension check).

    Magnitudes differ from symbol to symbol (square roots of distinct primes) so that no
    difference of terms cancels to zero by accident.
    """
    index = {name: i for i, name in enumerate(registry.quantities)}

    def leaf(sym):
        q = registry.q(sym)
        return Quantity(float(sp.sqrt(sp.prime(index[q.name] + 2))), q.unit)
    return leaf
