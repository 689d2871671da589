"""The report's live explorer: the data its printed functions read, for every chip x model pair.

The inputs of every chip x model pair are evaluated here through ``Scenario`` with the default
number formats (the model's weight and KV formats, the chip's rate for the weight format or the
next wider one), so the page only evaluates expressions. Values shared by every pair, by every
model of one chip, or by every chip of one model are emitted once at that level; the page merges
the levels. An input a pair does not publish is emitted as the reason (a string) instead of a
number.

What the page shows and its printed functions are explorer_script.py's.
"""
from __future__ import annotations

import json
from functools import lru_cache

from derivations import REGISTRY

from units import MAGNITUDE_RANGE, parse

from ..evaluation import compiled, layouts
from ..evaluation.expected import EVIDENCE_INPUTS
from ..errors import InputError, MissingInput
from ..evaluation.evaluate import Scenario
from ..evaluation.dependence import derived_below, flag_kind, read_shared
from ..evaluation.settings import rules_of
from .drawing import chip_styles
from ..typeset.fmt import SHARE_SYMBOL, unit_factor, shown_unit, display_labels, plural, share_factor
from .explorer_script import (QUANTITIES, LAYOUTS, SLIDERS, FIGURES, FRONTIER, FIT, SHARE, BATCH, ONE_BATCH,
                              FIGURE_POINTS, TABULATED, SOLVED, COMM, answer, expected_of, guards,
                              function_names, functions_js, inputs_read, dynamic_inputs, dynamic_reads,
                              moves_with_sliders, shown_names, to_js, javascript)


def _base(sc: Scenario, name: str):
    try:
        return sc.base_value(name)
    except (MissingInput, InputError) as e:
        return str(e)


# Fractions that are shares of a whole (declared share=True), shown as percentages, as the report
# and eval print them.
SHARES = tuple(n for n, q in REGISTRY.quantities.items() if q.share)


def _display_units(name: str) -> list[list]:
    """The units a value of ``name`` may be shown in: [label, factor from base units, plural label],
    largest first; the page shows the first in which the value is at least 1 (the report's choice)."""
    if name in SHARES:
        return [[SHARE_SYMBOL, share_factor(), SHARE_SYMBOL]]
    u, _ = compiled.declared(name)
    labels = display_labels(u)
    if labels == ("",):
        return [["", 1.0, ""]]
    return [[lab, unit_factor(shown_unit(lab)), plural(lab)] for lab in labels]


def _levels(table: dict, names: list[str], hws: list[str], mids: list[str]) -> dict:
    """Each input's values at the broadest level at which they do not vary."""
    out = {"constants": {}, "hardware": {h: {} for h in hws}, "models": {m: {} for m in mids},
           "pairs": {f"{h}|{m}": {} for h in hws for m in mids}}
    for n in names:
        vals = {(h, m): table[h, m][n] for h in hws for m in mids}
        first = next(iter(vals.values()))
        if all(v == first for v in vals.values()):
            out["constants"][n] = first
        elif all(vals[h, m] == vals[h, mids[0]] for h in hws for m in mids):
            for h in hws:
                out["hardware"][h][n] = vals[h, mids[0]]
        elif all(vals[h, m] == vals[hws[0], m] for h in hws for m in mids):
            for m in mids:
                out["models"][m][n] = vals[hws[0], m]
        else:
            for (h, m), v in vals.items():
                out["pairs"][f"{h}|{m}"][n] = v
    for level in ("hardware", "models", "pairs"):   # a chip, model or pair with nothing of its own: left out
        out[level] = {k: v for k, v in out[level].items() if v}
    return out


def _moe_only_below(name: str) -> bool:
    return any(REGISTRY[d].moe_only for d in derived_below(name))


def _fit_on(name: str) -> str | None:
    """Which fit flags ``name``, as eval flags it: at the workload's batch, at one sequence, or never."""
    kind = flag_kind(name)
    return {"batch": "at_batch", "layout": "at_batch", "chips": "at_one", "layout1": "at_one"}.get(kind)


# -- the layout's rules as tables ----------------------------------------------------------------
_CODES = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_"


def _encoded(values: list) -> dict:
    """A rule's value at each whole number of chips from 1: the distinct values and one character
    a value (its index among them); a plain list where there are too many to code."""
    distinct = list(dict.fromkeys(values))
    if len(distinct) > len(_CODES):
        return {"list": values}
    return {"values": distinct, "codes": "".join(_CODES[distinct.index(v)] for v in values)}


