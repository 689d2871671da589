"""What --set accepts and what a set-up must keep coherent: the format keys, each input's declared
rules (rules_of), the degrees that state a layout, and the compute format a chip and a weight
format choose together."""
from __future__ import annotations

from functools import lru_cache

from derivations import (ATTENTION_FLOPS_BY_ATTENTION, ATTENTION_PARAMS_BY_ATTENTION, KV_BYTES_BY_ATTENTION,
                         KV_SHARDS_BY_ATTENTION, REGISTRY)

from ..data.loader import FORMATS_ORDER, RATE_FORMATS, Data
from ..errors import MissingInput


FORMAT_KEYS = ("format", "weight_format", "kv_format", "compute_format")
# --set price=ID picks a price snapshot of prices.yaml; --set engine=NAME the engine model fitted to
# that engine's published runs alone (validation/engine_fit.py), for every expected number
SELECT_KEYS = ("price", "engine")
SELECTS = {"price": "a price id of prices.yaml", "engine": "an engine whose runs have a fit of their own (`validate` lists them)"}
# --hardware / --model id of an entry given wholly with --set (a chip or model not in the files)
INLINE_ID = "custom"
DENSE_MOE_DEFAULTS = {"experts": 1.0, "experts_per_token": 1.0, "moe_layers": 0.0, "d_expert": 0.0,
                      "shared_experts": 0.0}
BY_ATTENTION = {"kv_bytes_per_token": KV_BYTES_BY_ATTENTION,
                "attention_flops_per_token": ATTENTION_FLOPS_BY_ATTENTION,
                "attention_params_per_layer": ATTENTION_PARAMS_BY_ATTENTION,
                "kv_shards": KV_SHARDS_BY_ATTENTION}
# the degrees that state a layout (derivations/layout.py): setting any of them sets the chips
LAYOUT_DEGREES = ("tp", "dp_attention", "pp")
# What eval, compare, sweeps, plan and the library take where the user gives no workload (Scenario's
# defaults="serving"): a serving replica's batch and a chat request's context, which fit a model on
# the fewest chips that hold it. The report and the audit keep the lecture's own set-up (the declared
# defaults: 2,000 sequences of 8,192 tokens on one scale-up domain), as the lecture states it.
SERVING_WORKLOAD = {
    "batch": ("64 sequence", "serving default: 64 sequences decoded together, a batch one replica serves at "
                             "interactive speed (--set batch=...)"),
    "context": ("4096 token/sequence", "serving default: 4,096 tokens of context, what most chat requests "
                                       "hold (--set context=...)"),
}
DEFAULTS = ("serving", "lecture")
# a workload default read from the published measurements of the set-up's regime (Scenario.evidence)
EVIDENCE = "=evidence"
# Quantities one input settles without the rest of their definition: (the input, the value at which
# it settles them, their value there: a number in base units or the input it equals). At tp = 1 no
# all-reduce runs, at pp = 1 no stage passes to another, at ep = 1 (every dense model) no token leaves
# its chip for an expert: the definition gives the same number there, but reads inputs that cannot
# matter (a one-chip set-up never needs the scale-up bandwidth, a dense one at tp = 1 never needs
# d_model or the KV heads), so they are neither read nor asked for
# (tests/evaluation/test_short_circuits.py: each equals its definition wherever both evaluate).
SETTLED_BY = {
    "tp_comm_time": ("tp", 1.0, 0.0), "tp_comm_time_min": ("tp", 1.0, 0.0),
    "tp_allreduce_time_ring": ("tp", 1.0, 0.0), "tp_allreduce_time_one_shot": ("tp", 1.0, 0.0),
    "tp_allreduce_time_two_shot": ("tp", 1.0, 0.0), "kv_share_per_rank": ("tp", 1.0, 1.0),
    "tp_allreduce_call_time": ("tp", 1.0, 0.0),
    "experts_read_per_chip": ("moe_layers", 0.0, 1.0),
    "pp_comm_time": ("pp", 1.0, 0.0),
    "ep_comm_time": ("ep", 1.0, 0.0), "ep_comm_time_min": ("ep", 1.0, 0.0), "routed_params": ("moe_layers", 0.0, 0.0),
    "always_read_params": ("moe_layers", 0.0, "params_active"),
    "prefill_tp_comm_time": ("tp", 1.0, 0.0), "prefill_ep_comm_time": ("ep", 1.0, 0.0),
    "prefill_tp_comm_time_min": ("tp", 1.0, 0.0), "prefill_ep_comm_time_min": ("ep", 1.0, 0.0),
    "prefill_allreduce_time_one_shot": ("tp", 1.0, 0.0), "prefill_allreduce_time_two_shot": ("tp", 1.0, 0.0),
}
# a quantity defined as another at one sequence (R.at, batch = 1): where a term below it is settled,
# it is that quantity evaluated with the batch set to one sequence, which reads what that one reads
AT_ONE_SEQUENCE = {"latency_floor_layout": "step_time_layout"}
@lru_cache(maxsize=4)
def related(count: int) -> tuple:
    """The inputs whose rules name another input (tp divides n_heads), of a registry of ``count``
    quantities: a set-up checks only these, and it makes thousands of set-ups."""
    return tuple(q for q in REGISTRY.inputs() if q.rules.within or q.rules.divides)


