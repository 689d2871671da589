"""A set-up before anything is evaluated (Scenario mixes this in): its --set values parsed and
checked against each other and the model, the serving defaults (the serving workload, the fewest
chips that hold the copy), the layout a stated degree implies, and the shortcuts by which one input
settles a quantity (settings.SETTLED_BY: no all-reduce at tp = 1). Apart from evaluate.py, which
reads inputs and evaluates definitions, because these methods decide what the set-up is."""
from __future__ import annotations

import re

from derivations import NUMBER_FORMATS, REGISTRY
from units import Quantity, UnitParseError, conform, fmt_unit, is_count, parse

from derivations import rules

from ..data.loader import RATE_FORMATS
from ..errors import InputError, MissingInput, short
from .dependence import derived_below, fields_to_inputs
from .settings import (AT_ONE_SEQUENCE, FORMAT_KEYS, LAYOUT_DEGREES, SELECT_KEYS, SELECTS, SERVING_WORKLOAD,
                       SETTLED_BY, related, rules_of)

# "1,024" or "2,000,000 tokens": a number written with thousands separators, refused by name
THOUSANDS = re.compile(r"\s*[+-]?\d{1,3}(,\d{3})+(\.\d*)?(\s|$)")
# why a context was raised (eval names it beside the defaults it took)
CONTEXT_RAISED = ("raised to hold the prompt and its answer, pass_tokens + output_tokens, which each sequence's KV "
                  "cache keeps (--set context=... to choose)")
# (name, text) of a setting -> (input, quantity), as _parse_overrides checks and converts it: the
# audit, the figures and the measurements make thousands of scenarios from a few dozen settings
_SET_PARSED: dict = {}