def _static_args(sc: Scenario, name: str, dynamic: list[str]):
    """The magnitudes (declared units) of the arguments of ``name``'s rule that do not move with the
    sliders, as the evaluation path reads them (an optional one missing: None), or the reason none
    can be read."""
    rule = REGISTRY[name].default[6:]
    optional = REGISTRY.rule_optional.get(rule, ())
    out = []
    for a in REGISTRY.rules[rule][1]:
        if a in SLIDERS or a in dynamic:
            continue
        try:
            out.append(sc.input(a).to(REGISTRY[a].unit or "").magnitude)
        except MissingInput as e:
            if a not in optional:
                return f"cannot choose {name} for {sc.hw.id} x {sc.model.id}: {e}"
            out.append(None)
        except InputError as e:
            return str(e)
    return out


@lru_cache(maxsize=None)
def _rule(name: str):
    """(function, all its arguments, those that move with the sliders) of ``name``'s rule."""
    fn, args, _ = REGISTRY.rules[REGISTRY[name].default[6:]]
    return fn, tuple(args), [a for a in args if a in SLIDERS or moves_with_sliders(a)]


_RULED: dict = {}   # (name, static, moving) -> _call_rule's answer: a rule is a function of its arguments


def _call_rule(name: str, static, moving: dict):
    """``name``'s rule on its static arguments and the moving ones (declared units), or the reason
    it cannot be chosen (as the evaluation path words it). Kept for the process (the rules are
    pure functions of their arguments): a rebuild under `build.py watch` asks again only for the
    pairs an edit changed."""
    if isinstance(static, str):
        return static
    key = (name, tuple(static), tuple(moving.items()))
    got = _RULED.get(key)
    if got is None:
        got = _RULED[key] = _ruled(name, static, moving)
    return got


def _ruled(name: str, static, moving: dict):
    fn, args, _ = _rule(name)
    it = iter(static)
    mags = [moving[a] if a in moving else next(it) for a in args]
    bad = [m for m in mags if isinstance(m, str)]
    if bad:
        return bad[0]
    try:
        return float(fn(*mags))
    except ValueError as e:
        return f"cannot choose {name}: {e}"


def _rule_tables(scenarios: list, pairs: list, dynamic: list[str]):
    """For each rule-defaulted degree the page looks up: its tables (keyed by its static arguments,
    values in base units) and which table each pair reads. A rule of the chips alone is tabulated
    at every whole number of chips from 1 to the slider's end; a rule of other degrees at every
    combination of the values their tables hold for the pair."""
    top = SLIDERS[TABULATED][1]
    looked_up = [n for n in dynamic if n not in EVIDENCE_INPUTS and n not in SOLVED]
    tables: dict = {n: {} for n in looked_up}
    keys: dict = {p: {} for p in pairs}
    ids: dict = {n: {} for n in looked_up}
    for n in looked_up:
        f = compiled.declared(n)[1]
        moving = _rule(n)[2]
        for p, sc in zip(pairs, scenarios):
            static = _static_args(sc, n, dynamic)
            key = keys[p][n] = ids[n].setdefault(json.dumps(static), f"k{len(ids[n])}")
            if moving == [TABULATED]:
                if key not in tables[n]:
                    tables[n][key] = _encoded([_in_base(_call_rule(n, static, {TABULATED: float(c)}), f)
                                               for c in range(1, top + 1)])
                continue
            if any(a not in tables for a in moving):  # pragma: no cover - no rule reads a solved degree
                raise ValueError(f"{n}: its rule reads {moving}, not all of them tabulated")
            # the values each moving degree takes for this pair (declared units), every combination
            combos = [()]
            for a in moving:
                held = _table_values(tables[a][keys[p][a]]) / compiled.declared(a)[1]
                combos = [c + (x,) for c in combos for x in held]
            t = tables[n].setdefault(key, {"map": {}})["map"]
            for c in combos:
                k = "|".join(_key(x) for x in c)
                if k not in t:
                    t[k] = _in_base(_call_rule(n, static, dict(zip(moving, c))), f)
    return _reasons_apart(tables), keys


