"""validate: the published measurements against the bound, and the engine model fitted to them.

  records.py      measurements.yaml read and checked: each record, and its set-up as a Scenario
  bounds.py       each record against the strict bound (decode step, prefill): its efficiency
  stats.py        the efficiencies summed up by group, and the figures the sourced claims cite
  engine_fit.py   the engine model expected numbers assume, fitted to the runs, its held-out range;
                  the fit shipped in engine_fit.json beside it
  runs.py         what each evaluated record gives the fit, the fitted model (shipped or fresh), and
                  ``ship``, which writes engine_fit.json (`python3 -m chalkboard.validation --ship`)
  card.py         what `validate` prints (text with the held-out report card, JSON) and the report's rows

It reads the data and the evaluation below it; the cache, the report, the commands, the library and
the build above it read the names below.
"""
from __future__ import annotations

from .bounds import PREFILL, TOLERANCE, Result, evaluate_all, evaluate_record, layout_sets
from .card import as_json, as_text, for_report
from .records import LOOSEST_KV, Record, load_measurements, record_scenario
from .runs import calibration_runs, efficiency_model, evidence, fitted_runs
from .stats import cited_figures, summary

__all__ = ["LOOSEST_KV", "PREFILL", "TOLERANCE", "Record", "Result", "as_json", "as_text", "calibration_runs",
           "cited_figures", "efficiency_model", "evaluate_all", "evaluate_record", "evidence", "fitted_runs",
           "for_report", "layout_sets", "load_measurements", "record_scenario", "summary"]