class Defaults:
    """A Scenario's settings, serving defaults, held layout and settled shortcuts (methods it mixes in)."""

    # -- overrides ------------------------------------------------------------------------
    def _parse_overrides(self, raw: dict[str, str]) -> dict:
        out = {}
        field_to_q = fields_to_inputs(len(REGISTRY.quantities)) if raw else {}
        for name, text in raw.items():
            if name in SELECT_KEYS:
                if not text:
                    raise InputError(f"--set {name}=: give {SELECTS[name]}")
                out[name] = text.strip().lower() if name == "engine" else text
                continue
            if name in FORMAT_KEYS:
                allowed = RATE_FORMATS if name == "compute_format" else tuple(NUMBER_FORMATS)
                text = text.strip().lower() if isinstance(text, str) else text   # FP8 as fp8
                if text not in allowed:
                    raise InputError(f"--set {name}={short(text)}: expected one of {', '.join(allowed)}")
                out[name] = text
                continue
            try:
                hit = _SET_PARSED.get((name, text))
            except TypeError:   # (not a text: parsed below, and its error said)
                hit = None
            if hit is not None:
                out[hit[0]] = hit[1]
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
                raise InputError(f"--set {short(name)}: unknown input (see `python build.py list quantities`)")
            if isinstance(text, str) and THOUSANDS.match(text):
                raise InputError(f"--set {name}={short(text)}: a comma is not read as a thousands separator; "
                                 f"write {text.replace(',', '').strip()}")
            try:   # a Pint quantity (a sweep's point, the library) as it is; text as --set writes it
                v = text if isinstance(text, Quantity) else parse(text)
            except UnitParseError as e:
                raise InputError(f"--set {name}: {e}") from None
            if v.dimensionless and v.magnitude != 0 and not is_count(unit):   # never read in base units (B/s, s)
                raise InputError(f"--set {name}={short(str(text))}: {name} needs a unit, e.g. "
                                 f"--set {name}=\"{self._example_unit(key, unit, v.magnitude)}\"")
            try:
                v = conform(v, unit, per_chip=unit.endswith("/chip"), bare=True)
            except UnitParseError as e:
                raise InputError(f"--set {name}={short(str(text))}: {e}") from None
            problem = rules_of(key).problem(v, unit)   # its declared rules, as the data files' loader reads them
            if problem:
                raise InputError(f"--set {name}={short(text)}: {problem}")
            out[key] = v
            if isinstance(text, str) and len(_SET_PARSED) < 10_000:
                _SET_PARSED[(name, text)] = (key, v)
        return out

    def _example_unit(self, key: str, unit: str, number: float) -> str:
        """``number`` written with a unit for ``key``: the unit the data files write it in (TB/s, from
        this chip's or model's entry, else any that has it) where the number reads well in it, else
        the declared unit (per chip left implicit, as spec sheets write it)."""
        q = REGISTRY[key] if key in REGISTRY else None
        fld = q.field if q is not None else key
        entries = [*self.data.hardware.values(), *self.data.models.values()]
        if q is not None and q.origin in ("hardware", "model"):
            entries.insert(0, self.hw if q.origin == "hardware" else self.model)
        val = next((v for e in entries if fld and (v := e.get(fld)) is not None), None)
        if val is not None and 1e-2 <= number < 1e5:
            return f"{number:g} {fmt_unit(parse(val.text).units)}"
        return f"{number:g} {fmt_unit(unit.removesuffix('/chip') if unit.endswith('/chip') else unit)}"

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
        """--set values that break an input's declared order or divisibility against another input
        or the model (tp divides n_heads) are errors naming the conflict."""
        for q in related(len(REGISTRY.quantities)) if self.overrides else ():
            r = q.rules
            others = [rel[0] for rel in (r.within, r.divides) if rel]
            if not {q.name, *others} & self.overrides.keys() or (x := self._given(q.name)) is None:
                continue
            broken = r.against(q.name, x, self._given)
            if broken:
                set_ = q.name if q.name in self.overrides else broken[0]
                raise InputError(f"--set {set_}={self._given(set_):g}: {self.model.id}: {broken[1]}")

    def _prompt_within_context(self) -> None:
        """A prompt (pass_tokens) longer than the context cannot fit in it: each sequence's KV cache
        holds its whole prompt and then its answer. Both given and the prompt longer: refused. The
        context not given: raised to the prompt and its answer (pass_tokens + output_tokens) where
        they are longer than the default, held and said, so the fit and every KV term count the
        tokens the prompt caches."""
        o = self.overrides
        if "pass_tokens" not in o:
            return
        unit = "token/sequence"
        prompt = o["pass_tokens"].to(unit).magnitude
        if "context" in o:
            ctx = o["context"].to(unit).magnitude
            if prompt > ctx * (1 + 1e-12):
                raise InputError(f"--set pass_tokens={prompt:,.0f}: the prompt is longer than the context of "
                                 f"{ctx:,.0f} tokens each sequence's KV cache holds: raise --set context to at least "
                                 f"{prompt:,.0f} (or leave it out: then it is the prompt and its answer)")
            return
        if self.defaults == "serving":
            ctx = parse(SERVING_WORKLOAD["context"][0]).to(unit).magnitude
        else:
            ctx = parse(REGISTRY["context"].default).to(unit).magnitude
        need = prompt + self.mag("output_tokens", unit)
        self._cache.clear()
        self._mags.clear()
        self.records.clear()
        self.used.clear()
        if need > ctx:
            self.pinned["context"] = (Quantity(need, unit), CONTEXT_RAISED)

    def _serving_defaults(self) -> None:
        """The serving workload (settings.SERVING_WORKLOAD) where the user gave none, and the copy on
        the fewest chips that hold the model and its KV cache under the default layout, up to one
        scale-up domain (all of it where none fewer do); held, so every quantity reads them."""
        o = self.overrides
        pins = {n: (parse(text), why) for n, (text, why) in SERVING_WORKLOAD.items()
                if n not in o and n not in self.pinned}
        pins.update({n: self.pinned[n] for n in SERVING_WORKLOAD if n in self.pinned})
        if "chips" not in o and not any(n in o for n in LAYOUT_DEGREES):
            try:
                chips = self._fewest_chips({**{n: v for n, (v, _) in pins.items()}})
            except (MissingInput, InputError):
                chips = None
            if chips is not None:
                pins["chips"] = chips
        self._cache.clear()
        self._mags.clear()
        self.records.clear()
        self.used.clear()
        self.pinned.update(pins)

    def _fewest_chips(self, workload: dict):
        """(chips, why): the fewest chips whose default layout holds the weights and the KV cache of
        ``workload`` (the pinned batch and context), from the counts that layout fills (divisors of
        the query heads for a dense model, of the experts for a mixture of experts) up to the
        scale-up domain (``chips``' declared default); the domain where none fewer fit."""
        most = self.mag("chips")
        per = "n_heads" if self.is_dense else "experts"
        try:
            n = int(round(self.mag(per)))
            counts = [c for c in range(1, int(most) + 1) if n % c == 0]
        except MissingInput:
            counts = [c for c in (2 ** k for k in range(0, 12)) if c <= most]
        counts = [*counts, most] if most not in counts else counts
        for c in counts:
            probe = type(self)(self.data, self.hw.id, self.model.id,
                               {**self.raw_overrides, **workload, "chips": Quantity(c, "chip")})
            fill = probe.fill_layout()
            if fill is None:
                return None
            if probe.fits_within(fill):
                return (Quantity(c, "chip"), f"serving default: the fewest chips (of the {most:g} of one scale-up "
                                             f"domain) that hold the weights and the KV cache under the default "
                                             f"layout (--set chips=...)")
        return (Quantity(most, "chip"), f"serving default: the whole scale-up domain; no fewer chips hold the "
                                        f"weights and the KV cache (nor does it: see feasible) (--set chips=...)")

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
        elif self.defaults == "serving":   # the layout stated is the copy: no further groups unless set
            dp = 1
        else:   # the chips left after tp · pp serve further groups (the rule); none left: one group
            try:
                dp = rules.attention_groups(chips0, tp, pp)
            except ValueError:
                dp = 1
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
        self.pinned.update({n: (Quantity(v, REGISTRY[n].unit or ""), why) for n, (v, why) in held.items()})

    # -- what one input settles ------------------------------------------------------------
    def settled(self, name: str) -> float | None:
        """``name``'s value in base units where one input settles it (settings.SETTLED_BY: no
        all-reduce at tp = 1), its definition's other inputs unread; None where it does not (or
        that input cannot be read: the definition then says what is missing)."""
        if name in AT_ONE_SEQUENCE:
            one = self._at_one_sequence(name)
            return None if one is None else one._mag(AT_ONE_SEQUENCE[name])
        rule = SETTLED_BY.get(name)
        if rule is None or name in self._fixed:
            return None
        by, at, value = rule
        try:
            if self._mag(by) != at:
                return None
            return self._mag(value) if isinstance(value, str) else value
        except (MissingInput, InputError):
            return None

    def _at_one_sequence(self, name: str):
        """For a quantity of AT_ONE_SEQUENCE with a settled term below it: this set-up at a batch of
        one sequence (kept), which evaluates it term by term; else None (its closed form applies)."""
        if self._fixed:
            return None
        if self._one_sequence is False:
            one = type(self)(self.data, self.hw.id, self.model.id,
                             {**self.raw_overrides, "batch": Quantity(1, "sequence")})
            one.evidence = self.evidence
            below = derived_below(AT_ONE_SEQUENCE[name])
            self._one_sequence = one if any(one.settled(d) is not None for d in SETTLED_BY if d in below) else None
        return self._one_sequence

    def one_chip(self) -> bool:
        """Whether the copy is on one chip (chips = 1): no layout to choose, nothing crosses a link."""
        try:
            return self.mag("chips") == 1
        except (MissingInput, InputError):
            return False
