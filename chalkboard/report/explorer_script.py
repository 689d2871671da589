"""The explorer's script: what the page shows, and every quantity it evaluates as JavaScript printed by SymPy.


Each quantity the explorer shows is printed with SymPy's JavaScript code printer from its
definition (``REGISTRY[name].expr``, what ``chalkboard.compiled`` evaluates as floats), in the same
base units (byte, FLOP, second, ...); a derived quantity inside a definition is a call of its own
printed function. No formula is written in JavaScript by hand: the page's own script only reads
inputs, calls these printed functions and draws their values.

It answers as ``eval`` does: a name with a form under the deployed layout (``UNDER_LAYOUT``:
step_time, cost_per_token, ...) under the layout (tp, dp_attention, ep, pp, with the collectives
in the step), unless the reader picks the lecture's even spread; every other name is the
lecture's. The layout's degrees follow the chips as ``eval``'s defaults do: a degree whose default
is a rule (``derivations/rules.py``) is looked up in a table this module fills by calling that
rule for every number of chips the page offers; dp_attention is the degree that makes the
layout's chips the chips (SymPy solves ``layout_chips`` for it). Next to each number at the bound
stands the expected number and its range: the expected quantity's own definition at the inputs
of the engine model fitted to the published runs (``chalkboard/validation/engine_fit.py``), and at the
ends of its held-out range, as ``eval`` computes them.

The only changes the printer makes to SymPy's JavaScript printer: each input reads the input
object (``v.batch``), each derived quantity calls its function (``F.step_time(v)``), and
``floor`` allows the same 1e-9 as the compiled path (2.9999999999 counts as 3).
"""
from __future__ import annotations

import re
from functools import lru_cache

import sympy as sp
from sympy.printing.jscode import JavascriptCodePrinter

from derivations import REGISTRY

from ..evaluation import compiled, layouts
from ..evaluation.expected import EVIDENCE_INPUTS
from ..evaluation.dependence import derived_below

# What the explorer shows, in this order: the numbers the report features for a set-up (the
# lecture's names; each answered under the layout picked, as eval answers it).
QUANTITIES = ("step_time", "latency_floor", "user_speed", "throughput", "throughput_per_chip", "cost_per_token",
              "cost_floor", "mfu", "balance_batch", "hbm_fill", "max_batch_capacity")
LAYOUTS = layouts.CHOICES           # ("deployed", "even"): the first is what eval answers unless told
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
FIT = "hbm_fill"                    # the set-up fits when this (under the layout picked) is at most ...
SHARE = "engine_memory_share"       # ... the engine's share of the HBM, as eval, compare and plan judge it
BATCH = "batch"                     # the input the fit is judged at ...
ONE_BATCH = "one_sequence"          # ... or at one sequence, for a quantity of one sequence (the latency floor)
FIGURE_POINTS = 121                 # points per curve, evenly spaced in log(batch)
TABULATED = "chips"                 # the slider a layout rule reads: tabulated from 1 to its slider's end
# The layout's degrees solved for, not looked up: dp_attention's rule gives the chips left after
# tp · pp (derivations/rules.py attention_groups), the degree that makes the layout's chips the chips.
SOLVED = {"dp_attention": ("layout_chips", "chips")}
# The communication terms of a step under the layout, and the collective each runs: on a fabric
# where every chip reaches every other (direct_collectives = 1) the faster of one-shot and two-shot,
# else a ring, as derivations/layout.py defines tp_comm_time (and layouts.collectives names it); the
# expert all-to-all always goes directly, one step each way.
COMM = ({"term": "tp_comm_time", "label": "Tensor-parallel all-reduces", "by": "direct_collectives",
         "algorithms": {"0": [["tp_allreduce_time_ring", "ring"]],
                        "1": [["tp_allreduce_time_one_shot", "one-shot"], ["tp_allreduce_time_two_shot", "two-shot"]]}},
        {"term": "ep_comm_time", "label": "Expert all-to-all", "by": None, "algorithms": {}, "fixed": "direct"})

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _Printer(JavascriptCodePrinter):
    """SymPy's JavaScript printer; inputs read the input object, derived quantities call their
    printed functions, floor as in compiled.py."""

    def _print_Symbol(self, expr):
        q = REGISTRY.q(expr)
        if not _NAME.fullmatch(q.name):  # pragma: no cover - quantity names are identifiers
            raise ValueError(f"{q.name!r} is not a JavaScript identifier")
        return f"v.{q.name}" if q.is_input else f"F.{q.name}(v)"

    def _print_floor(self, expr):
        return f"Math.floor({self._print(expr.args[0])} + {compiled.ROUNDING_EPS!r})"


def answer(name: str, layout: str) -> str:
    """The quantity that answers ``name`` under ``layout`` (eval's choice, layouts.resolve)."""
    return layouts.resolve(name, layout)


def expected_of(name: str) -> str | None:
    """The expected form of a lecture name (step_time: step_time_expected), where it has one."""
    e = f"{name}_expected"
    return e if e in REGISTRY and not REGISTRY[e].is_input else None


def guards(name: str) -> list[str]:
    """The derived quantities whose domain check (value > 0) the compiled path applies when it
    evaluates ``name``: its own and those of every definition below it."""
    return sorted(d for d in derived_below(name) if REGISTRY[d].valid)


