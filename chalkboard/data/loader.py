"""Load and validate hardware.yaml, models.yaml and prices.yaml.

Every value in the files is a string with a unit, read by Pint (never by YAML), checked
against the dimension of the quantity it feeds, and carried with its source and as-of
date. Any problem raises DataError naming the file, the entry and the field. A file is
parsed by safety.py's bounded loader.
"""
from __future__ import annotations

import pickle
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from units import UnitParseError, conform, parse

from .safety import CONTROL_CHARS, MAX_YAML_BYTES, MAX_YAML_DEPTH, UniqueKeyLoader

ID_RE = re.compile(r"^[a-z0-9]+(?:[.-][a-z0-9]+)*$")
FORMATS_ORDER = ("fp4", "fp8", "bf16")  # float formats, narrow to wide: the compute fallback order
NUMBER_FORMAT_NAMES = ("fp4", "fp8", "bf16", "int4", "int8")
RATE_FORMATS = ("fp4", "fp8", "int8", "bf16")  # formats a chip may publish a dense rate for
ATTENTIONS = ("mha", "gqa", "mla")
EMBEDDINGS = ("tied", "untied")   # is the output head the input embedding?
MLPS = ("gated", "plain")         # gate, up, down (SwiGLU) or up, down


class DataError(Exception):
    """One bad thing in a data file, said in one line: file: entry: field: what is wrong."""

    def __init__(self, file: str, entry: str | None, fld: str | None, message: str):
        self.file, self.entry, self.field, self.message = file, entry, fld, message
        where = ": ".join(p for p in (file, entry, fld) if p)
        super().__init__(f"{where}: {message}")

    def __reduce__(self):   # sent back whole from a forked process (chalkboard.cache.forked)
        return DataError, (self.file, self.entry, self.field, self.message)


@dataclass(frozen=True)
class Source:
    id: str
    title: str
    url: str
    as_of: str
    note: str | None = None
    secondary: str | None = None    # why a secondary source stands in for a primary one (low confidence)


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
    file: str | None = None           # the file it was read from, when not hardware.yaml/models.yaml
    tag_sources: dict[str, str] = field(default_factory=dict)  # where a tag was read, when not the file's
    assumed: list[str] = field(default_factory=list)  # what reading it assumed, one sentence each

    def __contains__(self, key):
        return key in self.values

    def get(self, key):
        return self.values.get(key)


# The fields each file requires. The unit of each field (per chip where it ends in /chip; a
# value may omit the '/chip', "989 TFLOP/s", or state it) and its rules are those of the input it
# feeds, declared in derivations/ (``fields``); launch_year is the file's own, read by no formula.
REQUIRED = {"hardware": ("launch_year", "hbm_capacity", "hbm_bandwidth"),   # and one flops_* at least
            "model": ("params_total", "params_active", "layers"), "price": ("input_price", "output_price"),
            "tier": ("capacity", "bandwidth")}
# a chip's launch, past or announced: the figures set the chips on a time axis, which a year of 1e29
# stretched until matplotlib's layout collapsed; the first integrated circuit was made in 1958
YEARS = (1958, 2100)
HARDWARE_TAGS = {"name": True, "vendor": True, "family": False, "per": True, "note": False,
                 "source": False}
# how the chips of a scale-up domain are wired: a switch (NVLink) or a full mesh of links (AMD
# Infinity Fabric) reaches every peer in one hop; a torus (TPU ICI, Trainium NeuronLink) does not
HARDWARE_CHOICES = {"scaleup_topology": (("switch", "mesh", "torus"), False)}
SAFE_URL = re.compile(r"^https?://[^\s]+$", re.I)

MODEL_CHOICES = {"weight_format": (NUMBER_FORMAT_NAMES, True), "kv_format": (NUMBER_FORMAT_NAMES, False),
                 "attention": (ATTENTIONS, True), "embeddings": (EMBEDDINGS, False),
                 "mlp": (MLPS, False)}
MODEL_TAGS = {"name": True, "source": False, "note": False, "label": False}

