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
import statistics
from dataclasses import dataclass
from pathlib import Path

from .measurements import (LOOSEST_KV, MEASUREMENTS_FILE, PREFILL_FIELDS, SPEED_FIELDS, Record, record_context, record_scenario,
                           load_measurements)
from .errors import InputError, MissingInput, NotApplicable
from .evaluation.regimes import REGIMES, SMALL_BATCH, regime_index  # noqa: F401 - SMALL_BATCH named here too

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


def _measured_rates(rec: Record) -> dict[str, tuple[float, str]]:
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
    rates = _measured_rates(rec)
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
        from .evaluation.evaluate import Scenario
        try:
            t_layout = Scenario(data, rec.hardware, rec.model, {**sc.raw_overrides, **layout}).mag(
                "step_time_layout_min", "s")
        except (MissingInput, NotApplicable, InputError):
            t_layout = None
    effs.update(_prefill_efficiencies(data, rec, assumed))
    return Result(rec, batch, context, delta, t_min, bound_chip, measured_chip, effs[primary], effs, regime,
                  sc.is_dense, sc.formats_text(), b_star, step_measured, assumed, sc.fit(), t_layout,
                  compute, memory)


def _prefill_bounds(data, rec: Record, assumed: list[str]) -> tuple[float, float]:
    """The strict prefill bounds of one prompt of the record's input length with its cached share:
    (prompt tokens a second per chip, counting the cached ones; the time to first token, s)."""
    from .evaluation.evaluate import Scenario
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
    from .evaluation.evaluate import Scenario
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
    rate, ttft = _prefill_bounds(data, rec, assumed)
    out = {}
    if "prefill_throughput_per_chip" in m:
        out["prefill_throughput_per_chip"] = m["prefill_throughput_per_chip"] / rate
    if "ttft" in m:
        out["ttft"] = ttft / m["ttft"]
    return out


def _prefill_only(data, rec: Record, assumed: list[str]) -> Result:
    """A record that gives only prefill figures: judged against the strict prefill bound alone."""
    effs = _prefill_efficiencies(data, rec, assumed)
    rate, ttft = _prefill_bounds(data, rec, [])
    primary = next(f for f in PREFILL_FIELDS if f in effs)
    measured = float(rec.measured["prefill_throughput_per_chip"].magnitude) if primary != "ttft" else rate * effs["ttft"]
    from .evaluation.evaluate import Scenario
    dense = Scenario(data, rec.hardware, rec.model, {}).is_dense
    fmts = "/".join(rec.formats.values())
    return Result(rec, 1.0, float(rec.input_tokens or 1), 1.0, ttft, rate, measured, effs[primary], effs, PREFILL,
                  dense, fmts, None, None, assumed, None)


def evaluate_all(data, records: list[Record]) -> list[Result]:
    return [evaluate_record(data, r) for r in records]


# -- statistics -------------------------------------------------------------------------------
def _stats(values: list[float]) -> dict:
    v = sorted(values)
    if not v:
        return {"n": 0}
    q = statistics.quantiles(v, n=4, method="inclusive") if len(v) > 1 else [v[0], v[0], v[0]]
    return {"n": len(v), "median": statistics.median(v), "min": v[0], "max": v[-1],
            "q1": q[0], "q3": q[2], "geomean": math.exp(sum(math.log(x) for x in v) / len(v))}


def summary(results: list[Result]) -> dict:
    """Efficiency statistics: all records, and by regime, dense vs MoE, single chip vs many."""
    groups = {"all records": [r.efficiency for r in results]}
    for g in (*REGIMES, PREFILL):
        groups[g] = [r.efficiency for r in results if r.regime == g]
    for g in ("dense", "MoE"):
        groups[g] = [r.efficiency for r in results if r.kind == g]
    for g in ("single chip", "many chips"):
        groups[g] = [r.efficiency for r in results if r.chips_group == g]
    return {k: _stats(v) for k, v in groups.items()}


