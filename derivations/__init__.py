"""chalkboard's derivations: one module per lecture topic, imported in lecture order.

``REGISTRY`` holds every declared quantity, equation and section; the modules add to it as
they are imported, which happens the first time ``REGISTRY`` (or a table below) is asked
for. Until then only ``derivations._core`` is loaded, so a caller can hand the registry the
SymPy results of an earlier run first (``_core.PRELOADED``, see build.py).
"""
import importlib

MODULES = ("inputs", "roofline", "latency_cost", "kv_cache", "balance", "context", "schedule",
           "moe_rack", "textbook", "params", "pipeline", "memory", "fast_mode", "training",
           "textbook_training", "prices", "reversible")
_EXPORTS = ("REGISTRY", "KV_BYTES_BY_ATTENTION", "ATTENTION_FLOPS_BY_ATTENTION",
            "ATTENTION_PARAMS_BY_ATTENTION", "CHOICE_INPUTS")


def load():
    """Import every lecture module, in lecture order, and return the registry."""
    for m in MODULES:
        importlib.import_module(f"{__name__}.{m}")
    from .inputs import R
    from .kv_cache import ATTENTION_FLOPS_BY_ATTENTION, KV_BYTES_BY_ATTENTION
    from .params import ATTENTION_PARAMS_BY_ATTENTION, CHOICE_INPUTS
    globals().update(REGISTRY=R, KV_BYTES_BY_ATTENTION=KV_BYTES_BY_ATTENTION,
                     ATTENTION_FLOPS_BY_ATTENTION=ATTENTION_FLOPS_BY_ATTENTION,
                     ATTENTION_PARAMS_BY_ATTENTION=ATTENTION_PARAMS_BY_ATTENTION,
                     CHOICE_INPUTS=CHOICE_INPUTS)
    return R


def __getattr__(name):
    if name in _EXPORTS:
        load()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = list(_EXPORTS)
