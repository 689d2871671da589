"""Results: every derived quantity evaluated for every hardware x model, and one-number views.

This is the layer between the derivations and anything that shows numbers (the CLI, the
report, the audit); it reads expressions from the registry and values from the data.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from derivations import REGISTRY
from units import parse, unit as parse_unit

from ..typeset import printers

from . import layouts
from ..data.loader import Data
from ..errors import MissingInput
from .evaluate import Scenario
from .dependence import (MEASURED_SECTIONS, TRAINING_CHAPTERS, derived_below, flag_kind, read_shared,
                         setup_dependence)
from .defaults import CONTEXT_RAISED
from .settings import AT_ONE_SEQUENCE, SETTLED_BY
from .walk import DimensionMismatch
from ..typeset.fmt import display_labels, fmt, fmt_named, split, split_named


@dataclass
class AllResults:
    values: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)  # (hw, model) -> name -> base-unit float
    missing: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    inputs: dict[tuple[str, str], dict[str, dict]] = field(default_factory=dict)  # input -> value, unit, source
    fit: dict[tuple[str, str], dict] = field(default_factory=dict)      # feasibility of the workload
    flags: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)  # name -> why it does not fit
    formats: dict[tuple[str, str], dict] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    count_ok: int = 0
    count_na: int = 0


def evaluate_all(data: Data, overrides: dict | None = None, vectorised: bool = True) -> AllResults:
    """Every derived quantity for every chip x model: base-unit floats, or why not applicable.

    Each definition is evaluated once over all pairs at a time (numpy arrays through the
    compiled definitions); a pair is evaluated on its own, quantity by quantity, where that
    cannot reproduce the scalar path (a value that is not finite: the scalar path says why).
    ``vectorised=False`` evaluates every pair on its own (the reference, for tests).
    """
    import gc

    enabled = gc.isenabled()
    gc.disable()   # Python's collector would walk every scenario's caches again and again (a
    try:           # quarter of the time at many pairs); what is left over is collected after
        return _evaluate_all(data, overrides, vectorised)
    finally:
        if enabled:
            gc.enable()


def _evaluate_all(data: Data, overrides: dict | None, vectorised: bool) -> AllResults:
    res = AllResults()
    names = [q.name for q in REGISTRY.derived_quantities()]
    shown_as: dict[int, tuple] = {}   # an input's record, shared by the pairs that read it: shown once

    def shown(r):
        hit = shown_as.get(id(r))
        if hit is None or hit[0] is not r:
            value, unit = split(r.value)
            hit = shown_as[id(r)] = (r, {"value": value, "unit": unit, "source": r.source,
                                         **({"url": r.url} if r.url else {}),
                                         **({"as_of": r.as_of} if r.as_of else {})})
        return hit[1]

    kinds = {n: k for n in names if (k := flag_kind(n)) is not None}
    pairs = [(hid, mid) for hid in data.hardware for mid in data.models]
    scenarios = [Scenario(data, hid, mid, dict(overrides or {})) for hid, mid in pairs]
    columns = _evaluate_columns(scenarios, names) if vectorised and pairs else None
    for i, ((hid, mid), sc) in enumerate(zip(pairs, scenarios)):
        vals, miss = {}, {}
        if columns is not None and i not in columns.redo:
            columns.replay(i, sc, vals, miss)
        else:
            if columns is not None:   # the probe read every input: the pair starts afresh
                sc = Scenario(data, hid, mid, dict(overrides or {}))
            for n in names:
                try:
                    vals[n] = sc.base_value(n)  # a float in base units; shown through fmt.split_base
                except MissingInput as e:
                    miss[n] = str(e)
                except (DimensionMismatch, ArithmeticError, ValueError) as e:
                    res.errors.append(f"{hid} x {mid}: {n}: {e}")
        res.count_ok += len(vals)
        res.count_na += len(miss)
        res.values[(hid, mid)] = vals
        res.missing[(hid, mid)] = miss
        res.fit[(hid, mid)] = feasibility(sc)
        res.flags[(hid, mid)] = {n: r for n in vals if (k := kinds.get(n)) and (r := sc.fit_for(k))}
        res.formats[(hid, mid)] = {**sc.formats, **({"note": sc.compute_note} if sc.compute_note else {})}
        res.inputs[(hid, mid)] = {n: shown(r) for n, r in sorted(sc.records.items())}
        scenarios[i] = None   # done with: its caches need not outlive the pair
    return res


class _Columns:
    """Every derived quantity over all pairs: values (numpy, base units), why a pair has no
    value (an index into ``reasons``, 0 for none), which inputs the scalar path would read,
    and the pairs to evaluate on their own."""

    def __init__(self, names, value, why, reasons, read, redo, records):
        import numpy as np

        self.names, self.value, self.why, self.reasons, self.read, self.redo, self.records = \
            names, value, why, reasons, read, redo, records
        self._reads: dict[tuple, frozenset] = {}
        # one row per pair (a row is cheaper to read as a list than column by column)
        self._inputs = list(read)
        self._rows = tuple(np.column_stack(cols) for cols in (
            [read[n] for n in self._inputs], [why[n] for n in self._inputs], [value[n] for n in self._inputs],
            [value[n] for n in names], [why[n] for n in names]))

    def replay(self, i: int, sc: Scenario, vals: dict, miss: dict) -> None:
        """Pair ``i``'s values and reasons, in the order the scalar path finds them, and the
        inputs it reads recorded in ``sc`` (so its sources are the same). Of the inputs the scalar
        path reads (with what they read in turn), ``sc`` is given the values and records read in
        the probe, and reads again each that failed, which records what it read before failing."""
        needed: set[str] = set()
        failed = []
        attention = sc.model.tags.get("attention")   # what input_reads depends on, beside the overrides

        def closure(name) -> frozenset:   # name and what it reads, all the way down
            key = (name, attention)
            out = self._reads.get(key)
            if out is None:
                out = self._reads[key] = frozenset({name}).union(*(closure(r) for r in sc.input_reads(name)))
            return out
        read, read_why, read_value, value, why = (rows[i].tolist() for rows in self._rows)
        for name, r, w in zip(self._inputs, read, read_why):
            if r:
                if w:
                    failed.append(name)
                else:
                    needed |= closure(name)
        sc.keep_only(needed)
        input_value = dict(zip(self._inputs, read_value))
        for name in needed:
            rec = self.records[name][i]
            if rec is not None:
                sc.records[name], sc._cache[name], sc._mags[name] = rec, rec.value, input_value[name]
        for name in failed:
            try:
                sc.input(name)
            except MissingInput:
                pass
        reasons = self.reasons
        for n, v, w in zip(self.names, value, why):
            if w:
                miss[n] = reasons[w]
            else:
                vals[n] = v
        sc._mags.update(vals)


def _evaluate_columns(scenarios: list[Scenario], names: list[str]) -> _Columns:
    import numpy as np

    from . import compiled
    from ..errors import InputError

    n = len(scenarios)
    reasons = [""]
    codes: dict[str, int] = {}

    def code(text: str) -> int:
        c = codes.get(text)
        if c is None:
            c = codes[text] = len(reasons)
            reasons.append(text)
        return c

    value: dict[str, np.ndarray] = {}
    why: dict[str, np.ndarray] = {}
    redo: set[int] = set()
    # the inputs, each in every pair. An input that depends only on the chip (or the model, or
    # neither) is read once per chip (model, evaluation), in the first pair that has it; the
    # other pairs share its value and record (replay puts them in each pair's scenario).
    inputs = [q.name for q in REGISTRY.quantities.values() if q.is_input]
    records: dict[str, list] = {}

    def probe(sc):
        try:
            return sc._mag(name), 0, sc.records[name]
        except MissingInput as e:
            return np.nan, code(str(e)), None
        except InputError:  # the scalar path says why, if a quantity it evaluates reads it
            return np.nan, -2, None
    for name in inputs:
        read = read_shared(scenarios, name, probe)
        value[name] = np.array([r[0] for r in read], dtype=float)
        why[name] = np.array([r[1] for r in read], dtype=np.int64)
        records[name] = [r[2] for r in read]
    dense = np.array([sc.is_dense for sc in scenarios])
    read = {name: np.zeros(n, dtype=bool) for name in inputs}
    order = _topological(names)
    with np.errstate(all="ignore"):
        for name in order:
            q = REGISTRY[name]
            fn, args = compiled.array(name)
            w = np.zeros(n, dtype=np.int64)
            alive = np.ones(n, dtype=bool)  # pairs whose scalar path still reads the next argument
            settled = _settled(name, value, why, read)   # the pairs where one input settles it
            alive &= ~settled
            if q.moe_only:
                w[dense] = -1   # per pair below: the message names the model
                alive &= ~dense
            for a in args:   # the scalar path reads the arguments in this order, up to the first failure
                if a in read:
                    read[a] |= alive
                    redo.update(np.flatnonzero(alive & (why[a] == -2)).tolist())
                fails = alive & (why[a] != 0)
                w[fails] = why[a][fails]
                alive &= ~fails
            v = np.asarray(fn(*(value[a] for a in args)), dtype=float)
            v = np.broadcast_to(v, (n,)).copy()
            if settled.any():
                by, _, at = SETTLED_BY[name]
                v[settled] = value[at][settled] if isinstance(at, str) else at
            if name in AT_ONE_SEQUENCE:   # evaluated term by term where a term is settled: the scalar path's
                below = derived_below(AT_ONE_SEQUENCE[name])
                for d in below & SETTLED_BY.keys():
                    by, at, _ = SETTLED_BY[d]
                    redo.update(np.flatnonzero((why[by] == 0) & (value[by] == at)).tolist())
            ok = w == 0
            bad = ok & ~np.isfinite(v)
            redo.update(np.flatnonzero(bad).tolist())
            if q.valid:
                w[ok & ~bad & ~(v > 0)] = code(f"{name} is not applicable: {q.valid}")
            if q.moe_only:
                for i in np.flatnonzero(w == -1):
                    w[i] = code(f"{name} is not applicable: {scenarios[i].model.id} is a dense model "
                                "(no routed experts)")
            v[w != 0] = np.nan
            value[name], why[name] = v, w
    return _Columns(names, value, why, reasons, read, redo, records)


def _settled(name: str, value: dict, why: dict, read: dict):
    """The pairs where an input settles ``name`` (settings.SETTLED_BY), as the scalar path finds
    them: it reads that input in every pair, and the input the value is, where it holds."""
    import numpy as np

    n = len(next(iter(value.values())))
    rule = SETTLED_BY.get(name)
    if rule is None:
        return np.zeros(n, dtype=bool)
    by, at, to = rule
    read[by] |= True
    mask = (why[by] == 0) & (value[by] == at)
    if isinstance(to, str):
        read[to] |= mask
        mask &= why[to] == 0
    return mask


def _topological(names: list[str]) -> list[str]:
    """Derived quantities, each after the derived quantities its definition reads."""
    out, done = [], set()

    def visit(name):
        if name in done:
            return
        done.add(name)
        q = REGISTRY[name]
        for s in sorted(q.expr.free_symbols, key=lambda s: s.name):
            d = REGISTRY.q(s)
            if not d.is_input:
                visit(d.name)
        out.append(name)
    for name in names:
        visit(name)
    return out


def feasibility(sc: Scenario, name: str | None = None) -> dict:
    """Whether the set-up (or the set-up ``name`` describes) fits: feasible true/false, or null
    for a quantity of the chip or model alone; the reason when it does not fit."""
    batch = None
    if name is not None:
        if REGISTRY[name].fit_measure:
            return {"feasible": None, "reason": "a measure of the fit itself"}
        on = setup_dependence(name)
        if on is None:
            section = REGISTRY.sections.get(REGISTRY[name].section or "")
            if section is not None and section.chapter in TRAINING_CHAPTERS:
                return {"feasible": None, "reason": "a training quantity: the decode-serving HBM fit does not apply"}
            if section is not None and section.id in MEASURED_SECTIONS:
                return {"feasible": None, "reason": "a measured system: it ran, so its fit is not judged"}
            return {"feasible": None, "reason": "not a set-up: depends on neither the batch nor the chips"}
        if on == "pipeline":
            why, fill = sc.fit_pipelined(), sc.fill_pipelined()
            if why is not None:
                return {"feasible": False, "reason": why}
            if fill is None:
                return {"feasible": None, "reason": "unknown: an input of the memory fit is not published"}
            return {"feasible": True, "reason": f"pipelined: each chip's share of the weights and of one "
                                                f"micro-batch's KV cache per stage fills {fill:.0%} of its HBM"
                                                f"{sc.within_note()}"}
        if on in ("layout", "layout1"):
            why, fill = sc.fit_for(on), sc.fill_layout(None if on == "layout" else 1.0)
            if why is not None:
                return {"feasible": False, "reason": why}
            if fill is None:
                return {"feasible": None, "reason": "unknown: an input of the memory fit is not published"}
            b = 1.0 if on == "layout1" else sc.mag("batch", "sequence")
            return {"feasible": True, "reason": f"under the layout, each chip's weights and the KV cache of "
                                                f"{b:,.0f} sequence{'s' if b != 1 else ''} fill {fill:.0%} of its HBM"
                                                f"{sc.within_note()}"}
        if on == "chips":
            batch = 1.0
    why = sc.fit(batch)
    if why is not None:
        return {"feasible": False, "reason": why}
    fill = sc.fill(batch)
    if fill is None:
        return {"feasible": None, "reason": "unknown: an input of the memory fit is not published"}
    b = batch or sc.value("batch").to("sequence").magnitude
    return {"feasible": True, "reason": f"weights and the KV cache of {b:,.0f} sequence{'s' if b != 1 else ''} "
                                        f"fill {fill:.0%} of each chip's HBM{sc.within_note()}"}



def board_form(name: str):
    return REGISTRY.board_form(name)


def describe(sc: Scenario, name: str) -> dict:
    """One quantity for one scenario: value, unit, closed form, and each input with its source."""
    q = REGISTRY[name]
    val = sc.value(name)
    mag, unit = split_named(name, val)
    closed = REGISTRY.closed_form(name)
    inputs = []
    for rec in sc.inputs_of(name):
        m, u = split(rec.value)
        inputs.append({"name": rec.name, "symbol": printers.text_symbol(REGISTRY[rec.name]),
                       "value": m, "unit": u, "display": fmt(rec.value), "source": rec.source,
                       **({"url": rec.url} if rec.url else {}),
                       **({"as_of": rec.as_of} if rec.as_of else {}),
                       **({"note": rec.note} if rec.note else {})})
    return {
        "quantity": name,
        "symbol": printers.text_symbol(q),
        "meaning": q.meaning,
        "value": mag,
        "unit": unit,
        "display": fmt_named(name, val),
        "hardware": sc.hw.id,
        "model": sc.model.id,
        "format": sc.format,
        "formats": sc.formats,
        **({"format_note": sc.compute_note} if sc.compute_note else {}),
        **dict(zip(("feasible", "feasibility"), feasibility(sc, name).values())),
        "definition": printers.text(q.expr) if q.expr is not None else printers.text_symbol(q),
        "expression": printers.text(closed),
        "board_form": printers.text(REGISTRY.board_form(name)),
        "sympy": str(closed),
        "how": q.how,
        "inputs": inputs,
    }


def describe_as_asked(sc: Scenario, asked: str, layout: str = "deployed") -> dict:
    """``describe`` of the quantity that answers ``asked`` under ``layout`` (layouts.resolve), with
    what was asked, the lecture's even-spread value beside a layout's answer, the layout's degrees
    and the terms of the definition (eval's text and JSON, and the library's Result)."""
    name = layouts.resolve(asked, layout)
    d = describe(sc, name)
    if asked != name:   # answered under the layout: say so, with the lecture's even spread beside it
        d["asked"] = asked
        try:
            d["even_spread"] = {"quantity": asked, "display": fmt_named(asked, sc.value(asked))}
        except MissingInput as e:
            d["even_spread"] = {"quantity": asked, "not_applicable": str(e)}
    d["layout"] = layouts.degrees(sc) if setup_dependence(name) in ("layout", "layout1") else {}
    # the serving defaults the set-up took and this quantity reads (eval names them: a default can be
    # why it does not fit); the chips wherever a layout is shown, since its degrees follow from them
    read = {i["name"] for i in d["inputs"]} | ({"chips"} if d["layout"] else set())
    d["defaults"] = {n: fmt_named(n, v) for n, (v, why) in sc.pinned.items()
                     if why.startswith("serving default") and n in read}
    if "context" in sc.pinned and sc.pinned["context"][1] == CONTEXT_RAISED:   # the fit reads it, always
        d["context_raised"] = {"display": fmt_named("context", sc.pinned["context"][0]), "why": CONTEXT_RAISED}
    d["breakdown"] = layouts.breakdown(sc, name)
    d["collectives"] = layouts.collectives(sc, name) if d["layout"] else []
    ends = sc.spread(name)
    if ends is not None:   # an expected number: the range the engine model's held-out error spans
        units = sc.value(name).units
        lo, hi = (e.to(units) for e in ends)
        d["range"] = {"low": split_named(name, lo, d["unit"])[0], "high": split_named(name, hi, d["unit"])[0],
                      "display": f"{fmt_named(name, lo)} – {fmt_named(name, hi)}",
                      "why": "the engine model's speed moved to the 10th and 90th percentile of its error on "
                             "published runs held out by source, chip, model and engine, the widest (`validate`)"
                             + ("" if not sc.engine else f", or where {sc.engine}'s own runs held out by source fall, "
                                                         "if wider")}
    return d


def list_quantities() -> list[dict]:
    out = []
    for q in REGISTRY.quantities.values():
        d = {"name": q.name, "symbol": printers.text_symbol(q), "unit": q.unit, "origin": q.origin,
             "meaning": q.meaning}
        shown = display_labels(parse_unit(q.unit)) if q.unit else ("",)
        if len(shown) == 1 and shown[0] and shown[0] != q.unit:   # eval prints it in another unit: USD/Mtoken
            d["shown_in"] = shown[0]
        if q.field:
            d["field"] = q.field
        if q.default:
            d["default"] = q.default
        if q.expr is not None:
            d["definition"] = printers.text(q.expr)
        section = REGISTRY.sections.get(q.section or "")
        if section is not None:
            d["section"], d["chapter"] = section.id, section.chapter
        out.append(d)
    for name, c in choices().items():
        section = REGISTRY[c["against"]].section or REGISTRY[list(c["options"].values())[-1]].section
        out.append({"name": name, "symbol": name, "unit": None, "origin": "choice", "meaning": c["meaning"],
                    "options": c["options"], "against": c["against"],
                    **({"section": section, "chapter": REGISTRY.sections[section].chapter} if section else {})})
    return out


def choices() -> dict:
    """Answers that name one of several options (e.g. the memory tier for a hold time), each
    chosen from declared quantities by a rule its derivation module states."""
    from derivations import CHOICES
    return CHOICES


def describe_choice(sc: Scenario, name: str) -> dict:
    """A choice for one scenario: the option chosen, and each option's value against the
    quantity it is chosen for."""
    from derivations.rules import best_tier

    c = choices()[name]
    against = sc.value(c["against"])
    options, seconds = [], {}
    for key, qname in c["options"].items():
        row = {"option": key, "label": c["labels"][key], "quantity": qname}
        try:
            v = sc.value(qname)
            seconds[key] = sc.base_value(qname)
            row.update(value=fmt(v), ratio=seconds[key] / sc.base_value(c["against"]))
        except MissingInput as e:
            row.update(value=None, not_applicable=str(e))
        options.append(row)
    if not seconds:
        raise MissingInput(f"{name}: no option could be evaluated")
    chosen = best_tier(seconds, sc.base_value(c["against"]))
    return {"quantity": name, "value": chosen, "display": c["labels"][chosen], "meaning": c["meaning"],
            "hardware": sc.hw.id, "model": sc.model.id, "against": {"quantity": c["against"], "value": fmt(against)},
            "options": options}


def _entry_json(e) -> dict:
    out = {"name": {"value": e.name}}
    for k, v in e.tags.items():
        out[k] = {"value": v}
    for k, v in e.values.items():
        q = parse(v.text)  # the figure as the file writes it (per chip, in its own unit)
        mag, unit = float(q.magnitude), f"{q.units:~P}"
        out[k] = {"value": mag, "unit": unit, "text": v.text, "source": v.source.title,
                  "url": v.source.url, "as_of": v.as_of, **({"note": v.note} if v.note else {})}
    return out


def list_hardware(data: Data) -> dict:
    return {hid: _entry_json(h) for hid, h in data.hardware.items()}


def list_models(data: Data) -> dict:
    return {mid: _entry_json(m) for mid, m in data.models.items()}
