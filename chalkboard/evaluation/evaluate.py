"""The one checked evaluation path: SymPy expressions evaluated with Pint quantities.

``walk`` evaluates an expression tree with Pint arithmetic, so adding seconds to bytes,
or taking the max of a time and a size, raises DimensionMismatch naming the terms. The
dimension check (chalkboard.check) runs the same walk on unit-valued placeholders;
``Scenario`` runs it on the numbers of one hardware x model x workload. What a Scenario is given
before it evaluates (its settings checked, the serving defaults, the held layout, what one input
settles) is defaults.py's; it mixes that in with fit.py and expected.py.
"""
from __future__ import annotations

from dataclasses import dataclass

import math

import sympy as sp

from derivations import CHOICE_INPUTS, NUMBER_FORMATS, REGISTRY
from units import Quantity, UnitParseError, conform, parse, unit as parse_unit

from . import compiled
from ..data import Data
from .defaults import Defaults
from .dependence import FUSE_FROM, depends_on, derived_below, inputs_below, joined_scope
from .expected import EVIDENCE_INPUTS, Expected  # noqa: F401  (EVIDENCE_INPUTS re-exported)
from .fit import Fit
from .settings import (AT_ONE_SEQUENCE, DEFAULTS, BY_ATTENTION, DENSE_MOE_DEFAULTS, EVIDENCE, INLINE_ID,
                       LAYOUT_DEGREES, SETTLED_BY, compute_format_for, with_inline)
from ..errors import InputError, MissingInput, NotApplicable, NotGiven, short  # noqa: F401  (re-exported)
from .regimes import REGIMES, regime_index
from .walk import walk


@dataclass
class InputRecord:
    name: str
    value: object       # Pint quantity
    source: str         # human-readable provenance
    url: str | None = None
    as_of: str | None = None
    note: str | None = None


