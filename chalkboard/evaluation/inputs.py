"""Where each input of a set-up gets its value, mixed into Scenario (chalkboard.evaluation.evaluate):
a `--set`, a degree a stated layout pins, the chip's, model's or price's published figure, a
declared rule or default, published evidence; each read recorded with its source (InputRecord),
and the scope it is shared over (one chip, one model, every pair)."""
from __future__ import annotations

from dataclasses import dataclass

from derivations import CHOICE_INPUTS, NUMBER_FORMATS, REGISTRY
from units import Quantity, UnitParseError, conform, parse, unit as parse_unit

from ..errors import InputError, MissingInput, NotGiven
from .dependence import inputs_below, joined_scope
from .settings import BY_ATTENTION, DENSE_MOE_DEFAULTS, EVIDENCE
from .regimes import REGIMES, regime_index


@dataclass
class InputRecord:
    name: str
    value: object       # Pint quantity
    source: str         # human-readable provenance
    url: str | None = None
    as_of: str | None = None
    note: str | None = None




class Inputs:
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


_WAY_SCOPE = {"set": "all", "pinned": "pair", "constant": "all", "literal": "all", "given": "all", "evidence": "pair", "price": "all", "flops": "pair",
              "weight format": "model", "kv format": "model", "choice": "model", "dense": "model",
              "model": "model", "hardware": "hardware"}