# prices.yaml: API price snapshots (USD per million tokens) and the memory tiers below HBM.
PRICE_TAGS = {"name": True, "provider": True, "source": False, "note": False}
LONG_CONTEXT_FIELDS = ("long_context_threshold", "long_input_price", "long_output_price")
TIER_TAGS = {"name": True, "source": False, "note": False}
MEMORY_TIERS = ("ddr", "flash", "disk")   # below HBM, fastest first; HBM is the chip's own


def fields(kind: str) -> dict:
    """The fields of a ``kind`` entry ("hardware", "model", "price", "tier") -> the input each feeds
    (its unit and rules), in declaration order: every declared input of that origin whose field is
    a name (a tier's: the first tier's), flops_<format> for each format a chip may publish a rate in."""
    from derivations import REGISTRY
    from derivations.core import Quantity, Rules

    out = {"launch_year": Quantity("launch_year", None, "", "launch year", "hardware", "y",
                                   rules=Rules(whole=True))} if kind == "hardware" else {}
    for q in REGISTRY.inputs(kind):
        f = q.field.split(".")[-1]
        if f.startswith("flops_<"):
            out.update({f"flops_{r}": q for r in RATE_FORMATS})
        elif "<" not in f and f not in out and f not in MODEL_CHOICES:
            out[f] = q
    return out


def too_large(name: str, magnitude: float) -> str | None:
    """Why ``magnitude`` (in the input's declared unit) is past the largest value input ``name``
    declares, or None."""
    from derivations import REGISTRY

    most = REGISTRY[name].rules.most if name in REGISTRY else None
    return f"at most {most[0]:,} ({most[1]})" if most and magnitude > most[0] else None


@dataclass
class Data:
    hardware: dict[str, Entry]
    models: dict[str, Entry]
    sources: dict[str, Source]
    files: dict[str, str]
    prices: dict[str, Entry] = field(default_factory=dict)
    tiers: dict[str, Entry] = field(default_factory=dict)
    default_price: str | None = None
    config_model: str | None = None   # the id of the model read with --model-config, if any


def read_text(path: Path, label: str) -> str:
    """A user's text file, or DataError in one line: missing, a folder, too large, not UTF-8."""
    try:
        st = path.stat()
        if stat.S_ISDIR(st.st_mode):
            raise DataError(label, None, None, "is a folder, not a file")
        if not stat.S_ISREG(st.st_mode):
            raise DataError(label, None, None, "is not a regular file")
        if st.st_size > MAX_YAML_BYTES:
            raise DataError(label, None, None, f"too large ({st.st_size / 2**20:.0f} MiB; "
                                               f"at most {MAX_YAML_BYTES // 2**20} MiB)")
        with open(path, "rb") as f:
            raw = f.read(MAX_YAML_BYTES + 1)
    except FileNotFoundError:
        raise DataError(label, None, None, "file not found") from None
    except OSError as e:
        raise DataError(label, None, None, f"cannot read ({e.strerror or e})") from None
    if len(raw) > MAX_YAML_BYTES:
        raise DataError(label, None, None, f"too large (at most {MAX_YAML_BYTES // 2**20} MiB)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise DataError(label, None, None, f"not UTF-8 text: byte 0x{raw[e.start]:02x} at line {line} "
                                           "(save the file as UTF-8)") from None


# label -> (text, its document pickled): set to a dict by a process that reads the same files
# again and again (the edit loop), where a file unchanged since its last read is not parsed again
# (PyYAML's loader in Python takes some 0.1 s for the five files)
PARSED: dict | None = None


def read_yaml(path: Path, label: str):
    """A user's YAML file, parsed safely (see UniqueKeyLoader), or DataError in one line."""
    text = read_text(path, label)
    if PARSED is not None:
        got = PARSED.get(label)
        if got is not None and got[0] == text:
            return pickle.loads(got[1])   # a copy: the caller may change what it is given
    try:
        doc = yaml.load(text, Loader=UniqueKeyLoader)
        if PARSED is not None:
            PARSED[label] = (text, pickle.dumps(doc, protocol=5))
        return doc
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        if "nesting depth" in problem:   # PyYAML >= 6.0.4 stops deep nesting itself, in its own words
            raise DataError(label, None, None, f"YAML nested too deeply at {where}"
                                               f"at most {MAX_YAML_DEPTH} levels") from None
        kind = "YAML error" if isinstance(e, yaml.constructor.ConstructorError) else "YAML syntax error"
        raise DataError(label, None, None, f"{kind} at {where}{problem}") from None
    except RecursionError:
        raise DataError(label, None, None, f"YAML nested too deeply (at most {MAX_YAML_DEPTH} levels)") from None


