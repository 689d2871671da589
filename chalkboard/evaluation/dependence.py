"""What a quantity depends on: the inputs and derived quantities below it, which set-up fit judges
it, and which --set values no evaluation read."""
from __future__ import annotations

from functools import lru_cache

from derivations import REGISTRY

from . import compiled


@lru_cache(maxsize=None)
def flag_kind(name: str) -> str | None:
    """Which fit flags ``name`` (Scenario.flag): "pipeline", "batch", "chips", or None for an
    input, a measure of the fit itself, or a quantity of the chip or model alone."""
    q = REGISTRY[name]
    return None if q.is_input or q.fit_measure else setup_dependence(name)


def read_shared(scenarios: list, name: str, read) -> list:
    """``read(sc)`` of input ``name`` for each scenario (all with the same overrides), called once
    per chip, model or evaluation the input depends on (``Scenario.input_scope``), in the first
    scenario with that chip or model: one result per scenario, shared by those alike."""
    out, done, scope_of = [None] * len(scenarios), {}, {}
    for i, sc in enumerate(scenarios):
        scope = scope_of.get(sc.model.id)
        if scope is None:   # the model's attention type may change it
            scope = scope_of[sc.model.id] = sc.input_scope(name)
        key = (sc.hw.id if scope in ("hardware", "pair") else None,
               sc.model.id if scope in ("model", "pair") else None)
        hit = done.get(key)
        if hit is None:
            hit = done[key] = read(sc)
        out[i] = hit
    return out


# what an input read each way depends on (the ways that read other inputs join those inputs' scopes)


def joined_scope(scopes) -> str:
    """The scope of a value read from values of these scopes (hardware and model join to pair)."""
    seen = set(scopes)
    if "pair" in seen or {"hardware", "model"} <= seen:
        return "pair"
    return "hardware" if "hardware" in seen else "model" if "model" in seen else "all"


@lru_cache(maxsize=None)
def inputs_below(name: str) -> tuple[str, ...]:
    """The inputs the compiled evaluation of the derived quantity ``name`` reads, in order."""
    out: dict[str, None] = {}

    def visit(n):
        if REGISTRY[n].is_input:
            out[n] = None
            return
        for a in compiled.scalar(n)[1]:
            visit(a)
    visit(name)
    return tuple(out)


@lru_cache(maxsize=None)
def fields_to_inputs(_declared: int) -> dict[str, str]:
    """Data field -> input quantity, where the field has its own name (``_declared``: the number
    of quantities declared, so the table is rebuilt if more are)."""
    return {q.field: q.name for q in REGISTRY.inputs()
            if q.field and not q.field.startswith("<") and q.field != q.name}


LAYOUT_INPUTS = {"tp", "dp_attention", "ep", "pp"}   # a quantity reading one is of a laid-out set-up
TRAINING_CHAPTERS = ("training", "crypto")  # training runs: not judged by the serving fit
PIPELINE_CHAPTERS = ("pipeline", "memory")  # pipelined set-ups: judged by the pipelined fit
MEASURED_SECTIONS = ("measured_serving",)   # a measured system's efficiency and cost: it ran, so no fit is judged


@lru_cache(maxsize=None)
def setup_dependence(name: str) -> str | None:
    """'pipeline' if ``name`` is a quantity of a pipelined set-up (chapters 3 and 4) that depends
    on the batch or the chips, 'layout' ('layout1' for one sequence) if of a set-up laid out by
    tp, dp_attention, ep and pp, else 'batch' if it depends on the workload's batch, else 'chips'
    if on the chips (a set-up of one sequence), else None (a property of the chip or model alone,
    or a quantity of training, which the decode-serving HBM fit does not describe)."""
    q = REGISTRY[name]
    chapter = REGISTRY.sections[q.section].chapter if q.section else None
    if chapter in TRAINING_CHAPTERS or q.section in MEASURED_SECTIONS:
        return None
    leaves = {q.name for q in REGISTRY.leaves(name)}
    if q.section == "layout" or leaves & LAYOUT_INPUTS or any(REGISTRY[d].section == "layout"
                                                               for d in derived_below(name)):
        # a set-up laid out by tp, dp_attention, ep, pp: judged by its own fit
        return "layout" if "batch" in leaves else "layout1"
    if chapter in PIPELINE_CHAPTERS and leaves & {"batch", "chips"}:
        return "pipeline"
    return "batch" if "batch" in leaves else "chips" if "chips" in leaves else None


FUSE_FROM = 20_000  # sweeps at least this long evaluate each closed form in one piece


@lru_cache(maxsize=None)
def derived_below(name: str) -> frozenset:
    """``name`` and every derived quantity its definition reads, all the way down."""
    q = REGISTRY[name]
    if q.is_input:
        return frozenset()
    out = {name}
    for s in q.expr.free_symbols:
        out |= derived_below(REGISTRY.q(s).name)
    return frozenset(out)


def depends_on(name: str, var: str) -> bool:
    return any(q.name == var for q in REGISTRY.leaves(name))


def unused_overrides(sc) -> list[str]:
    """--set names that no evaluation read (e.g. flops_fp8 while computing in bf16)."""
    return sorted(k for k in sc.overrides if k not in sc.used)
