"""The one checked evaluation path: SymPy expressions evaluated with Pint quantities.

``walk`` evaluates an expression tree with Pint arithmetic, so adding seconds to bytes,
or taking the max of a time and a size, raises DimensionMismatch naming the terms. The
dimension check (chalkboard.check) runs the same walk on unit-valued placeholders;
``Scenario`` runs it on the numbers of one hardware x model x workload.
"""
from __future__ import annotations

from dataclasses import dataclass

import math

import sympy as sp

from derivations import KV_BYTES_BY_ATTENTION, REGISTRY
from derivations.inputs import NUMBER_FORMATS
from units import Quantity, UnitParseError, conform, magnitude_problem, parse, unit as parse_unit

from .data import FORMATS_ORDER, Data
from .errors import InputError, MissingInput, NotApplicable  # noqa: F401  (re-exported)


_ONE = parse_unit("")


class DimensionMismatch(Exception):
    def __init__(self, where: str, a, da, b, db):
        self.where, self.terms = where, (a, b)
        super().__init__(f"{where}: cannot combine {a} [{da}] with {b} [{db}]")


def _dims(q):
    d = q.dimensionality
    return str(d) if d else "dimensionless"


def walk(expr: sp.Expr, leaf, where: str = "expression"):
    """Evaluate ``expr`` with Pint: ``leaf(symbol)`` gives each symbol's quantity."""
    if isinstance(expr, sp.Symbol):
        return leaf(expr)
    if expr.is_Number:
        return Quantity(float(expr), _ONE)
    args = [walk(a, leaf, where) for a in expr.args]
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
        return base ** float(sp.nsimplify(expr.args[1])) if expr.args[1].is_Number else base ** exp.magnitude
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


@dataclass
class InputRecord:
    name: str
    value: object       # Pint quantity
    source: str         # human-readable provenance
    url: str | None = None
    as_of: str | None = None
    note: str | None = None


def _compute_format(hw, wanted: str, overrides=()) -> tuple[str, str | None]:
    """The number format the chip computes in: the model's, else the next wider it supports
    (a rate given with --set counts as supported)."""
    order = FORMATS_ORDER[FORMATS_ORDER.index(wanted):]
    for f in order:
        if f"flops_{f}" in hw.values or f"flops_{f}" in overrides:
            note = None if f == wanted else f"{hw.id} has no {wanted} rate; its {f} rate is used"
            return f, note
    have = [f for f in FORMATS_ORDER if f"flops_{f}" in hw.values]
    raise MissingInput(f"{hw.id} lists no FLOP/s for {wanted} or wider (it lists {', '.join(have)}; "
                       f"try --set format={have[-1]}, or give the rate as flops_{wanted})")