def fitted_runs(results: list[Result]) -> list[Result]:
    """The runs an expected efficiency is fitted to: those that measure decode (or a prefill alone) as
    the expected number runs it. A throughput whose batch was not published enters as a one-sided
    bound (at most the speed at the largest batch that fits); a run with speculative decoding enters
    where its source states the acceptance (tokens a step gains on average), else it is left out (its
    speed depends on an acceptance the expected number cannot know). A prefill alone enters by its
    time to first token (one prompt); a prefill throughput averaged over a service at an unknown load
    says only that the engine is at least that fast, and is left out."""
    return [r for r in results if (not r.record.tokens_per_step or r.record.accepted_tokens_per_step)
            and (r.regime != PREFILL or "ttft" in r.efficiencies)]


def _upper(r: Result) -> bool:
    """Whether a run is a one-sided bound: a throughput over a batch the source did not publish."""
    return r.record.batch is None and r.regime != PREFILL and not any(
        per == "user" for _, per in _measured_rates(r.record).values())


def _prefill_run(data, r: Result):
    """A run that gives only a time to first token: one prompt's strict bound, and the speed (prompts
    a second) measured; the fit sees prefill / prefill_efficiency plus every layer's fixed time once
    (a prefill is one pass through the layers, as a decode step is)."""
    from . import calibration
    _, ttft = _prefill_bounds(data, r.record, [])
    rec = r.record
    layers = record_scenario(data, rec, 1.0, 1.0, 1.0).mag("layers")
    return calibration.Run(0.0, 0.0, 0.0, layers, 1.0, ttft, 1.0, r.efficiencies["ttft"] / ttft, rec.source.id, rec.hardware,
                           rec.model, rec.engine or "", rec.id, r.regime)


def _calibration_run(data, r: Result):
    """What one fitted run gives the efficiency fit (calibration.Run): its decode step's terms (under
    its stated layout where it states one, with the collectives), and, where the measured rate is a
    throughput over whole requests, the bound on one prompt's prefill under that layout, which that
    rate also paid for (its compute and collectives). A speculative run's step verifies tokens_per_step tokens a sequence and gains
    accepted_tokens_per_step of them."""
    from . import calibration
    from .evaluation.evaluate import Scenario
    if r.regime == PREFILL:
        return _prefill_run(data, r)
    rec = r.record
    value, per = next(rates[f] for rates in [_measured_rates(rec)] for f in SPEED_FIELDS if f in rates)
    sc = record_scenario(data, rec, r.batch, r.context, rec.tokens_per_step or 1.0)
    layout = layout_sets(rec)
    try:   # the layout it states, else the one eval deploys on its chips
        lay = Scenario(data, rec.hardware, rec.model, {**sc.raw_overrides, **(layout or {})})
        pp = lay.mag("pp")
        compute = pp * lay.mag("compute_time_layout", "s")
        reads = pp * (lay.mag("weight_fetch_time_layout", "s") + lay.mag("kv_fetch_time_layout", "s"))
        comm = lay.mag("comm_time_layout", "s")
    except (MissingInput, NotApplicable, InputError):
        lay = sc
        compute, reads, comm = sc.mag("compute_time", "s"), sc.mag("memory_time", "s"), 0.0
    prefill, output = 0.0, 1.0
    copies = (rec.system_chips or rec.chips) / rec.chips
    if per == "system":
        measured = value / copies
        if rec.input_tokens and rec.output_tokens:
            one = Scenario(data, rec.hardware, rec.model, {**lay.raw_overrides, "batch": "1 sequence",
                                                           "tokens_per_step": "1 token/sequence",
                                                           "pass_tokens": f"{rec.input_tokens:.17g} token/sequence"})
            # a prompt's share of a batch's prefill: its compute and collectives; the weights are read
            # once for the whole batch, so one prompt's weight reads are not its own
            c, w = one.mag("prefill_compute_time_layout", "s"), one.mag("prefill_weight_fetch_time_layout", "s")
            prefill = one.mag("prefill_time_layout", "s") - one.mag("pp") * (max(c, w) - c)
            output = rec.output_tokens
    else:
        measured = value * r.batch
    measured /= rec.accepted_tokens_per_step or 1.0    # sequence-steps a second: the fit predicts steps
    return calibration.Run(compute, reads, comm, sc.mag("layers"), r.batch, prefill, output, measured, rec.source.id,
                           rec.hardware, rec.model, rec.engine or "", rec.id, r.regime, _upper(r))