def shown_names() -> list[str]:
    """Every quantity the page evaluates itself, under either layout: the rows, their expected
    forms, the plots' marks, the frontier, the fit, the communication terms and the layout's chips."""
    names: list[str] = []

    def add(n):
        if n and n not in names:
            names.append(n)
    for layout in LAYOUTS:
        for n in QUANTITIES:
            add(answer(n, layout))
            add(expected_of(n) and answer(expected_of(n), layout))
        for f in FIGURES:
            for n in (f["quantity"], f["vline"], f["hline"]):
                add(n and answer(n, layout))
        add(answer(FRONTIER["x"], layout))
        add(answer(FRONTIER["y"], layout))
        add(answer(FIT, layout))
    for c in COMM:
        add(c["term"])
        for algos in c["algorithms"].values():
            for term, _ in algos:
                add(term)
    add(SOLVED["dp_attention"][0])
    return names


def function_names() -> list[str]:
    """Every quantity printed as a JavaScript function: those the page shows, their domain
    checks, and every derived quantity their definitions read."""
    names = shown_names()
    for n in list(names):
        names += [g for g in guards(n) if g not in names]
    below = set()
    for n in names:
        below |= derived_below(n)
    return names + [n for n in REGISTRY.quantities if n in below and n not in names]


def to_js(expr) -> str:
    """A SymPy expression in the registry's symbols as a JavaScript expression reading ``v``
    (an input) and calling ``F`` (a derived quantity)."""
    return _Printer().doprint(expr)


def javascript(name: str) -> str:
    """The definition of ``name`` in JavaScript, as SymPy prints it."""
    return to_js(REGISTRY[name].expr)


def _evidence(model, factor: float = 1.0) -> dict[str, sp.Expr]:
    """The engine model's inputs (validation.engine_fit.Efficiency.inputs), in base units, as SymPy numbers:
    at the fit, or at a speed ``factor`` times its own (an end of its range)."""
    return {n: sp.Float(v, precision=53) for n, v in model.inputs(factor).items()}


def solved_js(name: str) -> str:
    """SymPy's solution of ``SOLVED[name]`` (the quantity equal to the input) for ``name``."""
    derived, equal = SOLVED[name]
    sol = sp.solve(sp.Eq(REGISTRY.closed_form(derived), REGISTRY[equal].sym), REGISTRY[name].sym)
    if len(sol) != 1:  # pragma: no cover - the layout's chips are a product of its degrees
        raise ValueError(f"{derived} = {equal} has {len(sol)} solutions for {name}")
    return to_js(sol[0])


def functions_js(model=None) -> str:
    """The script that defines every printed function (``CHALKBOARD_FUNCTIONS``, keyed by quantity
    name), the solved degrees (``CHALKBOARD_SOLVED``) and, with a fitted engine ``model``, its
    inputs and their values at the two ends of its range (``CHALKBOARD_FIT``)."""
    lines = ["// Printed by SymPy's JavaScript code printer from each quantity's definition",
             "// (base units: byte, FLOP, second, ...). Not edited by hand.",
             "const CHALKBOARD_FUNCTIONS = (function () {", "  const F = {};"]
    for n in function_names():
        lines.append(f"  F.{n} = function (v) {{ return {javascript(n)}; }};")
    lines += ["  return F;", "})();",
              "const CHALKBOARD_SOLVED = (function (F) { return {"]
    for n in SOLVED:
        lines.append(f"  {n}: function (v) {{ return {solved_js(n)}; }},")
    lines.append("}; })(CHALKBOARD_FUNCTIONS);")
    if model is None:
        lines.append("const CHALKBOARD_FIT = null;")
    else:
        def printed(values):
            return "{" + ", ".join(f"{n}: function (v) {{ return {to_js(x)}; }}" for n, x in values.items()) + "}"
        lines += ["const CHALKBOARD_FIT = (function (F) { return {",
                  f"  inputs: {printed(_evidence(model))},",
                  "  ends: [" + ", ".join(printed(_evidence(model, f)) for f in model.band) + "],",
                  "}; })(CHALKBOARD_FUNCTIONS);"]
    return "\n".join(lines)


@lru_cache(maxsize=None)
def moves_with_sliders(name: str) -> bool:
    """An input whose default is a rule that reads a slider, or another such input."""
    q = REGISTRY[name]
    if not q.is_input or not str(q.default or "").startswith("=rule:"):
        return False
    return any(a in SLIDERS or moves_with_sliders(a) for a in REGISTRY.rules[q.default[6:]][1])


def dynamic_inputs() -> list[str]:
    """The inputs the page computes as the sliders move, each after those it reads: the rule
    defaults the printed functions read that move with a slider (the layout's degrees, where its
    groups run), then the fitted efficiencies."""
    leaves = set()
    for n in function_names():
        leaves |= {q.name for q in REGISTRY.leaves(n)}
    out: list[str] = []

    def visit(n):
        if n in out or not moves_with_sliders(n):
            return
        for a in REGISTRY.rules[REGISTRY[n].default[6:]][1]:
            visit(a)
        out.append(n)
    for n in REGISTRY.quantities:
        if n in leaves:
            visit(n)
    return out + [n for n in EVIDENCE_INPUTS if n in leaves]


def dynamic_reads(name: str) -> list[str]:
    """The inputs the page reads to compute ``name`` by SymPy's solution (the engine model's inputs read none)."""
    if name in SOLVED:
        derived, equal = SOLVED[name]
        syms = REGISTRY.closed_form(derived).free_symbols | {REGISTRY[equal].sym}
        return [q.name for q in REGISTRY.quantities.values() if q.sym in syms and q.name != name]
    return []   # the engine model's inputs are numbers: they read nothing


def inputs_read() -> list[str]:
    """The inputs the printed functions read and the page does not compute, in declaration order."""
    names = set()
    for n in function_names():
        names |= {q.name for q in REGISTRY.leaves(n)}
    names |= set(SLIDERS) | {ONE_BATCH}
    names -= set(dynamic_inputs())
    return [n for n in REGISTRY.quantities if n in names]