def _read_yaml(path: Path, label: str):
    doc = read_yaml(path, label)
    if not isinstance(doc, dict):
        raise DataError(label, None, None, "expected a mapping with 'sources' and entries")
    return doc


def place_text(label, entry, fld, v) -> str | None:
    """A text field: a plain value (never a list or mapping), without control or bidi characters."""
    if v is None:
        return None
    if isinstance(v, (list, dict, set, tuple)):
        raise DataError(label, entry, fld, f"expected text, got a {'list' if isinstance(v, (list, tuple, set)) else 'mapping'}")
    if isinstance(v, bytes):
        raise DataError(label, entry, fld, "expected text, got binary data")
    t = str(v)
    bad = CONTROL_CHARS.search(t)
    if bad:
        raise DataError(label, entry, fld, f"contains the control or bidirectional character "
                                           f"U+{ord(bad.group()):04X}; remove it")
    return t


def source_id(label, entry, fld, sid, sources):
    if sid is None:
        return None
    if not isinstance(sid, (str, int)) or isinstance(sid, bool):
        raise DataError(label, entry, fld, "expected a source id")
    sid = str(sid)
    if sid not in sources:
        raise DataError(label, entry, fld, f"unknown source {sid!r} (not in 'sources')")
    return sid


def read_sources(doc, label) -> dict[str, Source]:
    raw = doc.get("sources")
    if not isinstance(raw, dict) or not raw:
        raise DataError(label, "sources", None, "missing or empty 'sources' mapping")
    out = {}
    for sid, s in raw.items():
        where = f"sources.{place_text(label, 'sources', None, sid)}"
        if not isinstance(s, dict):
            raise DataError(label, where, None, "expected a mapping with title, url, as_of")
        for f in s:
            place_text(label, where, str(f), s[f])
        for f in ("title", "as_of"):
            if not str(s.get(f, "") or "").strip():
                raise DataError(label, where, f, "missing")
        if "url" not in s:
            raise DataError(label, where, "url", "missing (use \"\" for an illustrative entry)")
        url = str(s.get("url") or "").strip()
        if url and not SAFE_URL.match(url):
            raise DataError(label, where, "url", f"{url[:60]!r}: only http:// and https:// links are allowed")
        unknown = sorted(set(map(str, s)) - {"title", "url", "as_of", "note", "secondary"})
        if unknown:
            raise DataError(label, where, unknown[0], "unknown key (known: title, url, as_of, note, secondary)")
        secondary = place_text(label, where, "secondary", s.get("secondary"))
        if "secondary" in s and not (secondary or "").strip():
            raise DataError(label, where, "secondary", "say why no primary source is used (or remove the key)")
        out[str(sid)] = Source(str(sid), str(s["title"]), url, str(s["as_of"]), place_text(label, where, "note", s.get("note")),
                               secondary)
    return out


def _value(label, eid, fname, raw, default_source, sources, q):
    if isinstance(raw, dict):
        if "value" not in raw:
            raise DataError(label, eid, fname, "missing 'value'")
        for k in raw:
            if k not in ("value", "source", "as_of", "note"):
                raise DataError(label, eid, f"{fname}.{place_text(label, eid, fname, k)}",
                                "unknown key (known: value, source, as_of, note)")
        text, sid, as_of, note = raw["value"], raw.get("source", default_source), raw.get("as_of"), raw.get("note")
        as_of, note = place_text(label, eid, f"{fname}.as_of", as_of), place_text(label, eid, f"{fname}.note", note)
    else:
        text, sid, as_of, note = raw, default_source, None, None
    if not isinstance(text, str):
        shown = "a list" if isinstance(text, list) else "a mapping" if isinstance(text, dict) else repr(text)
        raise DataError(label, eid, fname,
                        f"value must be a quoted string with its unit, e.g. \"{_example(q.unit)}\" (got {shown})")
    place_text(label, eid, fname, text)
    if sid is None:
        raise DataError(label, eid, fname, "no source (give 'source' on the field or the entry)")
    sid = source_id(label, eid, fname, sid, sources)
    try:
        v = parse(text)
    except UnitParseError as e:
        raise DataError(label, eid, fname, str(e)) from None
    try:
        v = conform(v, q.unit, per_chip=q.unit.endswith("/chip"))
    except UnitParseError as e:
        raise DataError(label, eid, fname, f"{text!r}: {e}") from None
    problem = q.rules.problem(v, q.unit)   # the input's declared rules, as --set reads them
    if problem:
        raise DataError(label, eid, fname, f"{problem} (got {text!r})")
    if fname == "launch_year" and not YEARS[0] <= v.magnitude <= YEARS[1]:
        raise DataError(label, eid, fname, f"a year from {YEARS[0]} to {YEARS[1]} (got {text!r})")
    src = sources[sid]
    return Value(v, text, src, str(as_of) if as_of else src.as_of, note)


