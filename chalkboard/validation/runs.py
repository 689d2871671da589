"""From the evaluated records to the engine model: which runs the fit sees (``fitted_runs``), what each
gives it (engine_fit.Run: its decode step's terms under its stated layout, the prefill its rate paid
for, its measured speed), the fitted model every expected number reads (``efficiency_model``, the
shipped one where it matches, and ``evidence``, fitted on first use), and ``ship``, which writes
engine_fit.json. Apart from engine_fit.py, the fit itself, which knows nothing of records or
Scenarios."""
from __future__ import annotations

from pathlib import Path

from ..errors import InputError, MissingInput, NotApplicable
from . import engine_fit
from .bounds import PREFILL, Result, evaluate_all, layout_sets, measured_rates, prefill_bounds
from .records import MEASUREMENTS_FILE, SPEED_FIELDS, load_measurements, record_scenario


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
        per == "user" for _, per in measured_rates(r.record).values())


def _prefill_run(data, r: Result):
    """A run that gives only a time to first token: one prompt's strict bound, and the speed (prompts
    a second) measured; the fit sees prefill / prefill_efficiency plus every layer's fixed time once
    (a prefill is one pass through the layers, as a decode step is)."""
    _, ttft = prefill_bounds(data, r.record, [])
    rec = r.record
    layers = record_scenario(data, rec, 1.0, 1.0, 1.0).mag("layers")
    return engine_fit.Run(0.0, 0.0, 0.0, layers, 1.0, ttft, 1.0, r.efficiencies["ttft"] / ttft, rec.source.id, rec.hardware,
                          rec.model, rec.engine or "", rec.id, r.regime)


def _calibration_run(data, r: Result):
    """What one fitted run gives the efficiency fit (engine_fit.Run): its decode step's terms (under
    its stated layout where it states one, with the collectives), and, where the measured rate is a
    throughput over whole requests, the bound on one prompt's prefill under that layout, which that
    rate also paid for (its compute and collectives). A speculative run's step verifies tokens_per_step tokens a sequence and gains
    accepted_tokens_per_step of them."""
    from ..evaluation.evaluate import Scenario
    if r.regime == PREFILL:
        return _prefill_run(data, r)
    rec = r.record
    value, per = next(rates[f] for rates in [measured_rates(rec)] for f in SPEED_FIELDS if f in rates)
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
            # a prompt's share of a pass that reads the weights for many: its compute and collectives, as
            # the expected costs charge it (derivations/disaggregation.py)
            prefill = one.mag("prefill_time_pooled_as_run", "s")
            output = rec.output_tokens
    else:
        measured = value * r.batch
    measured /= rec.accepted_tokens_per_step or 1.0    # sequence-steps a second: the fit predicts steps
    return engine_fit.Run(compute, reads, comm, sc.mag("layers"), r.batch, prefill, output, measured, rec.source.id,
                          rec.hardware, rec.model, rec.engine or "", rec.id, r.regime, _upper(r))


def efficiency_model(results: list[Result], data):
    """The engine model fitted to the published runs (engine_fit.py, ``fitted_runs``),
    with its error held out by source, chip, model and engine."""
    return engine_fit.shipped_or_fit(calibration_runs(results, data), of=len(results))


def calibration_runs(results: list[Result], data) -> list:
    return [_calibration_run(data, r) for r in fitted_runs(results)]


def ship(root: Path) -> Path:
    """Write engine_fit.json (engine_fit.SHIPPED): the engine model fitted to the project's measurements.yaml."""
    from ..data.loader import load
    data = load(root)
    results = evaluate_all(data, load_measurements(root, data))
    out = engine_fit.SHIPPED
    out.write_text(engine_fit.ship_text(calibration_runs(results, data), of=len(results)), encoding="utf-8")
    return out


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

