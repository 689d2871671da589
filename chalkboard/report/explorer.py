"""The report's live explorer: the featured quantities as JavaScript printed by SymPy.

Each quantity the explorer shows is printed with SymPy's JavaScript code printer from its closed
form (``REGISTRY.closed_form``), the expression ``chalkboard.compiled`` evaluates as floats, in
the same base units (byte, FLOP, second, ...). No formula is written in JavaScript by hand: the
page's own script only reads inputs, calls these printed functions and draws their values.

The inputs of every chip x model pair are evaluated here through ``Scenario`` with the default
number formats (the model's weight and KV formats, the chip's rate for the weight format or the
next wider one), so the page only evaluates expressions. Values shared by every pair, by every
model of one chip, or by every chip of one model are emitted once at that level; the page merges
the levels. An input a pair does not publish is emitted as the reason (a string) instead of a
number.

The only change the printer makes to SymPy's JavaScript printer: each symbol reads the input
object (``v.batch``), and ``floor`` allows the same 1e-9 as the compiled path (2.9999999999
counts as 3).
"""
from __future__ import annotations

import re

from sympy.printing.jscode import JavascriptCodePrinter

from derivations import REGISTRY

from ..evaluation import compiled
from ..errors import InputError, MissingInput
from ..evaluation.evaluate import Scenario
from ..evaluation.dependence import _derived_below, read_shared, setup_dependence
from .drawing import chip_styles
from ..typeset.fmt import SHARE_SYMBOL, _TIMES, _factor, _plan, _target, plural, share_factor

# What the explorer shows, in this order: the numbers the report features for a set-up.
QUANTITIES = ("step_time", "latency_floor", "user_speed", "throughput", "throughput_per_chip", "cost_per_token",
              "cost_floor", "mfu", "balance_batch", "hbm_fill", "max_batch_capacity")
# The workload inputs a reader moves (each a whole number: a count of sequences, tokens, chips),
# with the range its slider spans on a log scale; any whole number from 1 can be typed.
SLIDERS = {"batch": (1, 131072), "context": (128, 1048576), "chips": (1, 1024)}
# Two plots against the batch; the vertical and horizontal marks are values of other quantities.
# Each plot keeps one unit whatever the chip (a step time in ms on every chip, so two chips compare by eye).
FIGURES = ({"quantity": "step_time", "against": "batch", "vline": "balance_batch", "hline": None, "unit": "ms"},
           {"quantity": "cost_per_token", "against": "batch", "vline": "balance_batch", "hline": "cost_floor",
            "unit": "USD/Mtoken"})
# The lecture's first picture for every priced chip at once: cost per token against each user's
# speed as the batch grows (the model, context and chips as set; batches that do not fit left out),
# the target speed a reader types marked, and the cheapest batch and chip that reach it named.
FRONTIER = {"x": "user_speed", "y": "cost_per_token", "over": "batch", "target": 30.0}
FIT = "hbm_fill"                    # the set-up fits when this is at most 1
BATCH = "batch"                     # the input the fit is judged at ...
ONE_BATCH = "one_sequence"          # ... or at one sequence, for a quantity of one sequence (the latency floor)
FIGURE_POINTS = 121                 # points per curve, evenly spaced in log(batch)

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _Printer(JavascriptCodePrinter):
    """SymPy's JavaScript printer; symbols read the input object, floor as in compiled.py."""

    def _print_Symbol(self, expr):
        name = REGISTRY.q(expr).name
        if not _NAME.fullmatch(name):  # pragma: no cover - quantity names are identifiers
            raise ValueError(f"{name!r} is not a JavaScript identifier")
        return f"v.{name}"

    def _print_floor(self, expr):
        return f"Math.floor({self._print(expr.args[0])} + {compiled._EPS!r})"


def guards(name: str) -> list[str]:
    """The derived quantities whose domain check (value > 0) the compiled path applies when it
    evaluates ``name``: its own and those of every definition below it."""
    return sorted(d for d in _derived_below(name) if REGISTRY[d].valid)


def function_names() -> list[str]:
    """Every quantity printed as a JavaScript function: the explorer's, and their domain checks."""
    names = list(QUANTITIES)
    for f in FIGURES:
        names += [n for n in (f["quantity"], f["vline"], f["hline"]) if n and n not in names]
    names += [n for n in (FRONTIER["x"], FRONTIER["y"]) if n not in names]
    names += [FIT] if FIT not in names else []
    for n in list(names):
        names += [g for g in guards(n) if g not in names]
    return names


def to_js(expr) -> str:
    """A SymPy expression in the registry's symbols as a JavaScript expression reading ``v``."""
    return _Printer().doprint(expr)


