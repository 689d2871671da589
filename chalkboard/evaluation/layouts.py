"""Which form of a quantity a command answers: the lecture's even spread, or the deployed layout.

The lecture spreads one copy evenly over its chips; a deployment lays it out by tensor, attention
data, expert and pipeline parallelism, with communication in the step (derivations/layout.py). A
lecture name that has a form under the layout (``UNDER_LAYOUT``: step_time, latency_floor,
cost_per_token, kv_per_chip, ...) is answered under the layout unless the lecture's picture is
asked for (``--layout even``); every other name is the lecture's.
"""
from __future__ import annotations

from derivations import REGISTRY, UNDER_LAYOUT

from ..errors import InputError, MissingInput
from ..typeset.fmt import fmt, fmt_named

CHOICES = ("deployed", "even")
DEGREES = ("tp", "dp_attention", "ep", "pp")


def resolve(name: str, layout: str) -> str:
    """The quantity that answers ``name``: its layout form where it has one and ``layout`` is
    "deployed", else ``name`` itself."""
    if layout not in CHOICES:
        raise InputError(f"--layout {layout}: expected one of {', '.join(CHOICES)}")
    return UNDER_LAYOUT.get(name, name) if layout == "deployed" else name


def answered(names, layout: str) -> tuple[list[str], str]:
    """The quantities that answer ``names`` under ``layout``, and one line saying which were
    answered by their form under the deployed layout ("" for none). Every column of a sweep or a
    comparison is computed for one layout: a name with no form under the deployed layout that
    still depends on how the copy is spread (the lecture's even spread) cannot stand beside one
    answered under the layout, and is refused with what to ask instead."""
    from ..evaluation.dependence import setup_dependence

    out = [resolve(n, layout) for n in names]
    moved = [f"{a} as {b}" for a, b in zip(names, out) if a != b]
    if layout == "deployed":
        laid = [a for a, b in zip(names, out) if setup_dependence(b) in ("layout", "layout1")]
        even = [a for a, b in zip(names, out) if setup_dependence(b) in ("batch", "chips", "pipeline")]
        if laid and even:
            raise InputError(f"{', '.join(even)} {'has' if len(even) == 1 else 'have'} no form under the deployed "
                             f"layout, {', '.join(laid)} {'is' if len(laid) == 1 else 'are'} answered under it: "
                             "one table holds one layout (--layout even: every column under the lecture's even "
                             "spread; or ask for them apart)")
    note = (f"note: answered under the deployed layout: {', '.join(moved)} (--layout even: the lecture's "
            "even spread)") if moved else ""
    return out, note


def degrees(sc) -> dict:
    """The layout's degrees and chips for a scenario ({} where one cannot be chosen)."""
    try:
        out = {n: sc.mag(n) for n in DEGREES}
        out["chips"] = sc.mag("layout_chips")
    except (MissingInput, InputError):
        return {}
    return {n: int(v) if float(v).is_integer() else v for n, v in out.items()}


def text(d: dict) -> str:
    """"tp 8 · dp_attention 1 · ep 1 · pp 1 = 8 chips"."""
    return " · ".join(f"{n} {d[n]:g}" for n in DEGREES) + f" = {d['chips']:g} chips" if d else "none"


def breakdown(sc, name: str) -> list[dict]:
    """The derived quantities the definition of ``name`` reads directly, each with its value (the
    terms a step time is made of); [] when it reads fewer than two."""
    q = REGISTRY[name]
    if q.expr is None:
        return []
    names = [REGISTRY.q(s).name for s in q.expr.free_symbols if s in REGISTRY.by_symbol]
    derived = [n for n in REGISTRY.quantities if n in names and not REGISTRY[n].is_input]
    if len(derived) < 2:
        return []
    out = []
    for n in derived:
        try:
            out.append({"name": n, "display": fmt_named(n, sc.value(n))})
        except (MissingInput, InputError) as e:
            out.append({"name": n, "display": f"n/a ({e})"})
    return out