def efficiency_model(results: list[Result], data):
    """The engine model fitted to the published runs (chalkboard/calibration.py, ``fitted_runs``),
    with its error held out by source, chip, model and engine."""
    from . import calibration
    return calibration.shipped_or_fit(calibration_runs(results, data), of=len(results))


def calibration_runs(results: list[Result], data) -> list:
    return [_calibration_run(data, r) for r in fitted_runs(results)]


def ship(root: Path) -> Path:
    """Write chalkboard/engine_fit.json: the engine model fitted to the project's measurements.yaml."""
    from . import calibration
    from .data import load
    data = load(root)
    results = evaluate_all(data, load_measurements(root, data))
    out = calibration.SHIPPED
    out.write_text(calibration.ship_text(calibration_runs(results, data), of=len(results)), encoding="utf-8")
    return out


if __name__ == "__main__":
    import sys
    from .home import ROOT
    if sys.argv[1:] != ["--ship"]:
        sys.exit("usage: python3 -m chalkboard.validation --ship")
    print(f"wrote {ship(ROOT)}")


def evidence(root: Path, data, label: str = MEASUREMENTS_FILE):
    """A function giving the engine model fitted to the published measurements (``efficiency_model``),
    read, evaluated and fitted on its first call: Scenario.evidence, for the inputs whose default
    is the evidence (expected_mfu, expected_mbu, expected_sync_time)."""
    kept = {}

    def model():
        if "m" not in kept:
            kept["m"] = efficiency_model(evaluate_all(data, load_measurements(root, data, label)), data)
        return kept["m"]
    return model


def cited_figures(results: list[Result]) -> dict[str, dict[str, float]]:
    """What the lecture's claims are judged against (claims.yaml's sourced rows quote these):

    * roofline: the median efficiency in each regime;
    * batch: published operating batch / balance batch, for records with a published batch
      above SMALL_BATCH (throughput set-ups);
    * step: the measured step time (ms) of those records;
    * batch_setups: one batch ratio per set-up (chip, model and formats, which fix the balance batch):
      its largest published batch, the one a throughput run chose; the smaller batches of the same
      sweep are its latency points."""
    stats = summary(results)
    roofline = {g: stats[g]["median"] for g in REGIMES if stats[g]["n"]}
    big = [r for r in results if r.record.batch is not None and r.record.batch > SMALL_BATCH]
    batch = {r.record.id: r.record.batch / r.balance_batch for r in big if r.balance_batch}
    step = {r.record.id: r.measured_step_time * 1e3 for r in big if r.measured_step_time}
    largest = {}
    for r in big:
        if r.balance_batch:
            key = (r.record.hardware, r.record.model, repr(r.formats))
            if key not in largest or r.record.batch > largest[key].record.batch:
                largest[key] = r
    setups = {r.record.id: batch[r.record.id] for r in largest.values()}
    return {"roofline": roofline, "batch": batch, "step": step, "batch_setups": setups}


def check_hardware_generations(results: list[Result], data) -> int:
    return len({data.hardware[r.record.hardware].tags.get("family", r.record.hardware) for r in results})


# -- output -----------------------------------------------------------------------------------
def _pct(x: float) -> str:
    return f"{x * 100:.1f}%" if x < 0.1 else f"{x * 100:.0f}%"