def _reasons_apart(tables: dict):
    """(tables with each reason replaced by [its index], the reasons): a reason is long and repeats."""
    reasons: list[str] = []

    def ref(v):
        if not isinstance(v, str):
            return v
        if v not in reasons:
            reasons.append(v)
        return [reasons.index(v)]
    for by_key in tables.values():
        for t in by_key.values():
            for k in ("values", "list"):
                if k in t:
                    t[k] = [ref(v) for v in t[k]]
            if "map" in t:
                t["map"] = {k: ref(v) for k, v in t["map"].items()}
    return tables, reasons


def _in_base(v, factor: float):
    return v if isinstance(v, str) else v * factor


def _table_values(t: dict):
    """The numbers a table holds (its reasons left out), as an array."""
    import numpy as np
    vals = t["values"] if "values" in t else t["list"] if "list" in t else list(t["map"].values())
    return np.array(sorted({v for v in vals if isinstance(v, float)}), dtype=float)


def _key(x) -> str:
    """A moving argument as the page writes it in a table's key (a whole number as one)."""
    return x if isinstance(x, str) else (str(int(x)) if float(x).is_integer() else repr(float(x)))


def pair_tables(d) -> dict:
    """The part of the page's data that is the same whatever chip it starts on: every pair's
    inputs and formats, and the layout's rule tables."""
    hws, mids = list(d.hardware), list(d.models)
    names = inputs_read()
    dynamic = dynamic_inputs()
    formats, dense = {}, {}
    pairs = [(h, m) for h in hws for m in mids]
    scenarios = [Scenario(d, h, m) for h, m in pairs]
    for (h, m), s in zip(pairs, scenarios):
        formats[f"{h}|{m}"] = s.formats_text()
        dense[m] = s.is_dense
    columns = {n: read_shared(scenarios, n, lambda s, n=n: _base(s, n)) for n in names}  # once per chip, model, ...
    table = {pair: {n: columns[n][i] for n in names} for i, pair in enumerate(pairs)}
    (tables, reasons), keys = _rule_tables(scenarios, pairs, dynamic)
    ruled = [n for n in dynamic if n in tables]
    return {"formats": formats, "dense": dense, "levels": _levels(table, names, hws, mids), "tables": tables,
            "reasons": reasons, "keys": _levels({p: keys[p] for p in pairs}, ruled, hws, mids)}