class Scenario(Defaults, Fit, Expected):
    """One hardware entry x one model entry x workload settings, evaluated lazily."""

    def __init__(self, data: Data, hardware_id: str, model_id: str, overrides: dict[str, str] | None = None,
                 defaults: str = "lecture"):
        if hardware_id == INLINE_ID and INLINE_ID not in data.hardware:
            data = with_inline(data, "hardware")
        if model_id == INLINE_ID and INLINE_ID not in data.models:
            data = with_inline(data, "models")
        if hardware_id not in data.hardware:
            raise InputError(f"{data.files['hardware']}: unknown hardware id {short(hardware_id)!r} "
                             f"(known: {', '.join(data.hardware)})")
        if model_id not in data.models:
            raise InputError(f"{data.files['models']}: unknown model id {short(model_id)!r} "
                             f"(known: {', '.join(data.models)})")
        self.data, self.hw, self.model = data, data.hardware[hardware_id], data.models[model_id]
        self.raw_overrides = dict(overrides or {})
        self.overrides = self._parse_overrides(overrides or {})
        o = self.overrides
        both = o.pop("format", None)
        self.format = o.pop("weight_format", None) or both or self.model.tags["weight_format"]
        self.kv_format = o.pop("kv_format", None) or self.model.tags.get("kv_format", "bf16")
        self.compute_request = o.pop("compute_format", None) or both
        try:
            self.compute_format, self.compute_note = compute_format_for(self.hw, self.format, self.compute_request, o)
            self._compute_error = None
        except MissingInput as e:  # raised when a FLOP/s is read, so rate-free numbers still evaluate
            self.compute_format, self.compute_note, self._compute_error = None, None, e
        price_id = o.pop("price", None) or data.default_price
        if price_id is not None and price_id not in data.prices:
            raise InputError(f"{data.files.get('prices', 'prices.yaml')}: unknown price id {short(price_id)!r} "
                             f"(known: {', '.join(data.prices)})")
        self.price = data.prices.get(price_id) if price_id is not None else None
        self.is_dense = "experts" not in self.model.values and "experts" not in o
        self._cache: dict[str, object] = {}
        self._one_sequence = False   # this set-up at one sequence, made when first needed (None: not needed)
        self._fixed: dict[str, object] = {}
        self._fits: dict[float, str | None] = {}
        self._mags: dict[str, float] = {}
        self.records: dict[str, InputRecord] = {}
        self.used: set[str] = set()      # overrides that some evaluation read
        # published measurements' efficiencies by regime (validation.summary), for an input whose
        # default is "=evidence": a function called only when one is read (None: none loaded)
        self.evidence = None
        self.pinned: dict[str, tuple[object, str]] = {}   # degrees a stated layout fixes: (value, why)
        if defaults not in DEFAULTS:
            raise InputError(f"defaults={defaults!r}: expected one of {', '.join(DEFAULTS)}")
        self.defaults = defaults
        self._coherent()
        self._prompt_within_context()
        if defaults == "serving":
            self._serving_defaults()
        self._follow_layout()

    @property
    def formats(self) -> dict[str, str | None]:
        return {"weights": self.format, "kv": self.kv_format, "compute": self.compute_format}

    def formats_text(self) -> str:
        if self.compute_format:
            c = self.compute_format
        elif "peak_flops" in self.overrides:   # the rate given whole: the label names what is used
            c = f"at the given peak_flops ({self.compute_request or self.format} rate not published)"
        else:
            c = f"none ({self.compute_request or self.format} rate not published)"
        text = f"weights {self.format}, KV {self.kv_format}, compute {c}"
        return f"{text} ({self.compute_note})" if self.compute_note else text

    # -- inputs ---------------------------------------------------------------------------
    def _entry_of(self, q):
        """(data entry, field) an input of origin hardware, model, price or tier is read from."""
        if q.origin == "model":
            return self.model, q.field
        if q.origin == "hardware":
            return self.hw, q.field
        if q.origin == "price":
            return self.price, q.field
        if q.origin == "tier":
            tier, fld = q.field.split(".", 1)
            return self.data.tiers.get(tier), fld
        return None, None

    def _record(self, name, value, source, url=None, as_of=None, note=None):
        self.records[name] = InputRecord(name, value, source, url, as_of, note)
        return value

    def _from_value(self, name, entry, fld, note=None):
        v = entry.get(fld)
        if v is None:
            raise MissingInput(f"{entry.id} has no {fld}")
        file = self.data.files[{"hardware": "hardware", "model": "models"}.get(entry.kind, "prices")]
        src = v.source.title if entry.file else f"{file}: {entry.id}.{fld}: {v.source.title}"
        if v.source.secondary:
            src += " [secondary source, low confidence]"
        return self._record(name, v.quantity, src,
                            v.source.url, v.as_of, " ".join(x for x in (v.note, note) if x) or None)

    def _peak_flops(self):
        if self._compute_error is not None:
            raise self._compute_error
        fmt = self.compute_format
        if f"flops_{fmt}" in self.overrides:
            self.used.add(f"flops_{fmt}")
            return self._record("peak_flops", self.overrides[f"flops_{fmt}"], "--set", note=self.compute_note)
        return self._from_value("peak_flops", self.hw, f"flops_{fmt}", self.compute_note)

    def _way(self, name: str) -> str:
        """How ``input(name)`` gets its value here, the one place its cases are told apart (input,
        input_reads and input_scope all follow it): "set" (--set), "constant", "rule" / "copy" /
        "literal" (a workload default), "given" (a workload input with no default: a measurement), "flops", "weight format", "kv format", "attention" (through
        the model's attention type), "choice" (a model tag), "dense" (a dense model's expert
        counts), "hardware", "model" or "price" (a price snapshot or a memory tier)."""
        if name in self.overrides:
            return "set"
        if name in self.pinned:
            return "pinned"
        q = REGISTRY[name]
        if q.origin == "constant":
            return "constant"
        if q.origin == "workload":
            d = q.default or ""
            if not d:
                return "given"   # a measurement or a choice only the user can state: no default
            if d == EVIDENCE:
                return "evidence"
            return "rule" if d.startswith("=rule:") else "copy" if d.startswith("=") else "literal"
        if name == "peak_flops":
            return "flops"
        if name == "bytes_per_weight":
            return "weight format"
        if name == "bytes_per_kv_number":
            return "kv format"
        if name in BY_ATTENTION:
            return "attention"
        if name in CHOICE_INPUTS:
            return "choice"
        if name in DENSE_MOE_DEFAULTS and self.is_dense:
            return "dense"
        if q.origin in ("hardware", "model"):
            return q.origin
        if q.origin in ("price", "tier"):
            return "price"
        raise TypeError(name)  # pragma: no cover

    def input(self, name: str):
        if name in self._cache:
            return self._cache[name]
        q = REGISTRY[name]
        way = self._way(name)
        if way == "set":
            self.used.add(name)
            val = self._record(name, self.overrides[name], "--set")
        elif way == "pinned":
            val = self._record(name, *self.pinned[name])
        elif way == "constant":
            val = self._record(name, parse(q.default), f"constant: {q.source}")
        elif way == "rule":
            fn, args, desc = REGISTRY.rules[q.default[6:]]
            optional = REGISTRY.rule_optional.get(q.default[6:], ())
            mags = []
            for a in args:
                try:
                    mags.append(self.input(a).to(REGISTRY[a].unit or "").magnitude)
                except MissingInput:
                    if a not in optional:
                        raise
                    mags.append(None)   # the rule says where it needs it
            try:
                result = fn(*mags)
            except ValueError as e:
                raise InputError(f"cannot choose {name} for {self.hw.id} x {self.model.id}: {e}") from None
            val = self._record(name, Quantity(result, q.unit), f"workload default: {desc}")
        elif way == "copy":
            ref = q.default[1:]
            try:
                got = self.input(ref)
            except MissingInput as e:   # name what to give: this input, not the field its default copies
                raise MissingInput(f"{name} ({q.meaning}) has no value here: give it with --set {name}=VALUE "
                                   f"in {q.unit or 'a plain number'} ({e})") from None
            val = self._record(name, got.to(parse_unit(q.unit)), f"workload default: {self.whose(ref)}")
        elif way == "given":
            raise NotGiven(f"{name} ({q.meaning}) has no default: give it with --set {name}=VALUE "
                           f"in {q.unit or 'a plain number'}", name)
        elif way == "evidence":
            val = self._from_evidence(name)
        elif way == "literal":
            val = self._record(name, parse(q.default), f"workload default ({q.source or 'lecture'})")
        elif way == "flops":
            val = self._peak_flops()
        elif way == "weight format":
            b = parse(NUMBER_FORMATS[self.format]) / Quantity(1, "parameter")
            val = self._record(name, b, f"weight format {self.format} ({NUMBER_FORMATS[self.format]} per weight)")
        elif way == "kv format":
            val = self._record(name, parse(NUMBER_FORMATS[self.kv_format]),
                               f"KV format {self.kv_format} ({NUMBER_FORMATS[self.kv_format]} per number)")
        elif way == "attention":
            if "attention" not in self.model.tags:
                raise MissingInput(f"{self.model.id} names no attention type: give {name} with --set")
            via = BY_ATTENTION[name][self.model.tags["attention"]]
            val = self._record(name, self.value(via),
                               f"derived: {via} ({self.model.tags['attention']} attention of {self.model.id})")
        elif way == "choice":
            tag, table = CHOICE_INPUTS[name]
            entry, file = (self.hw, "hardware") if q.origin == "hardware" else (self.model, "models")
            choice = entry.tags.get(tag)
            if choice is None and None in table:   # not published: the choice's stated fallback
                fallback, why = table[None]
                val = self._record(name, parse(table[fallback]), f"{entry.id} gives no {tag}: {why}")
            elif choice is None:
                raise MissingInput(f"{entry.id} has no {tag} ({' or '.join(k for k in table if k)})")
            else:
                where = entry.tag_sources.get(tag) or f"{self.data.files[file]}: {entry.id}.{tag}"
                val = self._record(name, parse(table[choice]), f"{where}: {choice}")
        elif way == "dense":
            val = self._record(name, Quantity(DENSE_MOE_DEFAULTS[name], q.unit),
                               f"{self.model.id} is dense: no routed experts (E = k = 1, no MoE layers)")
        elif way in ("hardware", "model"):
            val = self._from_value(name, self.hw if way == "hardware" else self.model, q.field)
        else:  # a price snapshot's or a memory tier's
            entry, fld = self._entry_of(q)
            if entry is None:
                what = "no price snapshot (no prices.yaml, or none selected with --set price=ID)" \
                    if q.origin == "price" else f"prices.yaml has no memory tier {q.field.split('.')[0]!r}"
                raise MissingInput(f"{name}: {what}")
            val = self._from_value(name, entry, fld)
        self._cache[name] = val
        return val

    def regime(self) -> str:
        """The roofline regime of this set-up, as validate classifies a published measurement:
        compute-bound, or memory-bound at a small or a large batch (the strict bound's terms)."""
        memory = self._mag("weight_fetch_time_min") + self._mag("kv_fetch_time")
        return REGIMES[int(regime_index(self._mag("compute_time"), memory, self.mag("batch", "sequence")))]

    def whose(self, name: str) -> str:
        """An input named with whose it is: "gb200-nvl72's scaleup_bandwidth", "deepseek-v3's
        d_model", "the constant cache_lifetime_5m"."""
        origin = REGISTRY[name].origin
        owner = {"hardware": self.hw.id, "model": self.model.id}.get(origin)
        return f"{owner}'s {name}" if owner else f"the {origin} {name}"

    def input_reads(self, name: str) -> tuple[str, ...]:
        """The other inputs ``input(name)`` reads (and records) in computing ``name`` here: a
        workload default's rule arguments or the input it copies, and the inputs below the derived
        quantity an attention-specific input is evaluated through."""
        way = self._way(name)
        if way == "rule":
            return tuple(REGISTRY.rules[REGISTRY[name].default[6:]][1])
        if way == "copy":
            return (REGISTRY[name].default[1:],)
        if way == "attention" and "attention" in self.model.tags:
            return inputs_below(BY_ATTENTION[name][self.model.tags["attention"]])
        return ()

    def input_scope(self, name: str) -> str:
        """What ``input(name)``'s value and record depend on, beyond the overrides (the same in
        every pair of one evaluation): "all" (nothing: --set, a constant, a workload literal, a
        price), "hardware" (the chip entry), "model" (the model entry, its formats and attention
        type) or "pair" (both: the FLOP/s, read at a format the chip and the model choose together).
        A failure's message may name either entry whatever the scope (an InputError is evaluated
        per pair)."""
        way = self._way(name)
        if way == "choice":
            return REGISTRY[name].origin
        if way in ("rule", "copy", "attention"):   # what it reads, and the model's attention type
            return joined_scope([*(self.input_scope(r) for r in self.input_reads(name)),
                            *(["model"] if way == "attention" else [])])
        return _WAY_SCOPE[way]

    def keep_only(self, names: set[str]) -> None:
        """Forget every input outside ``names`` (its value and its record), as if only ``names``
        had been read: a scenario that evaluated every input can then stand for one that read these."""
        self.records = {n: r for n, r in self.records.items() if n in names}
        for n in [n for n in self._cache if n not in names and REGISTRY[n].is_input]:
            del self._cache[n]
            self._mags.pop(n, None)
        for n in [n for n in self._mags if n not in names and REGISTRY[n].is_input]:
            del self._mags[n]

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
        self._mags.clear()
        self._fits.clear()
        self._cache.update(self._fixed)
        self._cache[name] = self._fixed[name]
        if q.is_input:
            self._record(name, self._cache[name], "fixed by the claim")

    def _mag(self, name: str) -> float:
        """The value of ``name`` as a float in base units, through the compiled definitions."""
        m = self._mags.get(name)
        if m is not None:
            return m
        q = REGISTRY[name]
        if q.is_input or name in self._fixed:
            m = compiled.to_base(self._cache[name] if name in self._fixed else self.input(name))
        elif (m := self.settled(name)) is not None:
            pass
        else:
            if q.moe_only and self.is_dense:
                raise NotApplicable(f"{name} is not applicable: {self.model.id} is a dense model (no routed experts)")
            fn, args = compiled.scalar(name)
            vals = [self._mag(a) for a in args]
            try:
                m = fn(*vals)
            except (ArithmeticError, ValueError) as e:
                raise InputError(f"cannot evaluate {name} for {self.hw.id} x {self.model.id}: "
                                 f"{type(e).__name__} ({e}); check the inputs it reads") from None
            if isinstance(m, complex):
                raise InputError(f"cannot evaluate {name} for {self.hw.id} x {self.model.id}: a negative "
                                 f"number under a fractional power; check the inputs it reads")
            m = float(m)
            if not math.isfinite(m):
                raise InputError(f"cannot evaluate {name}: the result is not finite; check the inputs it reads")
            if q.valid and not m > 0:
                raise NotApplicable(f"{name} is not applicable: {q.valid}")
        self._mags[name] = m
        return m

    def reads(self, name: str) -> set[str]:
        """The inputs evaluating ``name`` reads here: its definition's, all the way down, except
        below a quantity an input settles (``settled``), where that input alone."""
        out: set[str] = set()

        def visit(n):
            if n in out:
                return
            if REGISTRY[n].is_input or n in self._fixed:
                out.add(n)
                return
            if n in AT_ONE_SEQUENCE and self._at_one_sequence(n) is not None:
                out.update((self._at_one_sequence(n).reads(AT_ONE_SEQUENCE[n]) - {"batch"}) | {"one_sequence"})
                return
            if self.settled(n) is not None:
                by, _, value = SETTLED_BY[n]
                out.update(x for x in (by, value) if isinstance(x, str))
                return
            for a in compiled.scalar(n)[1]:
                visit(a)
        visit(name)
        return out

    def base_value(self, name: str) -> float:
        """The value of ``name`` as a float in the registry's base units."""
        return self._mag(name)

    def mag(self, name: str, unit: str | None = None) -> float:
        """The value of ``name`` as a float, in ``unit`` (default: its declared unit)."""
        m = self._mag(name)
        return m / compiled.declared(name)[1] if unit is None else compiled.in_unit(m, name, unit)

    def value(self, name: str):
        """The quantity's value (Pint, in its declared unit), computed through the compiled path."""
        if name in self._cache:
            return self._cache[name]
        q = REGISTRY[name]
        if q.is_input:
            return self.input(name)
        val = compiled.from_base(name, self._mag(name))
        self._cache[name] = val
        return val

    def pint_value(self, name: str):
        """The same value through the Pint walk of the definition (the reference path, for tests)."""
        q = REGISTRY[name]
        if q.is_input or name in self._fixed:
            return self.value(name)
        if self.settled(name) is not None:
            return self.value(name)
        if q.moe_only and self.is_dense:
            raise NotApplicable(f"{name} is not applicable: {self.model.id} is a dense model (no routed experts)")
        val = walk(q.expr, lambda s: self.pint_value(REGISTRY.q(s).name), where=name).to(parse_unit(q.unit))
        if q.valid and not val.magnitude > 0:
            raise NotApplicable(f"{name} is not applicable: {q.valid}")
        return val

    def _fusable(self, name: str, vars_: tuple) -> bool:
        """A closed form with no domain check or held value below it can be evaluated in one piece."""
        below = derived_below(name)
        if self._fixed or self.is_dense and any(REGISTRY[d].moe_only for d in below):
            return False
        if any(self.settled(d) is not None for d in below if d in SETTLED_BY):
            return False   # the closed form would read what the settled term leaves unread
        for d in below:
            if REGISTRY[d].valid:
                if any(depends_on(d, v) for v in vars_):
                    return False
                self._mag(d)  # a domain check that does not move with the sweep: applied once
        return True

    def _fused(self, name: str, xs: dict):
        """The closed form with every input but the swept ones replaced by its number, compiled
        once: for large sweeps, the fewest array operations (numbers fold together)."""
        import numpy as np

        closed = REGISTRY.closed_form(name)
        swept = [REGISTRY[v].sym for v in xs]
        expr = closed.xreplace({s: sp.Float(self._mag(REGISTRY.q(s).name))
                                for s in closed.free_symbols if s not in swept})
        fn = sp.lambdify(swept, expr, modules=compiled._ARRAY)
        shape = next(iter(xs.values())).shape
        with np.errstate(all="ignore"):
            return np.broadcast_to(np.asarray(fn(*xs.values()), dtype=float), shape)

    def sweep(self, names, var: str, values, unit: str | None = None) -> dict:
        """Each quantity in ``names`` as a numpy array, with input ``var`` swept over ``values``
        (in ``unit``, default its declared unit); everything else as in this scenario.
        Values outside a quantity's domain are NaN."""
        return self.sweep_many(names, {var: (values, unit)})

    def sweep_many(self, names, axes: dict) -> dict:
        """Like ``sweep`` over several inputs at once: ``axes`` maps each input to (values, unit),
        all of one shape (a grid flattened by the caller, or points side by side)."""
        import numpy as np

        xs = {}
        for var, (values, unit) in axes.items():
            if var not in REGISTRY or not REGISTRY[var].is_input:
                raise InputError(f"cannot sweep {var}: it is not an input (see `python build.py list quantities`)")
            xs[var] = np.asarray(values, dtype=float) * compiled.base_factor(parse_unit(unit or REGISTRY[var].unit))
        shapes = {a.shape for a in xs.values()}
        if len(shapes) != 1:
            raise InputError("swept inputs must have the same number of points")
        shape = shapes.pop()
        memo = dict(xs)

        def moving(n):
            return any(depends_on(n, v) for v in xs)

        def get(n):
            if n in memo:
                return memo[n]
            q = REGISTRY[n]
            if q.is_input or n in self._fixed or not moving(n):
                v = self._mag(n)
            elif n in SETTLED_BY and not moving(SETTLED_BY[n][0]) and self.settled(n) is not None:
                v = self._mag(n)
            else:
                if q.moe_only and self.is_dense:
                    raise NotApplicable(f"{n} is not applicable: {self.model.id} is a dense model")
                fn, args = compiled.array(n)
                with np.errstate(all="ignore"):
                    v = fn(*[get(a) for a in args])
                if q.valid:
                    v = np.where(v > 0, v, np.nan)
            memo[n] = v
            return v

        out = {}
        size = int(np.prod(shape))
        for n in names:
            f = compiled.declared(n)[1]
            if size >= FUSE_FROM and self._fusable(n, tuple(xs)):
                out[n] = self._fused(n, xs) / f
                continue
            v = np.asarray(get(n), dtype=float)
            out[n] = np.full(shape, v / f) if v.ndim == 0 else (v if f == 1 else v / f)
        return out

    def inputs_of(self, name: str) -> list[InputRecord]:
        """The input records the value of ``name`` used (after evaluating it)."""
        self.value(name)
        read = self.reads(name)
        if self.one_chip():   # nothing to split: the degrees are 1 by the chips, not defaults to report
            read -= {n for n in LAYOUT_DEGREES + ("ep",) if n not in self.overrides}
        out = []
        for q in REGISTRY.leaves(name):
            if q.name in read:
                self.input(q.name)
                out.append(self.records[q.name])
        return out

    def bound(self) -> str:
        """'compute' or 'memory': which side of the roofline sets the step time."""
        return "compute" if self.value("mfu").magnitude >= 1 else "memory"  # MFU = min(1, compute/memory)


_WAY_SCOPE = {"set": "all", "pinned": "pair", "constant": "all", "literal": "all", "given": "all", "evidence": "pair", "price": "all", "flops": "pair",
              "weight format": "model", "kv format": "model", "choice": "model", "dense": "model",
              "model": "model", "hardware": "hardware"}
