"""chalkboard's derivations: one module per lecture topic, imported in lecture order.

``REGISTRY`` holds every declared quantity, equation and section; modules add to it as
they are imported.
"""
from .inputs import R as REGISTRY
from . import roofline, latency_cost, kv_cache, balance, context, schedule, moe_rack, fast_mode  # noqa: F401
from .kv_cache import ATTENTION_FLOPS_BY_ATTENTION, KV_BYTES_BY_ATTENTION

__all__ = ["REGISTRY", "KV_BYTES_BY_ATTENTION", "ATTENTION_FLOPS_BY_ATTENTION"]