def rules_of(name: str):
    """The rules an input declares (derivations/: whole, may be zero, limits, order, divisibility),
    by its name or a data file's field (flops_bf16: the peak FLOP/s); none for any other name."""
    from derivations.core import Rules

    q = REGISTRY.quantities.get("peak_flops" if name.startswith("flops_") else name)
    return q.rules if q is not None else Rules()


def _has_rate(hw, f: str, overrides) -> bool:
    return f"flops_{f}" in hw.values or f"flops_{f}" in overrides


def _rates(hw) -> list[str]:
    return [f for f in RATE_FORMATS if f"flops_{f}" in hw.values]


def compute_format_for(hw, weight_format: str, explicit: str | None, overrides=()) -> tuple[str, str | None]:
    """The format the chip computes in and, when it is not the one asked for, a note saying so.

    Asked for explicitly (--set compute_format / format), the chip must publish that rate (or
    --set gives it). By default: the weight format if the chip has a rate for it (integer
    weights are dequantised to bf16, the usual weight-only quantisation), else the next wider
    float format it has -- an explicit fallback, carried in the note.
    """
    have = _rates(hw)
    if explicit is not None:
        if _has_rate(hw, explicit, overrides):
            return explicit, None
        raise MissingInput(f"{hw.id} lists no {explicit} FLOP/s (it lists {', '.join(have) or 'none'}); "
                           f"use --set compute_format={have[-1] if have else 'bf16'}, or give the rate "
                           f"with --set flops_{explicit}=...")
    wanted = weight_format if weight_format in FORMATS_ORDER else "bf16"
    if _has_rate(hw, wanted, overrides):
        note = None if wanted == weight_format else f"{weight_format} weights dequantised to bf16 for compute"
        return wanted, note
    for f in FORMATS_ORDER[FORMATS_ORDER.index(wanted):]:
        if _has_rate(hw, f, overrides):
            return f, f"{hw.id} has no {wanted} rate: computing at its {f} rate"
    if not have:
        raise MissingInput(f"{hw.id} lists no FLOP/s: give the rate with --set flops_{wanted}=...")
    raise MissingInput(f"{hw.id} lists no FLOP/s for {wanted} or wider (it lists {', '.join(have)}); "
                       f"use --set compute_format={have[-1]}, or give the rate with --set flops_{wanted}=...")


def with_inline(data: Data, kind: str) -> Data:
    """``data`` with an empty entry ``custom`` of ``kind`` ("hardware" or "models"): every value it
    is asked for comes from --set (else the evaluation says which input to give)."""
    import dataclasses

    from ..data.loader import Entry

    if kind == "hardware":
        entry = Entry(INLINE_ID, "a chip given with --set", "hardware")
    else:  # number formats as for a model published in bf16; --set weight_format=... changes them
        entry = Entry(INLINE_ID, "a model given with --set", "model",
                      tags={"weight_format": "bf16", "kv_format": "bf16"})
    table = {**getattr(data, kind), INLINE_ID: entry}
    return dataclasses.replace(data, **{kind: table})
