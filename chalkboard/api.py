"""chalkboard as a library: the numbers of the command line, in a notebook or a script.

    >>> import chalkboard as cb
    >>> s = cb.scenario("h100-sxm", "llama-3-70b", tp=8, batch=1, context=2048, weight_format="bf16")
    >>> r = s.evaluate("step_time")       # under the deployed layout, as `eval` answers it
    >>> round(float(r), 2), r.unit, r.display
    (5.8, 'ms', '5.8 ms')
    >>> s.sweep("step_time", batch=[1, 8, 64]).to_csv().splitlines()[0]
    'batch [sequence],step_time [ms],feasible'

``cb.compare(["step_time"], hardware=["h100-sxm", "b200"], models=["llama-3-70b"])`` gives a row a
chip x model, as `compare --json`; ``cb.verdicts()`` every claim's verdict, as `audit --json`;
``cb.plan("llama-3-70b", min_tokens_per_user=30)`` the cheapest deployment, as `plan --json`. In
Jupyter a Result shows the definition, the numbers in it and the result.

Each call reads the project's bundled data files (or ``root=``, a folder holding its own), goes
through the same Scenario, layouts and printers as `build.py`, and returns plain values: a
``Result`` (a number with its unit, formula and inputs), a ``Table`` (a list of dicts, with
``to_csv``), or the dicts the commands print as JSON.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

import re
from contextlib import contextmanager

from .errors import InputError, MissingInput
from .data.featured import FEATURED_HARDWARE, FEATURED_MODEL
from .runtime.home import ROOT   # the project folder: the repository, or the data bundled in the package

_LOADED: dict = {}
# the command line's words in a message, and the library's: an input is a keyword here, not a --set
_CLI_WORDS = ((re.compile(r"--set (\w+)=\.\.\."), r"\1=..."), (re.compile(r"--set (\w+)"), r"\1"),
              (re.compile(r"--layout (\w+)"), r"layout='\1'"), (re.compile(r"--hardware\b"), "hardware="),
              (re.compile(r"--model\b"), "model="))


@contextmanager
def _library_words():
    """An error the evaluation raises, said as a library user writes it (``batch=64``, not ``--set
    batch=64``); the same exception type, so ``except InputError`` still catches it."""
    try:
        yield
    except (InputError, MissingInput) as e:
        text = str(e)
        for pattern, repl in _CLI_WORDS:
            text = pattern.sub(repl, text)
        raise type(e)(text) if type(e) in (InputError, MissingInput) else e from None


def _data(root: Path | None = None, model_config: str | None = None):
    """The data files of ``root`` (default: the project's), read once, and SymPy's kept work."""
    from .cache import symcache
    from .data.loader import load

    root = Path(root or ROOT)
    key = (root, model_config)
    if key not in _LOADED:
        symcache.load(root)
        data = load(root)
        if model_config:
            from .evaluation.configmodel import add_config_model
            add_config_model(data, model_config)
        _LOADED[key] = data
    return _LOADED[key]


class Table(list):
    """Rows as dicts, each number in the unit ``units`` names for its key (as the command's JSON);
    ``to_csv()`` writes them as the command's CSV: "name [unit]" headers, true/false."""

    def __init__(self, rows=(), units: dict | None = None, csv_text=None):
        super().__init__(rows)
        self.units = dict(units or {})
        self._csv_text = csv_text   # rows that nest their values (compare's) write as their command does

    def to_csv(self) -> str:
        from .evaluation.tables import csv_bool

        if self._csv_text is not None:
            return self._csv_text(self)
        keys = list(dict.fromkeys(k for row in self for k in row))
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow([f"{k} [{self.units[k]}]" if k in self.units else k for k in keys])
        w.writerows([[csv_bool(v) if isinstance(v, bool) else "" if v is None else v for v in map(row.get, keys)]
                     for row in self])
        return buf.getvalue()


class Result:
    """One evaluated quantity: ``value`` (a float in ``unit``), ``display``, the definition and closed
    form as text, each input with its value and source, and the fit; shown in Jupyter as the
    report shows it (MathML from the same printers)."""

    def __init__(self, described: dict, html: str):
        self.__dict__.update(described)
        self.name = described["quantity"]
        self._html = html

    def __float__(self) -> float:
        return float(self.value)

    def __repr__(self) -> str:
        return f"{self.name} = {self.display}"

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def _repr_html_(self) -> str:
        return self._html


class Setup:
    """One chip x model x workload (and layout); ``evaluate`` and ``sweep`` read it."""

    def __init__(self, data, hardware: str, model: str, layout: str, sets: dict, root: Path):
        from .evaluation.evaluate import Scenario
        from .evaluation.layouts import resolve

        resolve("step_time", layout)   # an unknown layout fails here
        self.data, self.hardware, self.model, self.layout, self.sets = data, hardware, model, layout, sets
        with _library_words():
            self._scenario = Scenario(data, hardware, model, sets, defaults="serving")
            if (root / "measurements.yaml").exists():   # the evidence for expected efficiencies, as eval reads it
                from .validation import evidence
                self._scenario.evidence = evidence(root, data)   # (an engine=NAME without a fit refused here)

    def evaluate(self, name: str) -> Result:
        from derivations import REGISTRY

        from .evaluation.layouts import resolve
        from .typeset.linebreak import formula
        from .report.context import substituted
        from .evaluation.results import describe_as_asked

        answered = resolve(name, self.layout)
        if answered not in REGISTRY:
            raise KeyError(f"unknown quantity {name!r} (see `python build.py list quantities`)")
        with _library_words():
            d = describe_as_asked(self._scenario, name, self.layout)
        q = REGISTRY[answered]
        parts = [f"<p>{d['meaning']}</p>"]
        if q.expr is not None:
            # one layout each: a notebook has no style sheet to show a phone's in place of the first
            parts.append(formula(q.expr, lhs=q, phone=False)[1])
            parts.append(substituted(self._scenario, answered, phone=False)[1])
        parts.append(f"<p><b>{d['quantity']} = {d['display']}</b> on {d['hardware']} × {d['model']}"
                     + ("" if d["feasible"] in (True, None) else f" (does not fit: {d['feasibility']})") + "</p>")
        return Result(d, "\n".join(parts))

    def sweep(self, *names: str, **axes) -> Table:
        """``names`` over the grid of ``axes`` (input name -> values), one row per point."""
        import numpy as np

        from .evaluation import layouts, sweep as sw, tables as tb

        asked = list(dict.fromkeys(names))
        answered, _ = layouts.answered(asked, self.layout)
        with _library_words():
            result = sw.renamed(sw.sweep(self._scenario, list(dict.fromkeys(answered)),
                                         [(k, np.asarray(v, dtype=float)) for k, v in axes.items()]), answered, asked)
        shown = sw.shown_quantities(result, asked)
        units = {n: u for n, (u, _) in tb.column_units(result, shown).items()}
        return Table(tb.sweep_records(result, shown), units)


def scenario(hardware: str = FEATURED_HARDWARE, model: str = FEATURED_MODEL, *, layout: str = "deployed",
             model_config: str | None = None, root: str | Path | None = None, **sets) -> Setup:
    """A chip x model x workload, with ``--set``-style inputs as keywords (``batch=64``,
    ``context="8k token"``, ``tp=8``, ``weight_format="fp8"``); ``layout="even"`` for the lecture's
    even spread."""
    root = Path(root or ROOT)
    data = _data(root, model_config)
    return Setup(data, hardware, model if not model_config or model != FEATURED_MODEL else data.config_model,
                 layout, {k: str(v) for k, v in sets.items()}, root)


def compare(quantities: list[str], hardware: list[str] | None = None, models: list[str] | None = None, *,
            layout: str = "deployed", root: str | Path | None = None, **sets) -> Table:
    """``quantities`` for each chip x model, one row each, as `compare --json`."""
    data = _data(root)   # SymPy's kept results loaded before anything that imports the derivations
    from .evaluation import layouts, sweep as sw, tables as tb

    asked = list(dict.fromkeys(quantities))
    names, _ = layouts.answered(asked, layout)
    with _library_words():
        rows = sw.compare(data, hardware or list(data.hardware), models or [FEATURED_MODEL], names,
                          {k: str(v) for k, v in sets.items()}, asked=asked, defaults="serving")
    return Table(rows, {a: rows[0]["values"][a]["unit"] for a in asked} if rows else {},
                 lambda t: tb.compare_csv(list(t), asked))


def sweep(quantities: str | list[str], hardware: str = FEATURED_HARDWARE, model: str = FEATURED_MODEL, *,
          over: dict, layout: str = "deployed", root: str | Path | None = None, **sets) -> Table:
    """``quantities`` over the grid of ``over`` (input name -> values), one row per point, as
    `eval --sweep --json` gives them; ``sets`` hold the rest of the set-up."""
    names = [quantities] if isinstance(quantities, str) else list(quantities)
    return scenario(hardware, model, layout=layout, root=root, **sets).sweep(*names, **over)


def validate(measurements_file: str = "measurements.yaml", root: str | Path | None = None) -> dict:
    """Every published measurement against its bound, and the engine model fitted to them, as
    `validate --json`."""
    root = Path(root or ROOT)
    data = _data(root)   # SymPy's kept results loaded before validation imports the derivations
    from .validation import as_json, efficiency_model, evaluate_all, load_measurements

    with _library_words():
        results = evaluate_all(data, load_measurements(root, data, measurements_file))
        return as_json(results, efficiency_model(results, data))


def verdicts(claims_file: str = "claims.yaml", root: str | Path | None = None) -> list[dict]:
    """Every claim of ``claims_file`` with its verdict and evidence, as `audit --json` (named so
    that it is not the package chalkboard.audit)."""
    root = Path(root or ROOT)
    data = _data(root)   # SymPy's kept results loaded before the audit imports the derivations
    from .audit import run_audit

    return run_audit(data, root / claims_file, claims_file).as_json()


def plan(model: str, min_tokens_per_user: float, context: float | None = None, *, hardware: list[str] | None = None,
         formats: list[str] | None = None, by: str = "expected", max_ttft: float | None = None,
         root: str | Path | None = None) -> dict:
    """The cheapest deployment that meets the speed, as `plan --json` (``max_ttft`` in seconds)."""
    root = Path(root or ROOT)
    data = _data(root)   # SymPy's kept results loaded before the planner imports the derivations
    from . import planner as pl
    from .validation import evidence

    chips = hardware or [h for h, e in data.hardware.items() if e.get("rental_price") is not None]
    with _library_words():
        found = pl.plan(data, model, chips, pl.Targets(context, min_tokens_per_user, max_ttft, None, by), formats,
                        evidence(root, data) if (root / "measurements.yaml").exists() else None)
    return pl.as_json(found)
