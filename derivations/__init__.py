"""chalkboard's derivations: one module per lecture topic, imported in lecture order.

``REGISTRY`` holds every declared quantity, equation and section; the modules add to it as
they are imported, which happens the first time ``REGISTRY`` (or a table below) is asked
for. Until then only ``derivations.core`` is loaded, so a caller can hand the registry the
SymPy results of an earlier run first (``core.PRELOADED``, see build.py).
"""
import importlib

MODULES = ("inputs", "roofline", "latency_cost", "kv_cache", "balance", "context", "schedule",
           "moe_rack", "textbook", "params", "pipeline", "layout", "memory", "fast_mode", "training",
           "textbook_training", "prices", "prefill", "speculative", "reversible", "measured", "disaggregation",
           "training_layout")
_EXPORTS = ("REGISTRY", "KV_BYTES_BY_ATTENTION", "ATTENTION_FLOPS_BY_ATTENTION",
            "ATTENTION_PARAMS_BY_ATTENTION", "KV_SHARDS_BY_ATTENTION", "UNDER_LAYOUT", "CHOICE_INPUTS",
            "CHOICES", "NUMBER_FORMATS")
# the registry of an earlier run from the same sources, among the SymPy results handed in
SNAPSHOT = ("registry snapshot",)


def load():
    """Import every lecture module, in lecture order, and return the registry.

    If the caller handed in a snapshot of the registry an earlier run of the same sources
    declared (with the SymPy results, ``core.PRELOADED``), it is restored instead: the same
    quantities, equations, sections, rules and tables, without running the modules again."""
    from . import core

    blob = core.PRELOADED.get(SNAPSHOT)
    if blob is not None:
        try:
            R, tables = core.Registry.restore(blob)
        except Exception:  # noqa: BLE001 - an unreadable snapshot: declare everything again
            R = None
        if R is not None:
            globals().update(REGISTRY=R, **tables)
            return R
    for m in MODULES:
        importlib.import_module(f"{__name__}.{m}")
    from .inputs import NUMBER_FORMATS, R
    from .kv_cache import ATTENTION_FLOPS_BY_ATTENTION, KV_BYTES_BY_ATTENTION
    from .layout import KV_SHARDS_BY_ATTENTION, LAYOUT
    from .params import ATTENTION_PARAMS_BY_ATTENTION, CHOICE_INPUTS
    from .prices import CHOICES
    # eval, its sweeps and compare answer a lecture name (left) under the deployed layout (right) unless
    # asked for the lecture's picture (--layout even): each derived quantity with a form under the layout
    UNDER_LAYOUT = {a: b for a, b in LAYOUT.table.items() if not R[a].is_input}
    tables = dict(KV_BYTES_BY_ATTENTION=KV_BYTES_BY_ATTENTION, ATTENTION_FLOPS_BY_ATTENTION=ATTENTION_FLOPS_BY_ATTENTION,
                  ATTENTION_PARAMS_BY_ATTENTION=ATTENTION_PARAMS_BY_ATTENTION,
                  KV_SHARDS_BY_ATTENTION=KV_SHARDS_BY_ATTENTION, UNDER_LAYOUT=UNDER_LAYOUT,
                  CHOICE_INPUTS=CHOICE_INPUTS,
                  CHOICES=CHOICES, NUMBER_FORMATS=NUMBER_FORMATS)
    R.fresh[SNAPSHOT] = R.snapshot(tables)   # kept with the SymPy results by the caller
    globals().update(REGISTRY=R, **tables)
    return R


def __getattr__(name):
    if name in _EXPORTS:
        load()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = list(_EXPORTS)
