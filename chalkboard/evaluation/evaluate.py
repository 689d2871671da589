"""The one checked evaluation path: SymPy expressions evaluated with Pint quantities.

``walk`` evaluates an expression tree with Pint arithmetic, so adding seconds to bytes,
or taking the max of a time and a size, raises DimensionMismatch naming the terms. The
dimension check (chalkboard.check) runs the same walk on unit-valued placeholders;
``Scenario`` runs it on the numbers of one hardware x model x workload. What a Scenario is given
before it evaluates (its settings checked, the serving defaults, the held layout, what one input
settles) is defaults.py's, where each input gets its value inputs.py's; it mixes those in with
fit.py and expected.py.
"""
from __future__ import annotations

import math

import sympy as sp

from derivations import REGISTRY
from units import unit as parse_unit

from . import compiled
from ..data.loader import Data
from .defaults import Defaults
from .dependence import FUSE_FROM, depends_on, derived_below
from .expected import Expected
from .fit import Fit
from .settings import AT_ONE_SEQUENCE, DEFAULTS, INLINE_ID, LAYOUT_DEGREES, SETTLED_BY, compute_format_for, with_inline
from ..errors import InputError, MissingInput, NotApplicable, short
from .inputs import InputRecord, Inputs
from .walk import walk


class Scenario(Defaults, Inputs, Fit, Expected):
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
        self.engine = o.pop("engine", None)   # the engine whose own fit the expected numbers take (None: every engine's)
        self.is_dense = "experts" not in self.model.values and "experts" not in o
        self._cache: dict[str, object] = {}
        self._one_sequence = False   # this set-up at one sequence, made when first needed (None: not needed)
        self._fixed: dict[str, object] = {}
        self._fits: dict[float, str | None] = {}
        self._mags: dict[str, float] = {}
        self.records: dict[str, InputRecord] = {}
        self.used: set[str] = set()      # overrides that some evaluation read
        # the engine model fitted to the published measurements (validation.evidence), for an input
        # whose default is "=evidence": a function called only when one is read (None: none loaded)
        self._evidence = None
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
        fn = sp.lambdify(swept, expr, modules=compiled.ARRAY_MODULES)
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