def is_whole(x) -> bool:
    """A count: a finite number within 1e-9 of a whole one."""
    return abs(x - round(x)) <= 1e-9


def _example(unit):
    unit = unit.removesuffix("/chip") if unit.endswith("/chip") else unit
    return {"USD/Mtoken": "5 USD/Mtoken", "token/sequence": "200000 token/sequence",
            "FLOP/s": "989 TFLOP/s", "byte": "80 GB", "byte/s": "3.35 TB/s", "chip": "8 chip",
            "USD/hour": "2.99 USD/hour", "parameter": "70e9 parameter"}.get(unit, "1")


def entries_of(doc, label: str, key: str):
    """The (id, fields) of a data file's ``key`` mapping, each id and entry checked (one-line errors)."""
    raw = doc.get(key)
    if not isinstance(raw, dict) or not raw:
        raise DataError(label, key, None, f"missing or empty '{key}' mapping")
    for eid, e in raw.items():
        eid = str(eid)
        if not ID_RE.match(eid):
            raise DataError(label, eid, None, "ids are lowercase letters, digits and hyphens")
        if not isinstance(e, dict):
            raise DataError(label, eid, None, "expected a mapping of fields")
        yield eid, e


def _entries(doc, label, key, kind, tags, choices, sources):
    out = {}
    for eid, e in entries_of(doc, label, key):
        schema = fields(kind)
        known = set(schema) | set(tags) | set(choices)
        for f in e:
            if f not in known:
                raise DataError(label, eid, place_text(label, eid, None, f),
                                f"unknown field (known: {', '.join(sorted(known))})")
        for f in tags:
            place_text(label, eid, f, e.get(f))
        for f, required in tags.items():
            if required and not str(e.get(f, "") or "").strip():
                raise DataError(label, eid, f, "missing")
        default_source = source_id(label, eid, "source", e.get("source"), sources)
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
            if not isinstance(v, str) or v not in allowed:
                shown = repr(v) if not isinstance(v, (list, dict)) else "a list or mapping"
                raise DataError(label, eid, f, f"{shown} is not one of {', '.join(allowed)}")
            entry.tags[f] = v
            sid = raw_v.get("source", default_source) if isinstance(raw_v, dict) else default_source
            source_id(label, eid, f, sid, sources)
        for f, q in schema.items():
            if f not in e or e[f] is None:
                if f in REQUIRED[kind]:
                    raise DataError(label, eid, f, "missing")
                continue
            entry.values[f] = _value(label, eid, f, e[f], default_source, sources, q)
        out[eid] = entry
    return out


def check_model(label, m: Entry):
    schema = fields("model")

    def given(f):   # a field's value in its input's declared unit, or None
        return m.values[f].quantity.to(schema[f].unit or "").magnitude if f in m.values else None

    for f in m.values:   # each input's declared order and divisibility (params_active within params_total)
        broken = schema[f].rules.against(f, given(f), given)
        if broken:
            raise DataError(label, m.id, f, broken[1])
    att = m.tags["attention"]
    need = ("kv_latent_dim", "kv_rope_dim") if att == "mla" else ("n_kv_heads", "d_head")
    for f in need:
        if f not in m.values:
            raise DataError(label, m.id, f, f"missing (needed for {att} attention)")
    if ("experts" in m.values) != ("experts_per_token" in m.values):
        raise DataError(label, m.id, "experts_per_token", "give experts and experts_per_token together")
    if "experts" in m.values:
        for f in ("moe_layers", "d_expert", "d_model"):
            if f not in m.values:
                raise DataError(label, m.id, f, "missing (an MoE model needs it to count its routed parameters)")