def data(d, sc: Scenario, pairs: dict | None = None) -> dict:
    """What the page's script reads: the inputs of every pair, the layout's rule tables, the
    quantities and the settings."""
    hws, mids = list(d.hardware), list(d.models)
    dynamic = dynamic_inputs()
    p = pair_tables(d) if pairs is None else pairs
    formats, dense, levels, tables, reasons = p["formats"], p["dense"], p["levels"], p["tables"], p["reasons"]
    model = sc.evidence() if sc.evidence is not None else None
    quantities = []
    for n in QUANTITIES:
        e = expected_of(n)
        quantities.append({
            "name": n, "meaning": REGISTRY[n].meaning, "units": _display_units(n),
            # what answers it under each layout, and which fit flags that (at the batch, at one sequence, never)
            "answers": {lay: {"name": answer(n, lay), "meaning": REGISTRY[answer(n, lay)].meaning,
                              "fit": _fit_on(answer(n, lay))} for lay in LAYOUTS},
            "expected": {lay: {"name": answer(e, lay), "fit": _fit_on(answer(e, lay))} for lay in LAYOUTS} if e else None,
        })
    sliders = []
    for n, (lo, hi) in SLIDERS.items():
        u, f = compiled.declared(n)
        sliders.append({"name": n, "label": REGISTRY[n].meaning, "unit": f"{u:~P}", "factor": f,
                        "min": lo, "max": hi, "start": sc.base_value(n) / f, "accepts": accepted(n)})
    ignored = sorted(k for k in sc.raw_overrides if k not in SLIDERS)
    fnames = shown_names()   # the functions the page evaluates itself (the rest are called inside them)
    return {
        "hardware": [[h, d.hardware[h].name] for h in hws],
        "chip_styles": chip_styles(d.hardware),   # the figures' colour of each chip (drawing.py)
        "models": [[m, d.models[m].name] for m in mids],
        "dense": dense,
        "start": {"hardware": sc.hw.id, "model": sc.model.id},
        "ignored_overrides": ignored,
        "sliders": sliders,
        "quantities": quantities,
        "layouts": list(LAYOUTS),
        "answers": {lay: {n: answer(n, lay) for n in {FIT, FRONTIER["x"], FRONTIER["y"],
                                                      *(x for f in FIGURES for x in (f["quantity"], f["vline"], f["hline"]) if x)}}
                    for lay in LAYOUTS},
        "figures": [dict(f, units=_display_units(f["quantity"])) for f in FIGURES],
        "figure_points": FIGURE_POINTS,
        "frontier": dict(FRONTIER, x_units=_display_units(FRONTIER["x"]), y_units=_display_units(FRONTIER["y"]),
                         x_meaning=REGISTRY[FRONTIER["x"]].meaning, y_meaning=REGISTRY[FRONTIER["y"]].meaning),
        # what each printed function reads, and the refusals of the compiled path it must repeat
        "reads": {n: [q.name for q in REGISTRY.leaves(n)] for n in fnames},
        "guards": {n: [[g, f"{g}: {REGISTRY[g].valid}"] for g in guards(n)] for n in fnames},
        "dense_na": {n: f"{n} is not applicable to a dense model" for n in fnames if _moe_only_below(n)},
        "fit": FIT, "one_batch": ONE_BATCH, "batch_input": BATCH,
        "memory_share": parse(REGISTRY[SHARE].default).to("").magnitude,
        "formats": formats,
        "inputs": levels,
        # the layout: its degrees (eval's order), its chips, its communication, and how each degree
        # the page computes is found (in order): a rule's table, SymPy's solution, the engine model
        "layout": {
            "degrees": list(layouts.DEGREES), "used": SOLVED["dp_attention"][0], "comm": list(COMM),
            "units": {n: _display_units(n) for n in (*(c["term"] for c in COMM), SOLVED["dp_attention"][0], TABULATED)},
            "dynamic": [{"name": n, "kind": "table" if n in tables else "solved" if n in SOLVED else "evidence",
                         "args": _rule(n)[2] if n in tables else [],
                         "factors": {a: compiled.declared(a)[1] for a in (_rule(n)[2] if n in tables else [])},
                         "whole": rules_of(n).whole, "reads": dynamic_reads(n),
                         "why": (f"{n}: {REGISTRY.rules[REGISTRY[n].default[6:]][2]}"
                                 if str(REGISTRY[n].default).startswith("=rule:") else "")}
                        for n in dynamic],
            "tables": tables, "reasons": reasons,   # a table's value [i] is reasons[i]: why none
            "keys": p["keys"],
            "tabulated": TABULATED, "top": SLIDERS[TABULATED][1], "codes": _CODES,
        },
        "efficiency": None if model is None else {
            "band": list(model.band), "fit": model.text(), "inputs": [n for n in dynamic if n in EVIDENCE_INPUTS]},
    }


def accepted(name: str) -> dict:
    """What ``--set NAME=...`` accepts for a workload input, in its declared unit, from the same
    rules its declaration states (derivations/, which --set reads too), so that the page's box
    refuses exactly what the command line refuses: 0 only where it may be zero, a whole number for a
    count, at most its largest value and within the magnitudes any input may have
    (units.MAGNITUDE_RANGE, in base units); ``rule`` says it in words."""
    _, f = compiled.declared(name)
    lo, hi = MAGNITUDE_RANGE
    rules = rules_of(name)
    most, why = rules.most or (hi / f, "the largest magnitude any input may have")
    most = min(most, hi / f)
    whole, zero, below = rules.whole, rules.zero, rules.below
    least = 0 if zero else 1 if whole else lo / f
    rule = (f"{'a whole number' if whole else 'a number'} from {least:,} to "
            + (f"below {below[0]:g} ({below[1]})" if below else f"{most:,} ({why})"))
    return {"zero": zero, "whole": whole, "least": lo / f, "most": most,
            "below": below[0] if below else None, "rule": rule}


def context(d, sc: Scenario, pairs: dict | None = None) -> dict:
    """The template's view: the printed functions (script text) and the data (JSON). ``pairs``:
    pair_tables(d) where it was made before (one for every chip's report of --all-hardware)."""
    model = sc.evidence() if sc.evidence is not None else None
    if pairs is None or model is not None:
        return {"functions": functions_js(model), "data": data(d, sc, pairs)}
    if "functions" not in pairs:   # without the engine's fit, the same for every chip: printed once
        pairs["functions"] = functions_js(None)
    return {"functions": pairs["functions"], "data": data(d, sc, pairs)}


__all__ = ["FRONTIER", "LAYOUTS", "QUANTITIES", "SLIDERS", "answer", "context", "data", "expected_of", "pair_tables",
           "function_names", "functions_js", "guards", "javascript", "to_js"]
