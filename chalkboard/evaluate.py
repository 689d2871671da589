"""The one checked evaluation path: SymPy expressions evaluated with Pint quantities.

``walk`` evaluates an expression tree with Pint arithmetic, so adding seconds to bytes,
or taking the max of a time and a size, raises DimensionMismatch naming the terms. The
dimension check (chalkboard.check) runs the same walk on unit-valued placeholders;
``Scenario`` runs it on the numbers of one hardware x model x workload.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import math

import sympy as sp
from sympy.core.function import AppliedUndef

from derivations import (ATTENTION_FLOPS_BY_ATTENTION, ATTENTION_PARAMS_BY_ATTENTION, CHOICE_INPUTS,
                         KV_BYTES_BY_ATTENTION, KV_SHARDS_BY_ATTENTION, NUMBER_FORMATS, REGISTRY)
from units import Quantity, UnitParseError, conform, magnitude_problem, parse, unit as parse_unit

from . import compiled
from .regimes import REGIMES, regime_index
from .data import (FORMATS_ORDER, HARDWARE_WHOLE_NUMBER_FIELDS, MAY_BE_ZERO, RATE_FORMATS,
                   WHOLE_NUMBER_FIELDS, Data)
from .errors import InputError, MissingInput, NotApplicable, NotGiven  # noqa: F401  (re-exported)


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
        b, x = base.to("").magnitude, exp.to("").magnitude
        if b < 0:
            if not dims_only:
                raise ValueError(f"{expr.args[0]} is negative ({b:g}) under a fractional power")
            b = -b
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


@dataclass
class InputRecord:
    name: str
    value: object       # Pint quantity
    source: str         # human-readable provenance
    url: str | None = None
    as_of: str | None = None
    note: str | None = None


FORMAT_KEYS = ("format", "weight_format", "kv_format", "compute_format")
SELECT_KEYS = ("price",)   # --set price=ID picks a price snapshot of prices.yaml
# --hardware / --model id of an entry given wholly with --set (a chip or model not in the files)
INLINE_ID = "custom"
DENSE_MOE_DEFAULTS = {"experts": 1.0, "experts_per_token": 1.0, "moe_layers": 0.0, "d_expert": 0.0,
                      "shared_experts": 0.0}
BY_ATTENTION = {"kv_bytes_per_token": KV_BYTES_BY_ATTENTION,
                "attention_flops_per_token": ATTENTION_FLOPS_BY_ATTENTION,
                "attention_params_per_layer": ATTENTION_PARAMS_BY_ATTENTION,
                "kv_shards": KV_SHARDS_BY_ATTENTION}
# counts an override must give as whole numbers: the model's, the hardware's and the workload's
WHOLE_NUMBERS = (*WHOLE_NUMBER_FIELDS, *HARDWARE_WHOLE_NUMBER_FIELDS, "batch", "chips", "racks",
                 "index_heads", "index_head_dim", "ring_chips", "ring_directions", "collective_axes",
                 "optimizer_moments", "matmul_m", "matmul_k", "matmul_n", "tp", "pp", "ep", "dp_attention",
                 "train_tp", "train_pp", "train_dp", "zero_stage", "virtual_stages")
# a layout's degree and what it must divide: (degree, the model's count, why)
DIVIDES = (("tp", "n_heads", "each tensor-parallel rank holds whole query heads"),
           ("ep", "experts", "each chip of the expert-parallel group holds whole experts"),
           ("pp", "layers", "each pipeline stage holds whole layers"),
           ("train_tp", "n_heads", "each tensor-parallel rank holds whole query heads"),
           ("train_pp", "layers", "each pipeline stage holds whole layers"))
# the degrees that state a layout (derivations/layout.py): setting any of them sets the chips
LAYOUT_DEGREES = ("tp", "dp_attention", "pp")
# a workload default read from the published measurements of the set-up's regime (Scenario.evidence)
EVIDENCE = "=evidence"
# inputs with a largest meaningful value: (the value, what it means)
AT_MOST = {"zero_stage": (3, "ZeRO stage 3 partitions everything: the parameters, gradients and optimizer state"),
           "sequence_parallel": (1, "a switch: 1 with sequence parallelism, 0 without")}
# pairs (smaller, larger) that a coherent model keeps in order, with what breaking it means
ORDERED = (("params_active", "params_total", "the sparsity N_total/N_active would be below 1"),
           ("experts_per_token", "experts", "a token cannot use more experts than there are"),
           ("moe_layers", "layers", "more MoE layers than layers"),
           ("n_kv_heads", "n_heads", "more KV heads than query heads"))


def _has_rate(hw, f: str, overrides) -> bool:
    return f"flops_{f}" in hw.values or f"flops_{f}" in overrides


def _rates(hw) -> list[str]:
    return [f for f in RATE_FORMATS if f"flops_{f}" in hw.values]


def _compute_format(hw, weight_format: str, explicit: str | None, overrides=()) -> tuple[str, str | None]:
    """The format the chip computes in and, when it is not the one asked for, a note saying so.

    Asked for explicitly (--set compute_format / format), the chip must publish that rate (or
    --set gives it). By default: the weight format if the chip has a rate for it (integer
    weights are dequantised to bf16, the usual weight-only quantisation), else the next wider
    float format it has -- an explicit fallback, carried in the note.
    """
    have = _rates(hw)
    if explicit is not None:
        if _has_rate(hw, explicit, overrides):
            return explicit, None
        raise MissingInput(f"{hw.id} lists no {explicit} FLOP/s (it lists {', '.join(have) or 'none'}); "
                           f"use --set compute_format={have[-1] if have else 'bf16'}, or give the rate "
                           f"with --set flops_{explicit}=...")
    wanted = weight_format if weight_format in FORMATS_ORDER else "bf16"
    if _has_rate(hw, wanted, overrides):
        note = None if wanted == weight_format else f"{weight_format} weights dequantised to bf16 for compute"
        return wanted, note
    for f in FORMATS_ORDER[FORMATS_ORDER.index(wanted):]:
        if _has_rate(hw, f, overrides):
            return f, f"{hw.id} has no {wanted} rate: computing at its {f} rate"
    if not have:
        raise MissingInput(f"{hw.id} lists no FLOP/s: give the rate with --set flops_{wanted}=...")
    raise MissingInput(f"{hw.id} lists no FLOP/s for {wanted} or wider (it lists {', '.join(have)}); "
                       f"use --set compute_format={have[-1]}, or give the rate with --set flops_{wanted}=...")


def _with_inline(data: Data, kind: str) -> Data:
    """``data`` with an empty entry ``custom`` of ``kind`` ("hardware" or "models"): every value it
    is asked for comes from --set (else the evaluation says which input to give)."""
    import dataclasses

    from .data import Entry

    if kind == "hardware":
        entry = Entry(INLINE_ID, "a chip given with --set", "hardware")
    else:  # number formats as for a model published in bf16; --set weight_format=... changes them
        entry = Entry(INLINE_ID, "a model given with --set", "model",
                      tags={"weight_format": "bf16", "kv_format": "bf16"})
    table = {**getattr(data, kind), INLINE_ID: entry}
    return dataclasses.replace(data, **{kind: table})


class Scenario:
    """One hardware entry x one model entry x workload settings, evaluated lazily."""

    def __init__(self, data: Data, hardware_id: str, model_id: str, overrides: dict[str, str] | None = None):
        if hardware_id == INLINE_ID and INLINE_ID not in data.hardware:
            data = _with_inline(data, "hardware")
        if model_id == INLINE_ID and INLINE_ID not in data.models:
            data = _with_inline(data, "models")
        if hardware_id not in data.hardware:
            raise InputError(f"{data.files['hardware']}: unknown hardware id {hardware_id!r} "
                             f"(known: {', '.join(data.hardware)})")
        if model_id not in data.models:
            raise InputError(f"{data.files['models']}: unknown model id {model_id!r} "
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
            self.compute_format, self.compute_note = _compute_format(self.hw, self.format, self.compute_request, o)
            self._compute_error = None
        except MissingInput as e:  # raised when a FLOP/s is read, so rate-free numbers still evaluate
            self.compute_format, self.compute_note, self._compute_error = None, None, e
        price_id = o.pop("price", None) or data.default_price
        if price_id is not None and price_id not in data.prices:
            raise InputError(f"{data.files.get('prices', 'prices.yaml')}: unknown price id {price_id!r} "
                             f"(known: {', '.join(data.prices)})")
        self.price = data.prices.get(price_id) if price_id is not None else None
        self.is_dense = "experts" not in self.model.values and "experts" not in o
        self._cache: dict[str, object] = {}
        self._fixed: dict[str, object] = {}
        self._fits: dict[float, str | None] = {}
        self._mags: dict[str, float] = {}
        self.records: dict[str, InputRecord] = {}
        self.used: set[str] = set()      # overrides that some evaluation read
        # published measurements' efficiencies by regime (validation.summary), for an input whose
        # default is "=evidence": a function called only when one is read (None: none loaded)
        self.evidence = None
        self.pinned: dict[str, tuple[object, str]] = {}   # degrees a stated layout fixes: (value, why)
        self._coherent()
        self._follow_layout()

    @property
    def formats(self) -> dict[str, str | None]:
        return {"weights": self.format, "kv": self.kv_format, "compute": self.compute_format}

    def formats_text(self) -> str:
        c = self.compute_format or f"none ({self.compute_request or self.format} rate not published)"
        text = f"weights {self.format}, KV {self.kv_format}, compute {c}"
        return f"{text} ({self.compute_note})" if self.compute_note else text

    # -- overrides ------------------------------------------------------------------------
    def _parse_overrides(self, raw: dict[str, str]) -> dict:
        out = {}
        field_to_q = _fields_to_inputs(len(REGISTRY.quantities)) if raw else {}
        for name, text in raw.items():
            if name in SELECT_KEYS:
                if not text:
                    raise InputError(f"--set {name}=: give a price id of prices.yaml")
                out[name] = text
                continue
            if name in FORMAT_KEYS:
                allowed = RATE_FORMATS if name == "compute_format" else tuple(NUMBER_FORMATS)
                if text not in allowed:
                    raise InputError(f"--set {name}={text}: expected one of {', '.join(allowed)}")
                out[name] = text
                continue
            key = name
            if name.startswith("flops_") and name[6:] in RATE_FORMATS:
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
            problem = magnitude_problem(v, allow_zero=key in MAY_BE_ZERO)
            if problem:
                raise InputError(f"--set {name}={text}: {problem} (it divides, or counts something)"
                                 if problem == "must be positive" else f"--set {name}={text}: {problem}")
            if key in AT_MOST and v.magnitude > AT_MOST[key][0]:
                raise InputError(f"--set {name}={text}: at most {AT_MOST[key][0]:g} ({AT_MOST[key][1]})")
            out[key] = v
        return out

    def _given(self, name: str):
        """An input's magnitude in its declared unit, from --set or the model or hardware entry, if any."""
        q = REGISTRY[name]
        if name in self.overrides:
            v = self.overrides[name]
        else:
            entry, fld = self._entry_of(q)
            val = entry.get(fld) if entry is not None and fld else None
            if val is None:
                return None
            v = val.quantity
        return v.to(q.unit or "").magnitude

    def _coherent(self) -> None:
        """--set values that contradict each other or the model are errors naming the conflict."""
        if not self.overrides:
            return
        for name in WHOLE_NUMBERS:
            if name in self.overrides:
                v = self._given(name)
                if abs(v - round(v)) > 1e-9:
                    raise InputError(f"--set {name}={v:g}: must be a whole number (it counts something)")
        for small, large, why in ORDERED:
            if small not in self.overrides and large not in self.overrides:
                continue
            a, b = self._given(small), self._given(large)
            if a is not None and b is not None and a > b * (1 + 1e-12):
                set_ = small if small in self.overrides else large
                raise InputError(f"--set {set_}: {small} ({a:g}) exceeds {large} ({b:g}) "
                                 f"for {self.model.id}: {why}")
        for part, whole, why in DIVIDES:
            if part not in self.overrides:
                continue
            a, b = self._given(part), self._given(whole)
            if a is not None and b is not None and a >= 1 and abs(b / a - round(b / a)) > 1e-9:
                raise InputError(f"--set {part}={a:g}: {self.model.id}'s {whole} ({b:g}) is not a multiple of "
                                 f"it: {why}")

    def _follow_layout(self) -> None:
        """Setting any of tp, dp_attention, pp states a layout: the chips follow from it (tp ·
        dp_attention · pp), and the degrees not set are chosen for the chips the set-up would
        otherwise have (its scale-up domain), then held, so every quantity reads one layout."""
        o = self.overrides
        if "chips" in o or not any(n in o for n in LAYOUT_DEGREES):
            return
        chips0 = self.mag("chips")
        pp, tp = self.mag("pp"), self.mag("tp")
        if "dp_attention" in o:
            dp = self.mag("dp_attention")
        else:   # the chips left after tp · pp serve further groups; none left: one group
            g = chips0 / (tp * pp)
            dp = round(g) if g >= 1 and abs(g - round(g)) < 1e-9 else 1
        given = ", ".join(f"{n} = {self.mag(n):g}" for n in LAYOUT_DEGREES if n in o)
        held = {"chips": (tp * dp * pp, f"the layout: tp · dp_attention · pp (set by {given})")}
        for n, v in (("tp", tp), ("dp_attention", dp), ("pp", pp)):
            if n not in o:
                held[n] = (v, f"workload default for the layout set by {given}: "
                              f"{self.records[n].source.removeprefix('workload default: ')}"
                           if n in self.records else f"the layout set by {given}")
        self._cache.clear()
        self._mags.clear()
        self.records.clear()
        self.used.clear()
        self.pinned = {n: (Quantity(v, REGISTRY[n].unit or ""), why) for n, (v, why) in held.items()}

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
            mags = [self.input(a).to(REGISTRY[a].unit or "").magnitude for a in args]
            try:
                result = fn(*mags)
            except ValueError as e:
                raise InputError(f"cannot choose {name} for {self.hw.id} x {self.model.id}: {e}") from None
            val = self._record(name, Quantity(result, q.unit), f"workload default: {desc}")
        elif way == "copy":
            ref = q.default[1:]
            val = self._record(name, self.input(ref).to(parse_unit(q.unit)), f"workload default: {self.whose(ref)}")
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
            choice = self.model.tags.get(tag)
            if choice is None:
                raise MissingInput(f"{self.model.id} has no {tag} ({' or '.join(table)})")
            where = (self.model.tag_sources.get(tag)
                     or f"{self.data.files['models']}: {self.model.id}.{tag}")
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

    def _from_evidence(self, name: str):
        """The median efficiency published measurements reach in this set-up's regime, with their
        spread and count as its source (an input whose default is "=evidence")."""
        q = REGISTRY[name]
        if self.evidence is None:
            raise NotGiven(f"{name} ({q.meaning}) has no default here: give it with --set {name}=VALUE "
                           f"(`eval` takes it from the published measurements of the set-up's regime)", name)
        regime = self.regime()
        st = self.evidence().get(regime, {"n": 0})
        if not st.get("n"):
            raise NotGiven(f"{name}: no published measurement in this set-up's regime ({regime}): give it "
                           f"with --set {name}=VALUE", name)
        src = (f"evidence: {st['n']} published measurements in this regime ({regime}) reach "
               f"{st['min']:.2g}–{st['max']:.2g} of the strict bound (interquartile {st['q1']:.2g}–"
               f"{st['q3']:.2g}), median {st['median']:.2g} ({self.data.files.get('measurements', 'measurements.yaml')}; "
               f"`validate`)")
        return self._record(name, Quantity(st["median"], q.unit or ""), src)

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
            return _inputs_below(BY_ATTENTION[name][self.model.tags["attention"]])
        return ()

    def input_scope(self, name: str) -> str:
        """What ``input(name)``'s value and record depend on, beyond the overrides (the same in
        every pair of one evaluation): "all" (nothing: --set, a constant, a workload literal, a
        price), "hardware" (the chip entry), "model" (the model entry, its formats and attention
        type) or "pair" (both: the FLOP/s, read at a format the chip and the model choose together).
        A failure's message may name either entry whatever the scope (an InputError is evaluated
        per pair)."""
        way = self._way(name)
        if way in ("rule", "copy", "attention"):   # what it reads, and the model's attention type
            return _joined([*(self.input_scope(r) for r in self.input_reads(name)),
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
        if q.moe_only and self.is_dense:
            raise NotApplicable(f"{name} is not applicable: {self.model.id} is a dense model (no routed experts)")
        val = walk(q.expr, lambda s: self.pint_value(REGISTRY.q(s).name), where=name).to(parse_unit(q.unit))
        if q.valid and not val.magnitude > 0:
            raise NotApplicable(f"{name} is not applicable: {q.valid}")
        return val

    def _fusable(self, name: str, vars_: tuple) -> bool:
        """A closed form with no domain check or held value below it can be evaluated in one piece."""
        below = _derived_below(name)
        if self._fixed or self.is_dense and any(REGISTRY[d].moe_only for d in below):
            return False
        for d in below:
            if REGISTRY[d].valid:
                if any(_depends_on(d, v) for v in vars_):
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
            return any(_depends_on(n, v) for v in xs)

        def get(n):
            if n in memo:
                return memo[n]
            q = REGISTRY[n]
            if q.is_input or n in self._fixed or not moving(n):
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
        out = []
        for q in REGISTRY.leaves(name):
            self.input(q.name)
            out.append(self.records[q.name])
        return out

    def bound(self) -> str:
        """'compute' or 'memory': which side of the roofline sets the step time."""
        return "compute" if self.value("mfu").magnitude >= 1 else "memory"  # MFU = min(1, compute/memory)

    # -- does it fit? ---------------------------------------------------------------------
    def _memory(self, batch: float):
        """(weights per chip, KV cache of ``batch`` sequences per chip, HBM per chip) as floats in
        base units, from the declared weights_per_chip and kv_per_chip (the KV term scaled to the
        batch asked for): what the fit is decided on."""
        b_now = self.mag("batch", "sequence")   # the batch, the KV cache, the weights, the HBM: read in this order
        kv = self._mag("kv_per_chip") * (batch / b_now)
        return self._mag("weights_per_chip"), kv, self._mag("hbm_capacity")

    def fill(self, batch: float | None = None) -> float | None:
        """Share of each chip's HBM the weights and the KV cache of ``batch`` sequences need."""
        try:
            w, kv, cap = self._memory(self.mag("batch", "sequence") if batch is None else batch)
        except MissingInput:
            return None
        return (w + kv) / cap

    def fit(self, batch: float | None = None) -> str | None:
        """None if the weights and the KV cache of ``batch`` sequences (default: the workload's)
        fit in the chips' HBM; otherwise the reason, in one sentence. Unknown inputs: None."""
        if batch in self._fits:  # the workload's batch (None) asked for again and again by flag()
            return self._fits[batch]
        if batch is None:
            self._fits[None] = self.fit(self.mag("batch", "sequence"))
            return self._fits[None]
        try:
            w, kv, cap = self._memory(batch)
            chips = self.mag("chips", "chip")
        except MissingInput:
            self._fits[batch] = None
            return None
        reason = None
        if w > cap:
            reason = (f"does not fit: the weights alone need {self._shown('weights_per_chip', w)} on "
                      f"{chips:g} chips, more than the {self._shown('hbm_capacity')} of HBM each has")
        elif w + kv > cap:
            try:
                most = f"; at most {self._shown('max_batch_capacity')} fit"
            except MissingInput:
                most = "; not one sequence fits beside the weights"
            reason = (f"does not fit: weights and the KV cache of {batch:,.0f} sequences of "
                      f"{self._shown('context')} need {self._shown('weights_per_chip', w + kv)}, more than the "
                      f"{self._shown('hbm_capacity')} of HBM ({(w + kv) / cap:.0%}){most}, so a step would read "
                      f"more than the whole HBM")
        self._fits[batch] = reason
        return reason

    def fill_pipelined(self) -> float | None:
        """Share of each chip's HBM a pipelined set-up needs (hbm_fill_pipelined); None if unknown."""
        try:
            return self.mag("hbm_fill_pipelined", "")
        except (MissingInput, NotApplicable):
            return None

    def fit_pipelined(self) -> str | None:
        """None if, with the model cut into pipeline_stages stages of S chips and one balance-batch
        micro-batch per stage in flight, each chip's share of the weights and KV cache fits in its
        HBM; otherwise the reason, in one sentence. Unknown inputs: None."""
        if "pipelined" not in self._fits:  # asked for again and again by flag()
            self._fits["pipelined"] = self._fit_pipelined()
        return self._fits["pipelined"]

    def _fit_pipelined(self) -> str | None:
        fill = self.fill_pipelined()
        if fill is None or fill <= 1:
            return None
        stages = self.mag("pipeline_stages", "")
        return (f"does not fit: with {stages:g} pipeline stage{'s' if stages != 1 else ''} of "
                f"{self._shown('chips')} and one micro-batch of {self._shown('balance_batch')} per "
                f"stage in flight, each chip needs {self._shown('weights_per_chip_pipelined')} of weights "
                f"and {self._shown('kv_per_chip_pipelined')} of KV cache, more than its "
                f"{self._shown('hbm_capacity')} of HBM ({fill:.0%}); more stages shrink only the weights")

    def fit_layout(self, batch: float | None = None) -> str | None:
        """None if, under the layout (tp, dp_attention, ep, pp), each chip's weights and KV cache of
        ``batch`` sequences (default: the workload's) fit in its HBM; otherwise the reason, in one
        sentence. Unknown inputs: None."""
        key = ("layout", batch)
        if key not in self._fits:
            self._fits[key] = self._fit_layout(batch)
        return self._fits[key]

    def _layout_memory(self, batch: float | None):
        """(weights, weights + KV of ``batch`` sequences, HBM) per chip under the layout, base units."""
        w, kv = self._mag("weights_per_chip_layout"), self._mag("kv_per_chip_layout")
        workload = self.mag("batch", "sequence")
        b = workload if batch is None else batch
        return w, w + kv * b / workload, self._mag("hbm_capacity")

    def fill_layout(self, batch: float | None = None) -> float | None:
        """Share of each chip's HBM the layout needs with ``batch`` sequences; None if unknown."""
        try:
            _, need, cap = self._layout_memory(batch)
        except (MissingInput, NotApplicable):
            return None
        return need / cap

    def _fit_layout(self, batch: float | None) -> str | None:
        try:
            w, need, cap = self._layout_memory(batch)
            layout = ", ".join(f"{n} = {self.mag(n, ''):g}" for n in ("tp", "dp_attention", "ep", "pp"))
        except (MissingInput, NotApplicable):
            return None
        b = self.mag("batch", "sequence") if batch is None else batch
        if w > cap:
            return (f"does not fit: under the layout ({layout}) each chip holds "
                    f"{self._shown('weights_per_chip_layout', w)} of weights, more than its "
                    f"{self._shown('hbm_capacity')} of HBM")
        if need > cap:
            return (f"does not fit: under the layout ({layout}) each chip needs "
                    f"{self._shown('memory_per_chip_layout', need)} for its weights and the KV cache of "
                    f"{b:,.0f} sequence{'s' if b != 1 else ''} of {self._shown('context')}, more than its "
                    f"{self._shown('hbm_capacity')} of HBM ({need / cap:.0%})")
        return None

    def _shown(self, name: str, base_mag: float | None = None) -> str:
        """``name``'s value as a reason shows it (fmt), from its base-unit float (``base_mag``: another
        value of the same unit, e.g. a sum), without making a Pint quantity."""
        from .fmt import fmt_base

        return fmt_base(self._mag(name) if base_mag is None else base_mag, compiled.declared(name)[0])

    def flag(self, name: str) -> str | None:
        """Why the value of ``name`` describes a set-up that does not fit in HBM, or None.

        A quantity that depends on the batch describes the workload's batch; one that depends
        on the chips but not the batch (the latency floor) describes a batch of one sequence;
        one of a pipelined set-up (chapters 3 and 4) is judged by the pipelined fit.
        Measures of the fit itself, and quantities of the chip or model alone, are never flagged.
        """
        return self.fit_for(flag_kind(name))

    def fit_for(self, kind: str | None) -> str | None:
        """The fit a quantity of ``flag_kind`` ``kind`` is flagged by (None: never flagged)."""
        if kind == "pipeline":
            return self.fit_pipelined()
        if kind in ("layout", "layout1"):
            return self.fit_layout(None if kind == "layout" else 1.0)
        return self.fit() if kind == "batch" else self.fit(1.0) if kind == "chips" else None


@lru_cache(maxsize=None)
def flag_kind(name: str) -> str | None:
    """Which fit flags ``name`` (Scenario.flag): "pipeline", "batch", "chips", or None for an
    input, a measure of the fit itself, or a quantity of the chip or model alone."""
    q = REGISTRY[name]
    return None if q.is_input or q.fit_measure else setup_dependence(name)


def read_shared(scenarios: list, name: str, read) -> list:
    """``read(sc)`` of input ``name`` for each scenario (all with the same overrides), called once
    per chip, model or evaluation the input depends on (``Scenario.input_scope``), in the first
    scenario with that chip or model: one result per scenario, shared by those alike."""
    out, done, scope_of = [None] * len(scenarios), {}, {}
    for i, sc in enumerate(scenarios):
        scope = scope_of.get(sc.model.id)
        if scope is None:   # the model's attention type may change it
            scope = scope_of[sc.model.id] = sc.input_scope(name)
        key = (sc.hw.id if scope in ("hardware", "pair") else None,
               sc.model.id if scope in ("model", "pair") else None)
        hit = done.get(key)
        if hit is None:
            hit = done[key] = read(sc)
        out[i] = hit
    return out


# what an input read each way depends on (the ways that read other inputs join those inputs' scopes)
_WAY_SCOPE = {"set": "all", "pinned": "pair", "constant": "all", "literal": "all", "given": "all", "evidence": "pair", "price": "all", "flops": "pair",
              "weight format": "model", "kv format": "model", "choice": "model", "dense": "model",
              "model": "model", "hardware": "hardware"}


def _joined(scopes) -> str:
    """The scope of a value read from values of these scopes (hardware and model join to pair)."""
    seen = set(scopes)
    if "pair" in seen or {"hardware", "model"} <= seen:
        return "pair"
    return "hardware" if "hardware" in seen else "model" if "model" in seen else "all"


@lru_cache(maxsize=None)
def _inputs_below(name: str) -> tuple[str, ...]:
    """The inputs the compiled evaluation of the derived quantity ``name`` reads, in order."""
    out: dict[str, None] = {}

    def visit(n):
        if REGISTRY[n].is_input:
            out[n] = None
            return
        for a in compiled.scalar(n)[1]:
            visit(a)
    visit(name)
    return tuple(out)


@lru_cache(maxsize=None)
def _fields_to_inputs(_declared: int) -> dict[str, str]:
    """Data field -> input quantity, where the field has its own name (``_declared``: the number
    of quantities declared, so the table is rebuilt if more are)."""
    return {q.field: q.name for q in REGISTRY.inputs()
            if q.field and not q.field.startswith("<") and q.field != q.name}


TRAINING_CHAPTERS = ("training", "crypto")  # training runs: not judged by the serving fit
PIPELINE_CHAPTERS = ("pipeline", "memory")  # pipelined set-ups: judged by the pipelined fit
MEASURED_SECTIONS = ("measured_serving",)   # a measured system's efficiency and cost: it ran, so no fit is judged


@lru_cache(maxsize=None)
def setup_dependence(name: str) -> str | None:
    """'pipeline' if ``name`` is a quantity of a pipelined set-up (chapters 3 and 4) that depends
    on the batch or the chips, 'layout' ('layout1' for one sequence) if of a set-up laid out by
    tp, dp_attention, ep and pp, else 'batch' if it depends on the workload's batch, else 'chips'
    if on the chips (a set-up of one sequence), else None (a property of the chip or model alone,
    or a quantity of training, which the decode-serving HBM fit does not describe)."""
    q = REGISTRY[name]
    chapter = REGISTRY.sections[q.section].chapter if q.section else None
    if chapter in TRAINING_CHAPTERS or q.section in MEASURED_SECTIONS:
        return None
    leaves = {q.name for q in REGISTRY.leaves(name)}
    if q.section == "layout" or any(REGISTRY[d].section == "layout" for d in _derived_below(name)):
        # a set-up laid out by tp, dp_attention, ep, pp: judged by its own fit
        return "layout" if "batch" in leaves else "layout1"
    if chapter in PIPELINE_CHAPTERS and leaves & {"batch", "chips"}:
        return "pipeline"
    return "batch" if "batch" in leaves else "chips" if "chips" in leaves else None


FUSE_FROM = 20_000  # sweeps at least this long evaluate each closed form in one piece


@lru_cache(maxsize=None)
def _derived_below(name: str) -> frozenset:
    """``name`` and every derived quantity its definition reads, all the way down."""
    q = REGISTRY[name]
    if q.is_input:
        return frozenset()
    out = {name}
    for s in q.expr.free_symbols:
        out |= _derived_below(REGISTRY.q(s).name)
    return frozenset(out)


def _depends_on(name: str, var: str) -> bool:
    return any(q.name == var for q in REGISTRY.leaves(name))


def unused_overrides(sc: Scenario) -> list[str]:
    """--set names that no evaluation read (e.g. flops_fp8 while computing in bf16)."""
    return sorted(k for k in sc.overrides if k not in sc.used)
