"""The workload defaults that are not formulas, and the rule a choice is made by: plain functions
of magnitudes, declared with their inputs in the lecture module of their topic (``R.rule``).

They live here, apart from the declarations, so that a registry kept from an earlier run
(``core.Registry.snapshot``) can refer to them without running the lecture modules again.
"""
from __future__ import annotations

import math


def serving_chips(domain: float | None, rack: float) -> float:
    """inputs.py: the chip's scale-up domain, but no more than one rack; a chip that names no
    scale-up domain (one given with --set) serves alone."""
    return 1.0 if domain is None else min(domain, rack)


def expert_chips(experts: float, domain: float) -> float:
    """moe_rack.py: the largest number of chips not above the scale-up domain that divides the
    experts evenly."""
    e, d = int(round(experts)), int(round(domain))
    if e < 1 or d < 1 or e != experts:
        raise ValueError(f"needs a whole number of experts (got {experts:g}) and a domain of at least one chip")
    return float(max(n for n in _divisors(e) if n <= d))


def _divisors(n: int) -> list[int]:
    """Every divisor of ``n``, in pairs up to its square root: time grows as √n, not n."""
    small = [k for k in range(1, math.isqrt(n) + 1) if n % k == 0]
    return small + [n // k for k in small]


def tensor_parallel(chips: float, moe_layers: float, pp: float, n_heads: float | None) -> float:
    """layout.py: a dense model tensor-parallel over the chips of a pipeline stage, as far as whole
    query heads allow: the largest divisor of the heads that divides the stage's chips (the rest of
    the chips serve further groups, attention data parallelism); an MoE not split."""
    if moe_layers != 0:
        return 1.0
    stage = _whole_share(chips, pp, 1.0, ("pp", "1", "tp"))
    if stage == 1:   # one chip a stage: nothing to split, whatever the heads
        return 1.0
    if n_heads is None:
        raise ValueError(f"splitting a stage of {stage:g} chips by tensor parallelism needs the model's "
                         "n_heads: give it with --set n_heads=..., or set tp")
    h = int(round(n_heads))
    if h < 1 or h != n_heads:
        raise ValueError(f"needs a whole number of query heads (got {n_heads:g})")
    return float(math.gcd(int(stage), h))   # the largest number dividing both, in time log(chips)


def _whole_share(chips: float, a: float, b: float, names: tuple[str, str, str]) -> float:
    """chips / (a · b), a whole number of at least 1; names: (a's, b's and the share's input names)."""
    if a < 1 or b < 1 or a != round(a) or b != round(b):
        raise ValueError(f"{names[0]} and {names[1]} must be whole numbers of at least 1 (got {a:g}, {b:g})")
    groups = chips / (a * b)
    if groups < 1 or abs(groups - round(groups)) > 1e-9:
        of = f"{names[0]} = {a:g}" if names[1] == "1" else f"{names[0]} · {names[1]} = {a * b:g}"
        raise ValueError(f"chips = {chips:g} is not a whole multiple of {of}: "
                         f"set chips to a multiple of it, or {names[2]}")
    return float(round(groups))


def attention_groups(chips: float, tp: float, pp: float) -> float:
    """layout.py: the attention data-parallel groups, chips / (tp · pp), a whole number."""
    return _whole_share(chips, tp, pp, ("tp", "pp", "dp_attention"))


def train_data_parallel(chips: float, tp: float, pp: float) -> float:
    """training_layout.py: the data-parallel degree, chips / (train_tp · train_pp), a whole number."""
    return _whole_share(chips, tp, pp, ("train_tp", "train_pp", "train_dp"))


def expert_parallel(experts: float, chips: float, pp: float, moe_layers: float) -> float:
    """layout.py: the largest number of chips of one stage that divides the experts evenly (1 for a
    dense model)."""
    if moe_layers == 0:
        return 1.0
    if pp < 1 or pp != round(pp):
        raise ValueError(f"pp must be a whole number of at least 1 (got {pp:g})")
    return expert_chips(experts, max(1.0, math.floor(chips / pp)))


def tp_offdomain_share(tp: float, domain: float) -> float:
    """layout.py: 1 where the tensor-parallel group is larger than a scale-up domain (its ring then
    crosses the scale-out network at every step, so the whole all-reduce runs at that speed), else 0."""
    return 1.0 if tp > domain else 0.0


def ep_offdomain_share(ep: float, domain: float) -> float:
    """layout.py: the share of an expert-parallel group's chips outside one chip's scale-up domain,
    1 − domain/ep (uniform routing sends that share of the dispatch there); 0 within one domain."""
    return max(0.0, 1.0 - domain / ep)


def offdomain_bandwidth(tp: float, ep: float, domain: float, scaleup: float, scaleout: float | None) -> float:
    """layout.py: the bandwidth a chip's traffic to another scale-up domain gets: its scale-out
    network's where a tensor- or expert-parallel group spans domains; within one domain there is
    no such traffic (the scale-up bandwidth stands in, multiplied by an off-domain share of 0)."""
    if tp <= domain and ep <= domain:
        return scaleup
    if scaleout is None:
        group = "tp" if tp > domain else "ep"
        raise ValueError(f"{group} = {tp if group == 'tp' else ep:g} spans more than one scale-up "
                         f"domain of {domain:g} chips, and the chip publishes no scale-out bandwidth to charge "
                         f"the traffic between domains at: give it with --set scaleout_bandwidth=VALUE")
    return scaleout


def moe_layers_per_stage(moe_layers: float, stages: float) -> float:
    """pipeline.py: the model's MoE layers split evenly over the stages, rounded up."""
    if moe_layers < 1:
        raise ValueError("a dense model has no MoE layers to pipeline over")
    if stages < 1 or stages != round(stages):
        raise ValueError(f"pipeline_stages must be a whole number of at least 1 (got {stages:g})")
    return float(math.ceil(moe_layers / stages))


def micro_batches(stages: float) -> float:
    """pipeline.py: one micro-batch per stage."""
    if stages < 1 or stages != round(stages):
        raise ValueError(f"pipeline_stages must be a whole number of at least 1 (got {stages:g})")
    return float(stages)


def checkpoint_interval(layers: float) -> float:
    """reversible.py: the whole number of layers nearest √layers, at least 1."""
    return float(max(1, round(layers ** 0.5)))


def best_tier(drain_seconds: dict, lifetime_seconds: float) -> str:
    """prices.py: the tier whose drain time is nearest a cache lifetime, by ratio (C-13: hold a KV
    in the tier whose capacity/bandwidth is about the time it waits)."""
    return min(drain_seconds, key=lambda t: abs(math.log(drain_seconds[t] / lifetime_seconds)))


def allreduce_call_latency(measured: float | None, hop: float) -> float:
    """layout.py: the fixed time of one all-reduce step, the chip's measured small all-reduce where
    hardware.yaml gives one (the fastest published on its fabric), else the ring's per-hop latency."""
    return hop if measured is None else measured
