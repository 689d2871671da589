"""Load and validate hardware.yaml and models.yaml.

Every value in the files is a string with a unit, read by Pint (never by YAML), checked
against the dimension of the quantity it feeds, and carried with its source and as-of
date. Any problem raises DataError naming the file, the entry and the field.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from units import UnitParseError, conform, magnitude_problem, parse

ID_RE = re.compile(r"^[a-z0-9]+(?:[.-][a-z0-9]+)*$")
FORMATS_ORDER = ("fp4", "fp8", "bf16")  # float formats, narrow to wide: the compute fallback order
NUMBER_FORMAT_NAMES = ("fp4", "fp8", "bf16", "int4", "int8")
ATTENTIONS = ("mha", "gqa", "mla")


class UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a key given twice in one mapping is an error."""


def _no_duplicates(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (line {mark.line + 1})", mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)


class DataError(Exception):
    """One bad thing in a data file, said in one line: file: entry: field: what is wrong."""

    def __init__(self, file: str, entry: str | None, fld: str | None, message: str):
        self.file, self.entry, self.field, self.message = file, entry, fld, message
        where = ": ".join(p for p in (file, entry, fld) if p)
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class Source:
    id: str
    title: str
    url: str
    as_of: str
    note: str | None = None


@dataclass(frozen=True)
class Value:
    """One sourced number: the Pint quantity, the text it came from, and its provenance."""
    quantity: object
    text: str
    source: Source | None
    as_of: str | None
    note: str | None = None


@dataclass
class Entry:
    id: str
    name: str
    kind: str                         # "hardware" or "model"
    values: dict[str, Value] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)   # non-numeric fields: vendor, attention

    def __contains__(self, key):
        return key in self.values

    def get(self, key):
        return self.values.get(key)


# Field schemas: (expected unit of the file's value, required?). Hardware figures are per
# chip; a value may omit the '/chip' ("989 TFLOP/s") or state it ("989 TFLOP/s/chip").
HARDWARE_FIELDS = {
    "launch_year": ("", True),
    "dies_per_package": ("die", False),
    "flops_bf16": ("FLOP/s", False),   # at least one flops_* field is required
    "flops_fp8": ("FLOP/s", False),
    "flops_fp4": ("FLOP/s", False),
    "flops_int8": ("FLOP/s", False),   # dense int8 operations per second, counted as FLOP/s
    "hbm_capacity": ("byte", True),
    "hbm_bandwidth": ("byte/s", True),
    "scaleup_bandwidth": ("byte/s", False),
    "scaleup_domain": ("chip", False),
    "scaleout_bandwidth": ("byte/s", False),
    "rental_price": ("USD/hour", False),
}
PER_CHIP = {"dies_per_package", "flops_bf16", "flops_fp8", "flops_fp4", "flops_int8", "hbm_capacity", "hbm_bandwidth",
            "scaleup_bandwidth", "scaleout_bandwidth", "rental_price"}
HARDWARE_TAGS = {"name": True, "vendor": True, "family": False, "per": True, "note": False,
                 "source": False}

MODEL_FIELDS = {
    "params_total": ("parameter", True),
    "params_active": ("parameter", True),
    "layers": ("", True),
    "d_model": ("", False),
    "n_heads": ("", False),
    "n_kv_heads": ("", False),
    "d_head": ("", False),
    "kv_latent_dim": ("", False),
    "kv_rope_dim": ("", False),
    "experts": ("", False),
    "experts_per_token": ("", False),
    "shared_experts": ("", False),
    "moe_layers": ("", False),
    "d_expert": ("", False),
}
MAY_BE_ZERO = {"shared_experts"}
WHOLE_NUMBER_FIELDS = ("layers", "d_model", "n_heads", "n_kv_heads", "d_head", "kv_latent_dim", "kv_rope_dim",
                       "experts", "experts_per_token", "shared_experts", "moe_layers", "d_expert")  # a count that is legitimately zero (Qwen3 has no shared expert)

MODEL_CHOICES = {"weight_format": (NUMBER_FORMAT_NAMES, True), "kv_format": (NUMBER_FORMAT_NAMES, False),
                 "attention": (ATTENTIONS, True)}