PRICES_FILE = "prices.yaml"   # optional under this default name; a --prices-file given must exist


def load_prices(root: Path, prices_file: str = PRICES_FILE):
    """(price entries, memory-tier entries, default price id, sources) from prices.yaml."""
    doc = _read_yaml(root / prices_file, prices_file)
    known = {"default", "sources", "prices", "memory_tiers"}
    for k in doc:
        if k not in known:
            raise DataError(prices_file, place_text(prices_file, None, None, k), None,
                            f"unknown section (known: {', '.join(sorted(known))})")
    sources = read_sources(doc, prices_file)
    prices = _entries(doc, prices_file, "prices", "price", PRICE_TAGS, {}, sources)
    for p in prices.values():
        given = [f for f in LONG_CONTEXT_FIELDS if f in p.values]
        if given and len(given) != len(LONG_CONTEXT_FIELDS):
            missing = next(f for f in LONG_CONTEXT_FIELDS if f not in p.values)
            raise DataError(prices_file, p.id, missing,
                            f"missing (a long-context tier gives {', '.join(LONG_CONTEXT_FIELDS)} together)")
        for long, base in (("long_input_price", "input_price"), ("long_output_price", "output_price")):
            if long in p.values and p.values[long].quantity < p.values[base].quantity:
                raise DataError(prices_file, p.id, long, f"is below {base} (a long-context tier costs more)")
    tiers = _entries(doc, prices_file, "memory_tiers", "tier", TIER_TAGS, {}, sources)
    for t in tiers:
        if t not in MEMORY_TIERS:
            raise DataError(prices_file, t, None, f"unknown memory tier (known: {', '.join(MEMORY_TIERS)})")
    default = doc.get("default")
    if not isinstance(default, str) or not default.strip():
        raise DataError(prices_file, "default", None, "missing: name the price entry used unless --set price=ID")
    if default not in prices:
        raise DataError(prices_file, "default", None, f"{default!r} is not a price entry (known: {', '.join(prices)})")
    return prices, tiers, default, sources


def load(root: Path, hardware_file: str = "hardware.yaml", models_file: str = "models.yaml",
         prices_file: str = "prices.yaml") -> Data:
    """The hardware, model and price files (a model from a Hugging Face config.json is added to
    them by evaluation/configmodel.py's add_config_model)."""
    hw_doc = _read_yaml(root / hardware_file, hardware_file)
    hw_sources = read_sources(hw_doc, hardware_file)
    hardware = _entries(hw_doc, hardware_file, "hardware", "hardware",
                        HARDWARE_TAGS, HARDWARE_CHOICES, hw_sources)
    for h in hardware.values():
        if h.tags.get("per") not in ("package", "die"):
            raise DataError(hardware_file, h.id, "per", "must be 'package' or 'die'")
        if not any(f"flops_{f}" in h.values for f in FORMATS_ORDER):
            raise DataError(hardware_file, h.id, "flops_bf16", "missing (give at least one of flops_bf16, flops_fp8, flops_fp4)")
    m_doc = _read_yaml(root / models_file, models_file)
    m_sources = read_sources(m_doc, models_file)
    models = _entries(m_doc, models_file, "models", "model", MODEL_TAGS,
                      MODEL_CHOICES, m_sources)
    for m in models.values():
        check_model(models_file, m)
    if prices_file == PRICES_FILE and not (root / prices_file).exists():
        # no price data beside the other files: the price-dependent quantities are not applicable
        prices, tiers, default_price, p_sources = {}, {}, None, {}
    else:
        prices, tiers, default_price, p_sources = load_prices(root, prices_file)
    data = Data(hardware, models, {**hw_sources, **m_sources, **p_sources},
                {"hardware": hardware_file, "models": models_file, "prices": prices_file},
                prices, tiers, default_price)
    return data