def collectives(sc, name: str) -> list[dict]:
    """Each communication term ``name`` reads under the layout, with the algorithm it runs and the
    network it crosses (eval's "collectives" line): [] where the quantity reads none."""
    leaves = {l.name for l in REGISTRY.leaves(name)}
    reads = _reads(name) | {name}
    out = []
    try:
        tp, ep = sc.mag("tp"), sc.mag("ep")
        if "tp_offdomain_share" in leaves and tp > 1:
            off = sc.mag("tp_offdomain_share") > 0
            net = (f"over the scale-out network at {fmt(sc.value('offdomain_bandwidth'))} (the group of {tp:g} "
                   f"spans scale-up domains of {sc.mag('scaleup_domain'):g})" if off else
                   f"within one scale-up domain at {fmt(sc.value('scaleup_bandwidth'))}")
            # the algorithm as the term that costs it chose it: a prefill's all-reduces carry every
            # prompt token, so the faster of one- and two-shot can differ from a decode step's
            curve = _allreduce_curve(sc)
            passes = [(t, w) for t, w in (("tp_comm_time", ""), ("prefill_tp_comm_time", "prefill "))
                      if t in reads] or [("tp_comm_time", "")]
            for term, what in passes:
                algo = _allreduce_algorithm(sc, tp, prefill=term.startswith("prefill"))
                out.append({"term": term, "collective": "all-reduce", "algorithm": algo, "curve": curve,
                            "text": f"{what}tensor-parallel all-reduces over {tp:g} chips: {algo}, {net}; {curve}"})
        if "ep_offdomain_share" in leaves and ep > 1 and sc.mag("moe_layers") > 0:
            # the shares of a chip's dispatch as ep_comm_time has them: 1/ep to its own experts, on no link
            f, own = sc.mag("ep_offdomain_share"), 1 / ep
            up = f"{max(0.0, 1 - f - own):.0%} of its bytes over the scale-up link at {fmt(sc.value('scaleup_bandwidth'))}"
            net = (f"{up}, {f:.0%} over the scale-out network at {fmt(sc.value('offdomain_bandwidth'))}" if f > 0 else
                   f"within one scale-up domain: {up}")
            out.append({"term": "ep_comm_time", "collective": "all-to-all", "algorithm": "direct (1 step each way)",
                        "text": f"expert all-to-all over {ep:g} chips: direct, one step each way, {net}, and the "
                                f"{own:.0%} for the chip's own experts stays on it"})
        if "pp_comm_time" in reads and sc.mag("pp") > 1:
            out.append({"term": "pp_comm_time", "collective": "send/receive", "algorithm": "point to point (1 hop)",
                        "text": f"pipeline hops between {sc.mag('pp'):g} stages: point to point, one hop each, over "
                                f"the scale-out network at {fmt(sc.value('scaleout_bandwidth'))}"})
        if "kv_transfer_time" in reads:
            out.append({"term": "kv_transfer_time", "collective": "send/receive", "algorithm": "point to point",
                        "text": f"KV cache from the prefill pool to a decoding copy: point to point, every chip over "
                                f"its own link of the scale-out network at {fmt(sc.value('scaleout_bandwidth'))}"})
    except (MissingInput, InputError):
        return out
    return out


def _allreduce_algorithm(sc, tp: float, prefill: bool) -> str:
    """The all-reduce the step's (or, ``prefill``, the prefill's) tensor-parallel term costs: a ring
    where chips do not all reach each other in one hop, else the faster of one- and two-shot at the
    bytes that term sends (a prefill's carry every new prompt token: its own declared times)."""
    if sc.mag("direct_collectives") == 0:   # a reduce-scatter and an all-gather, tp − 1 steps each
        return f"ring ({sc.mag('allreduce_phases') * (tp - 1):g} steps each)"
    kind = "prefill_allreduce_time" if prefill else "tp_allreduce_time"
    one, two = sc.mag(f"{kind}_one_shot"), sc.mag(f"{kind}_two_shot")
    return "one-shot (1 step each)" if one <= two else "two-shot (2 steps each)"


def _allreduce_curve(sc) -> str:
    """The latency + size/bandwidth curve the all-reduce is costed on: each step's fixed time (the
    fabric's fastest published small all-reduce, or the ring's hop) plus the bytes at the link."""
    if sc.mag("direct_collectives") == 0:
        return f"each step {fmt(sc.value('ring_hop_latency'))} (ring_hop_latency) + bytes / link bandwidth"
    try:
        sc.value("allreduce_latency")
        src = "the fabric's fastest published small all-reduce, allreduce_latency"
    except (MissingInput, InputError):
        src = "no measured all-reduce for this chip: the ring's hop, ring_hop_latency"
    return f"each step {fmt(sc.value('allreduce_step_latency'))} ({src}) + bytes / link bandwidth"


def _reads(name: str) -> set[str]:
    """Every derived quantity ``name``'s definition reads, through the definitions it reads."""
    seen, todo = set(), [name]
    while todo:
        q = REGISTRY[todo.pop()]
        for sym in (q.expr.free_symbols if q.expr is not None else ()):
            r = REGISTRY.q(sym)
            if r.name not in seen and not r.is_input:
                seen.add(r.name)
                todo.append(r.name)
    return seen
