"""measurements.yaml read and checked: each published decode measurement as a Record (chip and chip
count, model, number formats, batch, lengths, the figures it gives, its source), a bad entry one line
naming the file, the entry and the field; and a record's set-up as a Scenario, which loading already
builds once so an input the record cannot set fails here. Apart from bounds.py, which judges the
records against the strict bound, and runs.py, which fits the engine model to them."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from units import UnitParseError, conform, magnitude_problem, parse

from ..data.loader import (entries_of, NUMBER_FORMAT_NAMES, RATE_FORMATS, DataError, Source, source_id, read_sources, place_text,
                    is_whole, read_yaml)

MEASUREMENTS_FILE = "measurements.yaml"

# field -> (unit, whole number?)
QUANTITY_FIELDS = {
    "chips": ("chip", True),
    "system_chips": ("chip", True),
    "batch": ("sequence", True),
    "input_tokens": ("token", True),
    "output_tokens": ("token", True),
    "tokens_per_step": ("token/sequence", False),
    "accepted_tokens_per_step": ("token/sequence", False),
    "prefix_cache_share": ("", False),
}
MEASURED_FIELDS = {
    "time_per_output_token": "s",
    "throughput_per_user": "token/s",
    "throughput_system": "token/s",
    "throughput_per_chip": "token/s/chip",
    "request_latency": "s",
    "ttft": "s",
    "prefill_throughput_per_chip": "token/s/chip",
}
SPEED_FIELDS = ("throughput_system", "throughput_per_chip", "throughput_per_user",
                "time_per_output_token", "request_latency")
# prefill figures, judged against the strict prefill bound: prompt tokens a second per chip (the cached
# ones counted, as a source counts them, with the record's prefix_cache_share), and the time to first token
PREFILL_FIELDS = ("prefill_throughput_per_chip", "ttft")
TEXT_FIELDS = {"source": True, "where": True, "hardware": True, "model": True, "parallelism": True,
               "notes": False, "set_source": False, "engine": False}
# the serving engines a source names (the held-out split by engine groups records by it)
ENGINES = ("trtllm", "vllm", "sglang", "jetstream", "dynamo", "in-house")
FORMAT_FIELDS = {"weight_format": True, "kv_format": False, "compute_format": False}
REQUIRED_QUANTITIES = ("chips",)
KNOWN_FIELDS = (set(QUANTITY_FIELDS) | set(TEXT_FIELDS) | set(FORMAT_FIELDS) | {"measured", "set"})

LOOSEST_KV = "fp4"          # the narrowest KV format chalkboard knows


@dataclass
class Record:
    id: str
    source: Source
    where: str
    hardware: str
    model: str
    parallelism: str
    chips: float
    formats: dict[str, str]
    measured: dict[str, object]                  # field -> Pint quantity
    system_chips: float | None = None
    batch: float | None = None
    input_tokens: float | None = None
    output_tokens: float | None = None
    tokens_per_step: float | None = None
    prefix_cache_share: float | None = None
    set: dict[str, str] = field(default_factory=dict)
    set_source: Source | None = None
    notes: str | None = None
    engine: str | None = None                    # the engine the source names (ENGINES), if it names one
    accepted_tokens_per_step: float | None = None   # speculative decoding: tokens a step gains on average, as stated


# -- loading ----------------------------------------------------------------------------------
def _quantity(label, eid, fld, raw, unit, whole):
    if not isinstance(raw, str):
        shown = "a list" if isinstance(raw, list) else "a mapping" if isinstance(raw, dict) else repr(raw)
        raise DataError(label, eid, fld, f"value must be a quoted string with its unit, e.g. \"1 {unit}\" (got {shown})")
    place_text(label, eid, fld, raw)
    try:
        q = parse(raw)
        q = conform(q, unit, per_chip=unit.endswith("/chip"))
    except UnitParseError as e:
        raise DataError(label, eid, fld, f"{raw!r}: {e}") from None
    problem = magnitude_problem(q)
    if problem:
        raise DataError(label, eid, fld, f"{problem} (got {raw!r})")
    if whole and not is_whole(q.magnitude):
        raise DataError(label, eid, fld, f"must be a whole number (got {raw!r}; it counts something)")
    return q


def load_measurements(root: Path, data, label: str = MEASUREMENTS_FILE) -> list[Record]:
    """measurements.yaml, checked: DataError in one line naming the file, the entry and the field."""
    doc = read_yaml(root / label, label)
    if not isinstance(doc, dict):
        raise DataError(label, None, None, "expected a mapping with 'sources' and 'measurements'")
    for k in doc:
        if k not in ("sources", "measurements"):
            raise DataError(label, place_text(label, None, None, k), None, "unknown section (known: sources, measurements)")
    sources = read_sources(doc, label)
    out = [_record(label, eid, e, sources, data) for eid, e in entries_of(doc, label, "measurements")]
    return out


def _record(label, eid, e, sources, data) -> Record:
    for f in e:
        if f not in KNOWN_FIELDS:
            raise DataError(label, eid, place_text(label, eid, None, f),
                            f"unknown field (known: {', '.join(sorted(KNOWN_FIELDS))})")
    text = {}
    for f, required in TEXT_FIELDS.items():
        v = place_text(label, eid, f, e.get(f))
        if required and not (v or "").strip():
            raise DataError(label, eid, f, "missing")
        text[f] = v
    src = sources[source_id(label, eid, "source", text["source"], sources)]
    set_src = sources[source_id(label, eid, "set_source", text["set_source"], sources)] if text["set_source"] else None
    if text["hardware"] not in data.hardware:
        raise DataError(label, eid, "hardware", f"unknown hardware id {text['hardware']!r} (not in {data.files['hardware']})")
    if text["model"] not in data.models:
        raise DataError(label, eid, "model", f"unknown model id {text['model']!r} (not in {data.files['models']})")
    formats = {}
    for f, required in FORMAT_FIELDS.items():
        v = e.get(f)
        if v is None:
            if required:
                raise DataError(label, eid, f, f"missing (one of {', '.join(NUMBER_FORMAT_NAMES)})")
            continue
        allowed = RATE_FORMATS if f == "compute_format" else NUMBER_FORMAT_NAMES
        if not isinstance(v, str) or v not in allowed:
            shown = repr(v) if not isinstance(v, (list, dict)) else "a list or mapping"
            raise DataError(label, eid, f, f"{shown} is not one of {', '.join(allowed)}")
        formats[f] = v
    qs = {}
    for f, (unit, whole) in QUANTITY_FIELDS.items():
        if e.get(f) is None:
            if f in REQUIRED_QUANTITIES:
                raise DataError(label, eid, f, "missing")
            continue
        qs[f] = _quantity(label, eid, f, e[f], unit, whole).magnitude
    if qs.get("tokens_per_step") is not None and qs["tokens_per_step"] < 1:
        raise DataError(label, eid, "tokens_per_step", "must be at least 1 token/sequence")
    acc = qs.get("accepted_tokens_per_step")
    if acc is not None and not 1 <= acc <= (qs.get("tokens_per_step") or 0):
        raise DataError(label, eid, "accepted_tokens_per_step", "needs tokens_per_step, and lies from 1 to it")
    if text["engine"] is not None and text["engine"] not in ENGINES:
        raise DataError(label, eid, "engine", f"{text['engine']!r} is not one of {', '.join(ENGINES)}")
    if qs.get("system_chips") is not None:
        copies = qs["system_chips"] / qs["chips"]
        if not is_whole(copies) or copies < 1:
            raise DataError(label, eid, "system_chips", "must be a whole multiple of chips (copies of the model)")
    m = e.get("measured")
    if not isinstance(m, dict) or not m:
        raise DataError(label, eid, "measured", f"missing: give at least one of {', '.join(SPEED_FIELDS)}")
    measured = {}
    for f, v in m.items():
        if f not in MEASURED_FIELDS:
            raise DataError(label, eid, f"measured.{place_text(label, eid, 'measured', f)}",
                            f"unknown figure (known: {', '.join(MEASURED_FIELDS)})")
        measured[f] = _quantity(label, eid, f"measured.{f}", v, MEASURED_FIELDS[f], False)
    if not any(f in measured for f in SPEED_FIELDS + PREFILL_FIELDS):
        raise DataError(label, eid, "measured", f"no speed: give one of {', '.join(SPEED_FIELDS + PREFILL_FIELDS)}")
    if qs.get("prefix_cache_share") is not None and not 0 <= qs["prefix_cache_share"] < 1:
        raise DataError(label, eid, "prefix_cache_share", "must be at least 0 and below 1 (a share of the prompt)")
    if "request_latency" in measured and qs.get("output_tokens") is None:
        raise DataError(label, eid, "measured.request_latency", "needs output_tokens (tokens per request)")
    overrides = e.get("set") or {}
    if not isinstance(overrides, dict):
        raise DataError(label, eid, "set", "expected a mapping of input: \"value unit\"")
    for k, v in overrides.items():
        if not isinstance(v, str):
            raise DataError(label, eid, f"set.{place_text(label, eid, 'set', k)}", "value must be a quoted string with its unit")
        place_text(label, eid, f"set.{k}", v)
        if k in ("batch", "context", "chips", "tokens_per_step") or k in FORMAT_FIELDS or k == "format":
            raise DataError(label, eid, f"set.{k}", "give the workload and formats as the record's own fields")
    if overrides and set_src is None:
        raise DataError(label, eid, "set_source", "a record that sets model or hardware inputs names their source")
    rec = Record(eid, src, text["where"], text["hardware"], text["model"], text["parallelism"], qs["chips"],
                 formats, measured, qs.get("system_chips"), qs.get("batch"), qs.get("input_tokens"),
                 qs.get("output_tokens"), qs.get("tokens_per_step"), qs.get("prefix_cache_share"),
                 {str(k): str(v) for k, v in overrides.items()},
                 set_src, text["notes"], text["engine"], acc)
    from ..errors import InputError, MissingInput
    try:
        record_scenario(data, rec, rec.batch or 1, record_context(rec)[0], rec.tokens_per_step or 1)
    except (InputError, MissingInput) as err:
        raise DataError(label, eid, "set" if rec.set else "hardware", str(err)) from None
    return rec


# -- a record's set-up ------------------------------------------------------------------------
def record_context(rec: Record) -> tuple[float, str | None]:
    """Average context over the output (input + output/2), or the shortest where not published."""
    if rec.input_tokens is None and rec.output_tokens is None:
        return 1.0, "context: lengths not published, the bound takes 1 token (the shortest)"
    ctx = (rec.input_tokens or 0) + (rec.output_tokens or 0) / 2
    note = None
    if rec.input_tokens is None:
        note = "context: input length not published, the bound counts only half the output"
    elif rec.output_tokens is None:
        note = "context: output length not published, the bound counts only the input"
    return max(ctx, 1.0), note


def record_scenario(data, rec: Record, batch: float, context: float, delta: float):
    from ..evaluation.evaluate import Scenario
    o = {**rec.set, "batch": f"{batch:.17g} sequence", "context": f"{context:.17g} token/sequence",
         "chips": f"{rec.chips:.17g} chip", "weight_format": rec.formats["weight_format"],
         "kv_format": rec.formats.get("kv_format", LOOSEST_KV)}
    if "compute_format" in rec.formats:
        o["compute_format"] = rec.formats["compute_format"]
    if delta != 1:
        o["tokens_per_step"] = f"{delta:.17g} token/sequence"
    return Scenario(data, rec.hardware, rec.model, o)
