"""results.json: every number of every chip x model pair, sorted and rounded so that two builds
write the same bytes."""
from __future__ import annotations

import json
import math


def results_json(data, res, registry) -> str:
    return "".join(results_json_parts(data, res, registry))


def results_json_parts(data, res, registry, kept: dict | None = None):
    """results.json as a sequence of strings (one per pair, after a head): the text
    ``json.dumps(..., sort_keys=True)`` gives each entry, one entry of each top-level mapping a
    line, written directly. An input's record shared by many pairs is written once and repeated.
    ``kept``: pair -> its text and what it was written from, from an earlier call (the edit loop
    keeps a pair's results as the same objects while its inputs are unchanged): a pair's text is
    written again only if one of those objects is new."""
    from ..evaluation.compiled import declared
    from ..typeset.fmt import base_splitter
    from ..evaluation.results import list_hardware, list_models

    def dumps(v):
        return json.dumps(v, sort_keys=True, ensure_ascii=False)

    quantities = kept.get("quantities") if kept is not None else None   # the program's alone: kept as written
    if quantities is None:
        quantities = {}
        for q in registry.derived_quantities():
            quantities[q.name] = {"unit": q.unit, "meaning": q.meaning, "sympy": registry.closed_text(q.name),
                                  "inputs": [leaf.name for leaf in registry.leaves(q.name)]}
        quantities = _entries(dumps("quantities"), _rounded(quantities), dumps)
        if kept is not None:
            kept["quantities"] = quantities
    doc = _rounded({"hardware": list_hardware(data), "models": list_models(data)})
    yield "{\n"
    for key in sorted(doc):   # "quantities" and "results" come after these
        yield _entries(dumps(key), doc[key], dumps) + ",\n"
    yield quantities
    splitters = {q.name: base_splitter(declared(q.name)[0]) for q in registry.derived_quantities()}
    keys: dict[str, str] = {}
    units: dict[str, str] = {}
    records: dict[int, tuple] = {}

    def key_of(n):
        k = keys.get(n)
        if k is None:
            k = keys[n] = dumps(n)
        return k

    def record(rec):   # the same record (a chip's, a model's, a constant's) in many pairs: written once
        hit = records.get(id(rec))
        if hit is None or hit[0] is not rec:
            hit = records[id(rec)] = (rec, dumps({**rec, "value": _round12(rec["value"])}))
        return hit[1]

    yield ",\n \"results\": {"
    first = True
    for (hid, mid) in sorted(res.values, key=lambda p: f"{p[0]}|{p[1]}"):
        vals, flags, fit = res.values[(hid, mid)], res.flags[(hid, mid)], res.fit[(hid, mid)]
        parts = (vals, flags, fit, res.inputs[(hid, mid)], res.missing[(hid, mid)], res.formats[(hid, mid)])
        hit = kept.get((hid, mid)) if kept is not None else None
        if hit is not None and all(a is b for a, b in zip(hit[0], parts)):
            yield f'{"" if first else ","}{hit[1]}'
            first = False
            continue
        entries = []
        for n in sorted(vals):
            mag, unit = splitters[n](vals[n])
            u = units.get(unit)
            if u is None:
                u = units[unit] = json.dumps(unit, ensure_ascii=False)
            v = repr(_round12(mag)) if type(mag) is float and math.isfinite(mag) else json.dumps(mag)
            if n in flags:
                entries.append(f'{key_of(n)}: {{"feasible": false, "infeasible": '
                               f'{json.dumps(flags[n], ensure_ascii=False)}, "unit": {u}, "value": {v}}}')
            else:
                entries.append(f'{key_of(n)}: {{"unit": {u}, "value": {v}}}')
        inputs = res.inputs[(hid, mid)]
        text = (f'\n  {dumps(f"{hid}|{mid}")}: {{"feasibility": {dumps(fit["reason"])}, '
                f'"feasible": {dumps(fit["feasible"])}, "formats": {dumps(res.formats[(hid, mid)])}, '
                f'"hardware": {dumps(hid)}, '
                f'"inputs": {{{", ".join(f"{key_of(n)}: {record(inputs[n])}" for n in sorted(inputs))}}}, '
                f'"model": {dumps(mid)}, "not_applicable": {dumps(res.missing[(hid, mid)])}, '
                f'"values": {{{", ".join(entries)}}}}}')
        if kept is not None:
            kept[(hid, mid)] = (parts, text)
        yield f'{"" if first else ","}{text}'
        first = False
    yield "\n }\n}\n" if not first else "}\n}\n"


def _entries(key: str, inner, dumps) -> str:
    """One top-level entry: a mapping written one entry a line (readable with grep and diff, and
    written by json's fast C encoder, which indented output would not use)."""
    if isinstance(inner, dict) and inner:
        body = ",\n".join(f"  {dumps(k)}: {dumps(inner[k])}" for k in sorted(inner))
        return f" {key}: {{\n{body}\n }}"
    return f" {key}: {dumps(inner)}"


def _round12(x):
    return float(f"{x:.12g}") if isinstance(x, float) else x


def _rounded(x):
    """Floats to 12 significant digits: the last bits depend on the order of float operations
    (the compiled path works in base units), not on the data."""
    if isinstance(x, float):
        return _round12(x)
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_rounded(v) for v in x]
    return x