def as_json(results: list[Result], m) -> dict:
    from . import calibration
    """The records and their efficiencies, and the engine model ``m`` (``efficiency_model``) fitted to them."""
    rows = []
    for r in results:
        rec = r.record
        rows.append({
            "id": rec.id, "hardware": rec.hardware, "chips": rec.chips, "system_chips": rec.system_chips or rec.chips,
            "parallelism": rec.parallelism, "model": rec.model, "formats": r.formats,
            "batch": rec.batch, "bound_batch": r.batch, "context": r.context, "tokens_per_step": r.tokens_per_step,
            "input_tokens": rec.input_tokens, "output_tokens": rec.output_tokens,
            "measured": {k: {"value": float(q.magnitude), "unit": f"{q.units:~P}"} for k, q in rec.measured.items()},
            "step_time_min_s": r.step_time_min, "bound_token_s_per_chip": r.bound_chip_rate,
            "measured_token_s_per_chip": r.measured_chip_rate, "efficiency": r.efficiency,
            "efficiencies": r.efficiencies, "regime": r.regime, "dense": r.dense,
            "balance_batch": r.balance_batch, "measured_step_time_s": r.measured_step_time,
            "assumed": r.assumed, "fits": r.fits is None, "fit_note": r.fits, "violates": r.violates,
            "source": {"id": rec.source.id, "title": rec.source.title, "url": rec.source.url,
                       "as_of": rec.source.as_of, "where": rec.where},
            "notes": rec.notes,
        })
    fitted = {"parameters": dict(zip(calibration.PARAMS, m.params)),
              "runs": m.n, "sources": m.sources, "held_out_runs": m.cv_n,
              "held_out_median_abs_log_error": m.cv_median, "held_out_within_1_5": m.cv_within,
              "range_factors": list(m.band),
              "splits": [vars(x) for x in m.splits], "worst": [vars(x) for x in m.worst],
              "bounded_runs": m.bounded}
    return {"records": rows, "summary": summary(results), "cited": cited_figures(results),
            "violations": [r.record.id for r in results if r.violates], "efficiency_fit": fitted}


def as_text(results: list[Result], m) -> str:
    lines = [f"chalkboard validate: {len(results)} published measurements against step_time_min "
             f"(efficiency = measured speed / bound speed; the bound allows at most 100%)"]
    w = max(len(r.record.id) for r in results)
    lines.append(f"  {'record':<{w}}  {'chip':<12}{'chips':>6} {'model':<16}{'batch':>7}{'context':>9}"
                 f"  {'bound tok/s/chip':>16}{'measured':>10}{'eff.':>7}  regime")
    for r in results:
        rec = r.record
        b = f"{r.batch:,.0f}" + ("" if rec.batch is not None else "*")
        lines.append(f"  {rec.id:<{w}}  {rec.hardware:<12}{rec.chips:>6.0f} {rec.model:<16}{b:>7}{r.context:>9,.0f}"
                     f"  {r.bound_chip_rate:>16,.0f}{r.measured_chip_rate:>10,.0f}{_pct(r.efficiency):>7}  {r.regime}"
                     + ("  VIOLATION" if r.violates else ""))
    lines.append("  (* batch not published: the loosest the bound allows; see --json 'assumed')")
    lines.append("  efficiency by group: median (interquartile range, min-max), records")
    for g, s in summary(results).items():
        if s["n"]:
            lines.append(f"    {g:<27} {_pct(s['median']):>6} ({_pct(s['q1'])}-{_pct(s['q3'])}, "
                         f"{_pct(s['min'])}-{_pct(s['max'])}), {s['n']}")
    lines.append(f"  expected efficiency (the fit every expected number uses): {m.text()}")
    lines.extend(report_card(m))
    bad = [r for r in results if r.violates]
    fams = len({r.record.hardware for r in results})
    models = len({r.record.model for r in results})
    lines.append(f"  {fams} chips, {models} models; "
                 + (f"{len(bad)} VIOLATIONS: " + ", ".join(r.record.id for r in bad) if bad
                    else "no measurement is faster than the bound"))
    return "\n".join(lines)