class Scenario:
    """One hardware entry x one model entry x workload settings, evaluated lazily."""

    def __init__(self, data: Data, hardware_id: str, model_id: str, overrides: dict[str, str] | None = None):
        if hardware_id not in data.hardware:
            raise InputError(f"{data.files['hardware']}: unknown hardware id {hardware_id!r} "
                             f"(known: {', '.join(data.hardware)})")
        if model_id not in data.models:
            raise InputError(f"{data.files['models']}: unknown model id {model_id!r} "
                             f"(known: {', '.join(data.models)})")
        self.data, self.hw, self.model = data, data.hardware[hardware_id], data.models[model_id]
        self.overrides = self._parse_overrides(overrides or {})
        fmt = self.overrides.pop("format", None) or self.model.tags["weight_format"]
        self.format = fmt
        self._cache: dict[str, object] = {}
        self._fixed: dict[str, object] = {}
        self.records: dict[str, InputRecord] = {}
        self.used: set[str] = set()      # overrides that some evaluation read

    # -- overrides ------------------------------------------------------------------------
    def _parse_overrides(self, raw: dict[str, str]) -> dict:
        out = {}
        field_to_q = {}
        for q in REGISTRY.inputs():
            if q.field and not q.field.startswith("<") and q.field != q.name:
                field_to_q[q.field] = q.name
        for name, text in raw.items():
            if name == "format":
                if text not in FORMATS_ORDER:
                    raise InputError(f"--set format={text}: expected one of {', '.join(FORMATS_ORDER)}")
                out["format"] = text
                continue
            key = name
            if name.startswith("flops_") and name[6:] in FORMATS_ORDER:
                key = name
                unit = "FLOP/s/chip"
            elif name in REGISTRY:
                q = REGISTRY[name]
                if not q.is_input:
                    raise InputError(f"--set {name}: {name} is derived; set the inputs it is computed from")
                unit = q.unit
            elif name in field_to_q:
                key = field_to_q[name]
                unit = REGISTRY[key].unit
            else:
                raise InputError(f"--set {name}: unknown input (see `python build.py list quantities`)")
            try:
                v = parse(text)
            except UnitParseError as e:
                raise InputError(f"--set {name}: {e}") from None
            try:
                v = conform(v, unit, per_chip=unit.endswith("/chip"), bare=True)
            except UnitParseError as e:
                raise InputError(f"--set {name}={text}: {e}") from None
            problem = magnitude_problem(v)
            if problem:
                raise InputError(f"--set {name}={text}: {problem} (it divides, or counts something)"
                                 if problem == "must be positive" else f"--set {name}={text}: {problem}")
            out[key] = v
        return out

    # -- inputs ---------------------------------------------------------------------------
    def _record(self, name, value, source, url=None, as_of=None, note=None):
        self.records[name] = InputRecord(name, value, source, url, as_of, note)
        return value

    def _from_value(self, name, entry, fld, note=None):
        v = entry.get(fld)
        if v is None:
            raise MissingInput(f"{entry.id} has no {fld}")
        file = self.data.files["hardware" if entry.kind == "hardware" else "models"]
        return self._record(name, v.quantity, f"{file}: {entry.id}.{fld}: {v.source.title}",
                            v.source.url, v.as_of, " ".join(x for x in (v.note, note) if x) or None)

    def input(self, name: str):
        if name in self._cache:
            return self._cache[name]
        q = REGISTRY[name]
        if name in self.overrides:
            self.used.add(name)
            val = self._record(name, self.overrides[name], "--set")
        elif name == "peak_flops" and any(k.startswith("flops_") for k in self.overrides):
            fmt, note = _compute_format(self.hw, self.format, self.overrides)
            if f"flops_{fmt}" in self.overrides:
                self.used.add(f"flops_{fmt}")
                val = self._record(name, self.overrides[f"flops_{fmt}"], "--set", note=note)
            else:
                val = self._from_value(name, self.hw, f"flops_{fmt}", note)
        elif q.origin == "constant":
            val = self._record(name, parse(q.default), f"constant: {q.source}")
        elif q.origin == "workload":
            if q.default and q.default.startswith("=rule:"):
                fn, args, desc = REGISTRY.rules[q.default[6:]]
                mags = [self.input(a).to(REGISTRY[a].unit or "").magnitude for a in args]
                try:
                    result = fn(*mags)
                except ValueError as e:
                    raise InputError(f"cannot choose {name} for {self.hw.id} x {self.model.id}: {e}") from None
                val = self._record(name, Quantity(result, q.unit), f"workload default: {desc}")
            elif q.default and q.default.startswith("="):
                ref = q.default[1:]
                val = self.input(ref)
                val = self._record(name, Quantity(val.magnitude, q.unit),
                                   f"workload default: {ref} of {self.hw.id}")
            else:
                val = self._record(name, parse(q.default), f"workload default ({q.source or 'lecture'})")
        elif name == "peak_flops":
            fmt, note = _compute_format(self.hw, self.format)
            val = self._from_value(name, self.hw, f"flops_{fmt}", note)
        elif name == "bytes_per_weight":
            b = parse(NUMBER_FORMATS[self.format]) / Quantity(1, "parameter")
            val = self._record(name, b, f"number format {self.format} ({NUMBER_FORMATS[self.format]} per weight)")
        elif name == "bytes_per_kv_number":
            fmt = self.model.tags.get("kv_format", "bf16")
            val = self._record(name, parse(NUMBER_FORMATS[fmt]), f"number format {fmt} of {self.model.id}'s KV cache")
        elif name == "kv_bytes_per_token":
            via = KV_BYTES_BY_ATTENTION[self.model.tags["attention"]]
            val = self._record(name, self.value(via),
                               f"derived: {via} ({self.model.tags['attention']} attention of {self.model.id})")
        elif q.origin == "hardware":
            val = self._from_value(name, self.hw, q.field)
        elif q.origin == "model":
            val = self._from_value(name, self.model, q.field)
        else:  # pragma: no cover
            raise TypeError(name)
        self._cache[name] = val
        return val

    def fix(self, name: str, value) -> None:
        """Hold ``name`` (an input or a derived quantity) at ``value``: a number the lecture states.

        Derived values already computed are dropped, so everything downstream uses it.
        """
        if name not in REGISTRY:
            raise InputError(f"unknown quantity {name!r}")
        q = REGISTRY[name]
        try:
            v = parse(value) if isinstance(value, str) else value
            self._fixed[name] = conform(v, q.unit, bare=True)
        except UnitParseError as e:
            raise InputError(f"{name}={value}: {e}") from None
        for n in [n for n in self._cache if not REGISTRY[n].is_input]:
            del self._cache[n]
        self._cache.update(self._fixed)
        self._cache[name] = self._fixed[name]
        if q.is_input:
            self._record(name, self._cache[name], "fixed by the claim")

    def value(self, name: str):
        """The quantity's value (Pint), evaluated through its SymPy definition."""
        if name in self._cache:
            return self._cache[name]
        q = REGISTRY[name]
        if q.is_input:
            return self.input(name)
        try:
            val = walk(q.expr, lambda s: self.value(REGISTRY.q(s).name), where=name)
            val = val.to(parse_unit(q.unit))
        except (ArithmeticError, ValueError) as e:
            raise InputError(f"cannot evaluate {name} for {self.hw.id} x {self.model.id}: "
                             f"{type(e).__name__} ({e}); check the inputs it reads") from None
        if not math.isfinite(val.magnitude):
            raise InputError(f"cannot evaluate {name}: the result is not finite; check the inputs it reads")
        if q.valid and not val.magnitude > 0:
            raise NotApplicable(f"{name} is not applicable: {q.valid}")
        self._cache[name] = val
        return val

    def inputs_of(self, name: str) -> list[InputRecord]:
        """The input records the value of ``name`` used (after evaluating it)."""
        self.value(name)
        out = []
        for q in REGISTRY.leaves(name):
            self.input(q.name)
            out.append(self.records[q.name])
        return out

    def bound(self) -> str:
        """'compute' or 'memory': which side of the roofline sets the step time."""
        return "compute" if self.value("mfu").magnitude >= 1 else "memory"  # MFU = min(1, compute/memory)


def unused_overrides(sc: Scenario) -> list[str]:
    """--set names that no evaluation read (e.g. flops_fp8 while computing in bf16)."""
    return sorted(k for k in sc.overrides if k not in sc.used)