MODEL_TAGS = {"name": True, "source": False, "note": False, "label": False}


@dataclass
class Data:
    hardware: dict[str, Entry]
    models: dict[str, Entry]
    sources: dict[str, Source]
    files: dict[str, str]


def _read_yaml(path: Path, label: str):
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(label, None, None, "file not found") from None
    except OSError as e:
        raise DataError(label, None, None, f"cannot read ({e.strerror})") from None
    try:
        doc = yaml.load(text, Loader=UniqueKeyLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise DataError(label, None, None, f"YAML syntax error at {where}{problem}") from None
    if not isinstance(doc, dict):
        raise DataError(label, None, None, "expected a mapping with 'sources' and entries")
    return doc


def _sources(doc, label) -> dict[str, Source]:
    raw = doc.get("sources")
    if not isinstance(raw, dict) or not raw:
        raise DataError(label, "sources", None, "missing or empty 'sources' mapping")
    out = {}
    for sid, s in raw.items():
        if not isinstance(s, dict):
            raise DataError(label, f"sources.{sid}", None, "expected a mapping with title, url, as_of")
        for f in ("title", "as_of"):
            if not str(s.get(f, "") or "").strip():
                raise DataError(label, f"sources.{sid}", f, "missing")
        if "url" not in s:
            raise DataError(label, f"sources.{sid}", "url", "missing (use \"\" for an illustrative entry)")
        out[str(sid)] = Source(str(sid), str(s["title"]), str(s.get("url") or ""),
                               str(s["as_of"]), s.get("note"))
    return out


def _value(label, eid, fname, raw, default_source, sources, expected, per_chip):
    if isinstance(raw, dict):
        if "value" not in raw:
            raise DataError(label, eid, fname, "missing 'value'")
        text, sid, as_of, note = raw["value"], raw.get("source", default_source), raw.get("as_of"), raw.get("note")
    else:
        text, sid, as_of, note = raw, default_source, None, None
    if not isinstance(text, str):
        raise DataError(label, eid, fname,
                        f"value must be a quoted string with its unit, e.g. \"{_example(expected)}\" (got {text!r})")
    if sid is None:
        raise DataError(label, eid, fname, "no source (give 'source' on the field or the entry)")
    if sid not in sources:
        raise DataError(label, eid, fname, f"unknown source {sid!r} (not in 'sources')")
    try:
        q = parse(text)
    except UnitParseError as e:
        raise DataError(label, eid, fname, str(e)) from None
    try:
        q = conform(q, f"{expected}/chip" if per_chip else expected, per_chip=per_chip)
    except UnitParseError as e:
        raise DataError(label, eid, fname, f"{text!r}: {e}") from None
    problem = magnitude_problem(q, allow_zero=fname in MAY_BE_ZERO)
    if problem:
        raise DataError(label, eid, fname, f"{problem} (got {text!r})")
    src = sources[sid]
    return Value(q, text, src, str(as_of) if as_of else src.as_of, note)


def _example(unit):
    return {"FLOP/s": "989 TFLOP/s", "byte": "80 GB", "byte/s": "3.35 TB/s", "chip": "8 chip",
            "USD/hour": "2.99 USD/hour", "parameter": "70e9 parameter"}.get(unit, "1")


def _entries(doc, label, key, kind, fields, tags, choices, sources):
    raw = doc.get(key)
    if not isinstance(raw, dict) or not raw:
        raise DataError(label, key, None, f"missing or empty '{key}' mapping")
    out = {}
    for eid, e in raw.items():
        eid = str(eid)
        if not ID_RE.match(eid):
            raise DataError(label, eid, None, "ids are lowercase letters, digits and hyphens")
        if not isinstance(e, dict):
            raise DataError(label, eid, None, "expected a mapping of fields")
        known = set(fields) | set(tags) | set(choices)
        for f in e:
            if f not in known:
                raise DataError(label, eid, str(f), f"unknown field (known: {', '.join(sorted(known))})")
        for f, required in tags.items():
            if required and not str(e.get(f, "") or "").strip():
                raise DataError(label, eid, f, "missing")
        default_source = e.get("source")
        if default_source is not None and default_source not in sources:
            raise DataError(label, eid, "source", f"unknown source {default_source!r}")
        entry = Entry(eid, str(e["name"]), kind)
        for f in tags:
            if f in e and f not in ("source",):
                entry.tags[f] = str(e[f])
        for f, (allowed, required) in choices.items():
            if f not in e:
                if required:
                    raise DataError(label, eid, f, f"missing (one of {', '.join(allowed)})")
                continue
            raw_v = e[f]
            v = raw_v.get("value") if isinstance(raw_v, dict) else raw_v
            if v not in allowed:
                raise DataError(label, eid, f, f"{v!r} is not one of {', '.join(allowed)}")
            entry.tags[f] = v
            sid = raw_v.get("source", default_source) if isinstance(raw_v, dict) else default_source
            if sid is not None and sid not in sources:
                raise DataError(label, eid, f, f"unknown source {sid!r}")
        for f, (unit, required) in fields.items():
            if f not in e or e[f] is None:
                if required:
                    raise DataError(label, eid, f, "missing")
                continue
            entry.values[f] = _value(label, eid, f, e[f], default_source, sources, unit,
                                     kind == "hardware" and f in PER_CHIP)
        out[eid] = entry
    return out


def _check_model(label, m: Entry):
    tot, act = m.values["params_total"].quantity, m.values["params_active"].quantity
    if act > tot:
        raise DataError(label, m.id, "params_active", "exceeds params_total")
    att = m.tags["attention"]
    need = ("kv_latent_dim", "kv_rope_dim") if att == "mla" else ("n_kv_heads", "d_head")
    for f in need:
        if f not in m.values:
            raise DataError(label, m.id, f, f"missing (needed for {att} attention)")
    if ("experts" in m.values) != ("experts_per_token" in m.values):
        raise DataError(label, m.id, "experts_per_token", "give experts and experts_per_token together")
    if "experts" in m.values and m.values["experts_per_token"].quantity > m.values["experts"].quantity:
        raise DataError(label, m.id, "experts_per_token", "exceeds experts")
    if "experts" in m.values:
        for f in ("moe_layers", "d_expert", "d_model"):
            if f not in m.values:
                raise DataError(label, m.id, f, "missing (an MoE model needs it to count its routed parameters)")
    for f in WHOLE_NUMBER_FIELDS:
        if f in m.values:
            x = m.values[f].quantity.magnitude
            if abs(x - round(x)) > 1e-9:
                raise DataError(label, m.id, f, f"must be a whole number (got {m.values[f].text!r})")
    for small, large in (("moe_layers", "layers"), ("n_kv_heads", "n_heads")):
        if small in m.values and large in m.values and m.values[small].quantity > m.values[large].quantity:
            raise DataError(label, m.id, small, f"exceeds {large}")


def load(root: Path, hardware_file: str = "hardware.yaml", models_file: str = "models.yaml") -> Data:
    hw_doc = _read_yaml(root / hardware_file, hardware_file)
    hw_sources = _sources(hw_doc, hardware_file)
    hardware = _entries(hw_doc, hardware_file, "hardware", "hardware", HARDWARE_FIELDS,
                        HARDWARE_TAGS, {}, hw_sources)
    for h in hardware.values():
        if h.tags.get("per") not in ("package", "die"):
            raise DataError(hardware_file, h.id, "per", "must be 'package' or 'die'")
        if not any(f"flops_{f}" in h.values for f in FORMATS_ORDER):
            raise DataError(hardware_file, h.id, "flops_bf16", "missing (give at least one of flops_bf16, flops_fp8, flops_fp4)")
    m_doc = _read_yaml(root / models_file, models_file)
    m_sources = _sources(m_doc, models_file)
    models = _entries(m_doc, models_file, "models", "model", MODEL_FIELDS, MODEL_TAGS,
                      MODEL_CHOICES, m_sources)
    for m in models.values():
        _check_model(models_file, m)
    return Data(hardware, models, {**hw_sources, **m_sources},
                {"hardware": hardware_file, "models": models_file})
