"""The dimension check: every definition, equation, sum and max/min in the derivations.

Each expression is walked with unit-valued placeholders (the same walk that evaluates
numbers), so a sum of mismatched terms fails naming the quantity and the two terms; a
definition whose result does not have its declared unit fails naming both units; an
equation whose sides differ fails naming the equation. Identities (equations both of
whose sides SymPy can expand) must also hold symbolically; they may be written in undefined
functions (a reversible layer's f), which keep their argument's dimension.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp
from sympy.core.function import AppliedUndef

from units import Quantity

from .walk import DimensionMismatch, placeholders, walk


@dataclass
class CheckReport:
    definitions: int = 0
    equations: int = 0
    identities: int = 0
    in_functions: int = 0   # identities in undefined functions (the reversible maps' inverses)
    terms: int = 0          # sums, maxes and mins whose terms were compared
    failures: list[str] = field(default_factory=list)

    @property
    def checked(self) -> int:
        return self.definitions + self.equations

    @property
    def ok(self) -> bool:
        return not self.failures


def _count_terms(expr) -> int:
    return sum(1 for e in sp.preorder_traversal(expr) if isinstance(e, (sp.Add, sp.Max, sp.Min)))


def check_definition(registry, q) -> None:
    """Raise DimensionMismatch if ``q``'s definition does not have ``q``'s declared unit."""
    got = walk(q.expr, placeholders(registry), where=q.name, dims_only=True)
    want = Quantity(1, q.unit)
    if got.dimensionality != want.dimensionality:
        raise DimensionMismatch(q.name, q.expr, str(got.dimensionality) or "dimensionless",
                                f"declared unit {q.unit or '1'}", str(want.dimensionality) or "dimensionless")


def check_equation(registry, eq) -> bool:
    """Raise on a dimension mismatch; return True if the two sides are also identical."""
    known = placeholders(registry)
    local = {s: Quantity(float(sp.sqrt(sp.prime(i + 2))), "") for i, s in enumerate(eq.free)}

    def leaf(sym):
        return local[sym] if sym in local else known(sym)
    lhs = walk(eq.lhs, leaf, where=eq.name, dims_only=True)
    rhs = walk(eq.rhs, leaf, where=eq.name, dims_only=True)
    if lhs.dimensionality != rhs.dimensionality:
        raise DimensionMismatch(eq.name, eq.lhs, str(lhs.dimensionality), eq.rhs, str(rhs.dimensionality))
    return registry.kept(("identity", eq.name), lambda: bool(
        sp.simplify(registry.expand(eq.lhs) - registry.expand(eq.rhs)) == 0))


def check_all(registry) -> CheckReport:
    """Every definition and equation of ``registry`` checked. The report depends on the sources
    alone (the derivations, units/, this module and the walk, SymPy's and Pint's versions: the
    key of chalkboard/cache/symcache.py), so it is kept with SymPy's work: a later run of the same
    sources reads it instead of walking every expression again."""
    # kept as plain fields: the cache is read before this module may be imported
    fields = registry.kept(("dimension check", len(registry.derived_quantities()), len(registry.equations)),
                           lambda: vars(_check_all(registry)))
    return CheckReport(**{**fields, "failures": list(fields["failures"])})


def _check_all(registry) -> CheckReport:
    rep = CheckReport()
    for q in registry.derived_quantities():
        try:
            check_definition(registry, q)
            rep.definitions += 1
            rep.terms += _count_terms(q.expr)
        except DimensionMismatch as e:
            rep.failures.append(str(e))
    for eq in registry.equations.values():
        try:
            same = check_equation(registry, eq)
            rep.equations += 1
            rep.terms += _count_terms(eq.lhs) + _count_terms(eq.rhs)
            if eq.identity:
                rep.identities += 1
                rep.in_functions += bool(eq.free) or eq.lhs.has(AppliedUndef) or eq.rhs.has(AppliedUndef)
                if not same:
                    rep.failures.append(f"{eq.name}: the two sides are not equal symbolically")
        except DimensionMismatch as e:
            rep.failures.append(str(e))
    return rep