def report_card(m) -> list[str]:
    """Each held-out split's score (runs at a published batch: median error, share within ×1.5, share
    inside the printed range; runs at an unpublished batch: share not above the range's top), and the
    runs predicted worst, with their regime."""
    from .calibration import WITHIN
    lo, hi = m.band
    out = [f"  held out (each group left out of the fit in turn, its runs predicted; printed range ×{lo:.2f}-×{hi:.2f}):",
           f"    {'left out':<10}{'groups':>7}{'runs':>6}{'median error':>14}{f'within ×{WITHIN:g}':>13}"
           f"{'inside range':>14}   at an unpublished batch: not above the range"]
    for s in m.splits:
        if not s.n:
            continue
        out.append(f"    {'by ' + s.name:<10}{s.groups:>7}{s.n:>6}{'×' + format(math.exp(s.median), '.2f'):>14}"
                   f"{s.within:>13.0%}{s.inside:>14.0%}   {s.bounded_inside:.0%} of {s.bounded}")
    out.append(f"  held out by source: median error ×{math.exp(m.cv_median):.2f}, {m.cv_within:.0%} of "
               f"{m.cv_n} held-out runs within ×1.5 of the expected number")
    out.append("  worst held-out predictions (measured / expected, the split that held it out):")
    w = max((len(x.id) for x in m.worst), default=0)
    for x in m.worst:
        out.append(f"    {x.id:<{w}}  {x.chip:<12}{x.model:<16}{x.regime:<27}×{x.error:<7.2f} by {x.split}")
    return out


# -- the report (its figure is chalkboard/report/figures_validation.py) ---------------------------
def _n(x: float) -> str:
    from .typeset.fmt import sig
    return sig(x)


def for_report(results: list[Result], m, label: str = MEASUREMENTS_FILE) -> dict:
    """What the report's section "How close do real systems get?" shows (figure added later)."""
    rows = []
    for r in results:
        rec = r.record
        rows.append({
            "id": rec.id, "hardware": rec.hardware, "chips": f"{rec.chips:.0f}", "parallelism": rec.parallelism,
            "model": rec.model, "formats": r.formats,
            "batch": f"{r.batch:,.0f}" + ("" if rec.batch is not None else " *"),
            "context": f"{r.context:,.0f}", "bound_ms": _n(r.step_time_min * 1e3),
            "bound": _n(r.bound_chip_rate), "measured": _n(r.measured_chip_rate),
            "efficiency": _pct(r.efficiency), "regime": r.regime, "kind": r.kind,
            "assumed": "; ".join(r.assumed), "notes": rec.notes or "", "violates": r.violates,
            "source_title": rec.source.title, "source_url": rec.source.url, "where": rec.where,
        })
    stats = []
    for g, s in summary(results).items():
        if s["n"]:
            stats.append({"group": g, "n": s["n"], "median": _pct(s["median"]),
                          "iqr": f"{_pct(s['q1'])}–{_pct(s['q3'])}", "range": f"{_pct(s['min'])}–{_pct(s['max'])}"})
    bad = [r.record.id for r in results if r.violates]
    fit = {"text": m.text(), "within": _pct(m.cv_within), "held_out": m.cv_n,
           "median": f"×{math.exp(m.cv_median):.2f}", "low": f"×{m.band[0]:.2f}", "high": f"×{m.band[1]:.2f}"}
    return {"file": label, "count": len(results), "rows": rows, "stats": stats, "violations": bad, "fit": fit,
            "chips": len({r.record.hardware for r in results}), "models": len({r.record.model for r in results}),
            "svg": None}