def javascript(name: str) -> str:
    """The closed form of ``name`` in JavaScript, as SymPy prints it (inputs read from ``v``)."""
    return to_js(REGISTRY.closed_form(name))


def functions_js() -> str:
    """The script that defines every printed function, keyed by quantity name."""
    lines = ["// Printed by SymPy's JavaScript code printer from each quantity's closed form",
             "// (base units: byte, FLOP, second, ...). Not edited by hand.",
             "const CHALKBOARD_FUNCTIONS = {"]
    for n in function_names():
        lines.append(f'  "{n}": function (v) {{ return {javascript(n)}; }},')
    lines.append("};")
    return "\n".join(lines)


def inputs_read() -> list[str]:
    """The inputs the printed functions read, in declaration order."""
    names = set()
    for n in function_names():
        names |= {q.name for q in REGISTRY.leaves(n)}
    names |= set(SLIDERS) | {ONE_BATCH}
    return [n for n in REGISTRY.quantities if n in names]


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
    kind, _, fixed = _plan(u)
    if kind == "bare":
        return [["", 1.0, ""]]
    if kind == "time":
        labels = _TIMES
    elif kind == "byte":
        labels = ("TB", "GB", "MB", "byte")
    else:
        labels = (fixed,)
    return [[lab, _factor(_target(lab)), plural(lab)] for lab in labels]


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
    return out


def _moe_only_below(name: str) -> bool:
    return any(REGISTRY[d].moe_only for d in _derived_below(name))


def data(d, sc: Scenario) -> dict:
    """What the page's script reads: the inputs of every pair, the quantities and the settings."""
    hws, mids = list(d.hardware), list(d.models)
    names = inputs_read()
    formats, dense = {}, {}
    pairs = [(h, m) for h in hws for m in mids]
    scenarios = [Scenario(d, h, m) for h, m in pairs]
    for (h, m), s in zip(pairs, scenarios):
        formats[f"{h}|{m}"] = s.formats_text()
        dense[m] = s.is_dense
    columns = {n: read_shared(scenarios, n, lambda s, n=n: _base(s, n)) for n in names}  # once per chip, model, ...
    table = {pair: {n: columns[n][i] for n in names} for i, pair in enumerate(pairs)}
    levels = _levels(table, names, hws, mids)
    quantities = []
    for n in QUANTITIES:
        q = REGISTRY[n]
        on = None if q.fit_measure else {"batch": "at_batch", "chips": "at_one", None: None}[setup_dependence(n)]
        quantities.append({"name": n, "meaning": q.meaning, "units": _display_units(n),
                           "fit": on})  # flagged by the fit at the workload's batch, at one sequence, or never
    sliders = []
    for n, (lo, hi) in SLIDERS.items():
        u, f = compiled.declared(n)
        sliders.append({"name": n, "label": REGISTRY[n].meaning, "unit": f"{u:~P}", "factor": f,
                        "min": lo, "max": hi, "start": sc.base_value(n) / f})
    ignored = sorted(k for k in sc.raw_overrides if k not in SLIDERS)
    return {
        "hardware": [[h, d.hardware[h].name] for h in hws],
        "chip_styles": chip_styles(d.hardware),   # the figures' colour of each chip (drawing.py)
        "models": [[m, d.models[m].name] for m in mids],
        "dense": dense,
        "start": {"hardware": sc.hw.id, "model": sc.model.id},
        "ignored_overrides": ignored,
        "sliders": sliders,
        "quantities": quantities,
        "figures": [dict(f, units=_display_units(f["quantity"])) for f in FIGURES],
        "figure_points": FIGURE_POINTS,
        "frontier": dict(FRONTIER, x_units=_display_units(FRONTIER["x"]), y_units=_display_units(FRONTIER["y"]),
                         x_meaning=REGISTRY[FRONTIER["x"]].meaning, y_meaning=REGISTRY[FRONTIER["y"]].meaning),
        # what each printed function reads, and the refusals of the compiled path it must repeat
        "reads": {n: [q.name for q in REGISTRY.leaves(n)] for n in function_names()},
        "guards": {n: [[g, f"{g}: {REGISTRY[g].valid}"] for g in guards(n)] for n in function_names()},
        "dense_na": {n: f"{n} is not applicable to a dense model" for n in function_names() if _moe_only_below(n)},
        "fit": FIT, "one_batch": ONE_BATCH, "batch_input": BATCH,
        "formats": formats,
        "inputs": levels,
    }


def context(d, sc: Scenario) -> dict:
    """The template's view: the printed functions (script text) and the data (JSON)."""
    return {"functions": functions_js(), "data": data(d, sc)}


__all__ = ["FRONTIER", "QUANTITIES", "SLIDERS", "context", "data", "function_names", "functions_js", "guards",
           "javascript", "to_js"]
