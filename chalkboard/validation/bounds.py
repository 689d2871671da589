"""Published decode measurements against chalkboard's strict lower bound.

measurements.yaml holds published figures with their full set-up (chip and chip count, model,
number formats, batch, lengths). For each record this module evaluates ``step_time_min`` --
the strict lower bound on one decode step: compute, or the active weights plus the KV cache
read from HBM, whichever is longer -- through the same ``Scenario`` path as `eval`, and
compares speeds: efficiency = measured speed / bound speed (= bound time / measured time).

A prefill figure is judged against the strict prefill bound: under the record's stated layout
``prefill_time_layout_min`` (the all-to-all overlapped with compute, in the stated dispatch format),
else the prompt's compute alone.

The invariant: no record is faster than the bound (efficiency <= 1). A value a source did not
publish is never guessed; where the bound needs it, it takes the value that makes the bound
loosest and says so (``Result.assumed``).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..errors import InputError, MissingInput, NotApplicable
from ..evaluation.regimes import REGIMES, regime_index
from .records import LOOSEST_KV, PREFILL_FIELDS, SPEED_FIELDS, Record, record_context, record_scenario

PREFILL = "prefill"          # the regime of a record that gives only prefill figures
TOLERANCE = 1e-9            # float noise allowed on the invariant
LOOSEST_DISPATCH = "1 byte"  # the narrowest dispatch published (DeepEP's FP8), where a record states none


@dataclass
class Result:
    record: Record
    batch: float                 # the batch the bound used
    context: float               # tokens per sequence the bound used
    tokens_per_step: float
    step_time_min: float         # s
    bound_chip_rate: float       # token/s/chip the bound allows
    measured_chip_rate: float    # token/s/chip measured
    efficiency: float            # measured / bound (primary figure)
    efficiencies: dict[str, float]   # every speed figure given: field -> measured / bound
    regime: str
    dense: bool
    formats: str
    balance_batch: float | None
    measured_step_time: float | None  # s, from a published batch
    assumed: list[str]
    fits: str | None
    step_time_min_layout: float | None = None   # s: the strict bound under the record's stated layout
    compute_time: float = math.nan   # s: the strict bound's compute term
    memory_time: float = math.nan    # s: the strict bound's memory term (weights at least read, KV)

    @property
    def layout_efficiency(self) -> float | None:
        """The highest measured speed over the speed the layout-aware bound allows (None: no layout)."""
        if self.step_time_min_layout is None:
            return None
        return max(self.efficiencies.values()) * self.step_time_min_layout / self.step_time_min

    @property
    def violates(self) -> bool:
        return any(e > 1 + TOLERANCE for e in self.efficiencies.values())

    @property
    def chips_group(self) -> str:
        return "single chip" if self.record.chips == 1 else "many chips"

    @property
    def kind(self) -> str:
        return "dense" if self.dense else "MoE"


# -- evaluating -------------------------------------------------------------------------------
_TP = re.compile(r"^TP(\d+)\b")


def layout_sets(rec: Record) -> dict | None:
    """The layout a record's parallelism states, as --set values, or None if it states none:
    "TP4" is tensor parallelism over 4 chips; "TP8 with expert parallelism and attention data
    parallelism" (TensorRT-LLM's DeepSeek commands) runs the attention data-parallel and the
    experts expert-parallel over the 8 chips of the group, with no tensor split. Experts split
    over fewer chips than the group ("TP8, EP2": each expert also tensor-split) are not stated."""
    m = _TP.match(rec.parallelism.strip())
    if m is None or float(m.group(1)) != rec.chips:
        return None
    ep = re.search(r"\bEP(\d+)\b", rec.parallelism)
    if ep is not None and float(ep.group(1)) != rec.chips:
        return None   # experts also tensor-split (expert TP): a layout the derivations do not state
    if "attention data parallelism" in rec.parallelism:
        return {"tp": "1", "dp_attention": m.group(1), "ep": m.group(1), "pp": "1"}
    return {"tp": m.group(1), "dp_attention": "1", "pp": "1"}


def measured_rates(rec: Record) -> dict[str, tuple[float, str]]:
    """Each published speed as (value, per): per 'system' in token/s over system_chips, or per
    'user' in token/s per sequence."""
    m = {k: float(q.magnitude) for k, q in rec.measured.items()}
    sys_chips = rec.system_chips or rec.chips
    out = {}
    if "throughput_system" in m:
        out["throughput_system"] = (m["throughput_system"], "system")
    if "throughput_per_chip" in m:
        out["throughput_per_chip"] = (m["throughput_per_chip"] * sys_chips, "system")
    if "throughput_per_user" in m:
        out["throughput_per_user"] = (m["throughput_per_user"], "user")
    if "time_per_output_token" in m:
        out["time_per_output_token"] = (1 / m["time_per_output_token"], "user")
    if "request_latency" in m:
        out["request_latency"] = (rec.output_tokens / m["request_latency"], "user")
    return out


def evaluate_record(data, rec: Record) -> Result:
    """The bound for one record, through Scenario, and measured / bound for each speed it gives."""
    assumed = []
    context, note = record_context(rec)
    if note:
        assumed.append(note)
    if "kv_format" not in rec.formats:
        assumed.append(f"KV format not published: the bound takes {LOOSEST_KV} (the narrowest)")
    delta = rec.tokens_per_step or 1.0
    if rec.tokens_per_step:
        assumed.append(f"speculative decoding: up to {delta:g} tokens a sequence per step")
    rates = measured_rates(rec)
    if not rates:
        return _prefill_only(data, rec, assumed)
    throughput_first = any(per == "system" for _, per in rates.values())
    batch = rec.batch
    if batch is None:
        if throughput_first:
            probe = record_scenario(data, rec, 1, context, delta)
            batch = probe.mag("max_batch_capacity", "sequence")
            assumed.append(f"batch not published: the bound takes the largest that fits in HBM, {batch:,.0f}")
        else:
            batch = 1.0
            assumed.append("batch not published: the bound takes 1 sequence")
    sc = record_scenario(data, rec, batch, context, delta)
    t_min = sc.mag("step_time_min", "s")
    compute = sc.mag("compute_time", "s")
    memory = sc.mag("weight_fetch_time_min", "s") + sc.mag("kv_fetch_time", "s")
    copies = (rec.system_chips or rec.chips) / rec.chips
    bound_system = copies * batch * delta / t_min
    bound_user = delta / t_min
    effs = {f: v / (bound_system if per == "system" else bound_user) for f, (v, per) in rates.items()}
    primary = next(f for f in SPEED_FIELDS if f in effs)
    value, per = rates[primary]
    sys_chips = rec.system_chips or rec.chips
    measured_chip = value / sys_chips if per == "system" else value * batch / rec.chips
    bound_chip = bound_system / sys_chips
    regime = REGIMES[int(regime_index(compute, memory, batch))]
    try:
        b_star = sc.mag("balance_batch", "sequence")
    except Exception:  # noqa: BLE001 -- a chip without the rate: no balance batch
        b_star = None
    step_measured = None
    if rec.batch is not None:
        if per == "system":
            step_measured = rec.batch * copies * delta / value
        else:
            step_measured = delta / value
    t_layout = None
    layout = layout_sets(rec)
    if layout is not None:
        from ..evaluation.evaluate import Scenario
        try:
            t_layout = Scenario(data, rec.hardware, rec.model, {**sc.raw_overrides, **layout}).mag(
                "step_time_layout_min", "s")
        except (MissingInput, NotApplicable, InputError):
            t_layout = None
    effs.update(_prefill_efficiencies(data, rec, assumed))
    return Result(rec, batch, context, delta, t_min, bound_chip, measured_chip, effs[primary], effs, regime,
                  sc.is_dense, sc.formats_text(), b_star, step_measured, assumed, sc.fit(), t_layout,
                  compute, memory)


def prefill_bounds(data, rec: Record, assumed: list[str]) -> tuple[float, float]:
    """The strict prefill bounds of one prompt of the record's input length with its cached share:
    (prompt tokens a second per chip, counting the cached ones; the time to first token, s)."""
    from ..evaluation.evaluate import Scenario
    n = rec.input_tokens
    if n is None:
        n = 1.0
        assumed.append("prefill: input length not published, the bound takes 1 token (no attention)")
    o = {**rec.set, "batch": "1 sequence", "chips": f"{rec.chips:.17g} chip", "pass_tokens": f"{n:.17g} token/sequence",
         "weight_format": rec.formats["weight_format"], "kv_format": rec.formats.get("kv_format", LOOSEST_KV),
         "prefix_cache_share": repr(rec.prefix_cache_share or 0.0)}
    if "compute_format" in rec.formats:
        o["compute_format"] = rec.formats["compute_format"]
    sc = Scenario(data, rec.hardware, rec.model, o)
    layout = layout_sets(rec)
    if layout is not None:
        return _prefill_bounds_layout(data, rec, {**o, **layout}, n, assumed)
    # at any batch a prompt costs at least its compute; the cached tokens are counted, not computed
    return n / sc.mag("prefill_compute_time", "s") / rec.chips, sc.mag("prefill_time", "s")


def _prefill_bounds_layout(data, rec: Record, o: dict, n: float, assumed: list[str]) -> tuple[float, float]:
    """The strict prefill bounds under the record's stated layout (prefill_time_layout_min: the all-to-all
    overlapped with compute), at its published batch of prompts, else the largest the HBM holds (the rate
    only grows with the batch); the time to first token of one prompt alone."""
    from ..evaluation.evaluate import Scenario
    if "dispatch_bytes_per_activation" not in o:
        o = {**o, "dispatch_bytes_per_activation": LOOSEST_DISPATCH}
        assumed.append(f"prefill: dispatch format not published, the bound takes {LOOSEST_DISPATCH} (fp8)")
    one = Scenario(data, rec.hardware, rec.model, o)
    batch = rec.batch
    if batch is None:
        batch = one.mag("max_batch_capacity", "sequence")
        assumed.append(f"prefill: batch not published, the bound takes the largest the HBM holds, {batch:,.0f}")
    many = Scenario(data, rec.hardware, rec.model, {**o, "batch": f"{batch:.17g} sequence"})
    rate = batch * n / many.mag("prefill_time_layout_min", "s") / rec.chips
    return rate, one.mag("prefill_time_layout_min", "s")


def _prefill_efficiencies(data, rec: Record, assumed: list[str]) -> dict[str, float]:
    """measured / bound for each prefill figure a record gives."""
    m = {k: float(q.magnitude) for k, q in rec.measured.items() if k in PREFILL_FIELDS}
    if not m:
        return {}
    rate, ttft = prefill_bounds(data, rec, assumed)
    out = {}
    if "prefill_throughput_per_chip" in m:
        out["prefill_throughput_per_chip"] = m["prefill_throughput_per_chip"] / rate
    if "ttft" in m:
        out["ttft"] = ttft / m["ttft"]
    return out


def _prefill_only(data, rec: Record, assumed: list[str]) -> Result:
    """A record that gives only prefill figures: judged against the strict prefill bound alone."""
    effs = _prefill_efficiencies(data, rec, assumed)
    rate, ttft = prefill_bounds(data, rec, [])
    primary = next(f for f in PREFILL_FIELDS if f in effs)
    measured = float(rec.measured["prefill_throughput_per_chip"].magnitude) if primary != "ttft" else rate * effs["ttft"]
    from ..evaluation.evaluate import Scenario
    dense = Scenario(data, rec.hardware, rec.model, {}).is_dense
    fmts = "/".join(rec.formats.values())
    return Result(rec, 1.0, float(rec.input_tokens or 1), 1.0, ttft, rate, measured, effs[primary], effs, PREFILL,
                  dense, fmts, None, None, assumed, None)


def evaluate_all(data, records: list[Record]) -> list[Result]:
    return [evaluate_record(data, r) for r in records]
