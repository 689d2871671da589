"""The search: every chip x weight format x layout x batch, evaluated in one vectorised pass per
chip and format, with the fit and the targets as masks."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from derivations import REGISTRY
from derivations.rules import expert_chips
from units import Quantity

from ..errors import InputError, MissingInput
from ..evaluation.evaluate import Scenario
from .workers import budget

# The batches searched: every eighth of a doubling from 1 to 65,536 sequences, whole numbers.
BATCHES = np.unique(np.round(2.0 ** (np.arange(0, 16 * 8 + 1) / 8)))
# What this search does not cover yet, said with every answer.
LEFT_OUT = (
    "tensor parallelism over the scale-out network and pipeline stages (pp = 1): a dense model's copy stays "
    "within one scale-up domain",
    "without --total-gpus, a prefill pool of its own layout and its queue: a disaggregated deployment prefills on "
    "copies laid out as its decoding ones, in a fraction of a copy, the first token its prefill and the KV cache's "
    "transfer as if no other prompt waited (--total-gpus searches whole workers, each kind with its own layout, "
    "and the queue, its prefill workers' passes at their bound)",
    "speculative decoding: no draft or draft length is searched",
)
# The three ways to deploy a candidate (derivations/disaggregation.py): its reading of (speed, cost,
# step) under the bound, and under the expected numbers, and its time to first token under each.
DEPLOYMENTS = {
    "colocated": {"bound": ("user_speed_colocated", "cost_per_token_colocated", "step_time_layout"),
                  "expected": ("user_speed_colocated_expected", "cost_per_token_colocated_expected",
                               "step_time_expected_layout"),
                  "ttft": ("time_to_first_token_colocated", "time_to_first_token_colocated_expected"), "ratio": None},
    "in-flight": {"bound": ("user_speed_inflight", "cost_per_token_inflight", "step_time_layout"),
                  "expected": ("user_speed_inflight_expected", "cost_per_token_inflight_expected",
                               "step_time_expected_layout"),
                  "ttft": ("time_to_first_token_inflight", "time_to_first_token_inflight_expected"), "ratio": None},
    "disaggregated": {"bound": ("user_speed_layout", "cost_per_token_disaggregated", "step_time_layout"),
                      "expected": ("user_speed_expected_layout", "cost_per_token_disaggregated_expected",
                                   "step_time_expected_layout"),
                      "ttft": ("time_to_first_token_disaggregated", "time_to_first_token_disaggregated_expected"),
                      "ratio": "prefill_pool_ratio_expected"},
}
# (quantity, unit shown) read for every candidate; the expected ones after the efficiencies are known
BOUND = {"step_time_layout": "ms", "user_speed_layout": "token/s/sequence", "hbm_fill_layout": "",
         "user_speed_colocated": "token/s/sequence", "cost_per_token_colocated": "USD/Mtoken",
         "cost_per_token_disaggregated": "USD/Mtoken", "prefill_pool_ratio": "",
         "weights_per_chip_layout": "byte/chip", "cost_per_token_layout": "USD/Mtoken",
         "time_to_first_token_colocated": "s", "user_speed_inflight": "token/s/sequence",
         "cost_per_token_inflight": "USD/Mtoken", "time_to_first_token_inflight": "s"}
EXPECTED = {"step_time_expected_layout": "ms", "user_speed_expected_layout": "token/s/sequence",
            "user_speed_colocated_expected": "token/s/sequence", "cost_per_token_colocated_expected": "USD/Mtoken",
            "cost_per_token_disaggregated_expected": "USD/Mtoken", "prefill_pool_ratio_expected": "",
            "cost_per_token_expected_layout": "USD/Mtoken", "user_speed_inflight_expected": "token/s/sequence",
            "cost_per_token_inflight_expected": "USD/Mtoken", "time_to_first_token_colocated_expected": "s",
            "time_to_first_token_inflight_expected": "s", "time_to_first_token_disaggregated_expected": "s"}
FIRST = {"prefill_time_one": "s", "time_to_first_token_disaggregated": "s"}   # at batch 1 for each layout
# the columns a candidate is read by, whichever its deployment: (speed, cost, step) under each reading
READING = {by: (f"speed_{by}", f"cost_{by}", f"step_{by}") for by in ("bound", "expected")}
TTFT = "ttft"
# the most chips a mixture of experts' copy is spread over (DeepSeek-V3's decode runs on 18 nodes of 8)
MAX_COPY = 256


@dataclass
class Targets:
    """What the deployment must meet; ``by`` names which numbers judge it: "expected" (the bound
    at the engine model fitted to published measurements, chalkboard/validation/engine_fit.py) or
    "bound"."""
    context: float | None             # tokens; None: the workload's default context
    min_tokens_per_user: float
    max_ttft: float | None = None      # seconds
    prompt: float | None = None        # tokens of a request's prompt (default: the context)
    by: str = "expected"
    output: float | None = None        # tokens a request decodes; None: the workload's default
    context_raised: bool = False       # the default context raised to hold the prompt and its answer
    total_gpus: int | None = None      # a budget of chips: whole workers within it (workers.py)


@dataclass
class Search:
    model: str
    targets: Targets
    columns: dict = field(default_factory=dict)   # name -> numpy array over every candidate
    chips: dict = field(default_factory=dict)     # hardware id -> why it was not searched, or ""
    efficiencies: dict = field(default_factory=dict)
    searched: int = 0


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


# the rules a proposed layout keeps, as the common serving frameworks run them (printed by plan)
LAYOUT_RULES = (
    "tensor parallelism within one scale-up domain, over a number of chips that divides the query heads "
    "and is at most the KV heads (past them every rank holds a copy of the same KV head)",
    "a mixture of experts expert-parallel over every chip of the copy (no chip without experts), within one "
    f"scale-up domain or over whole domains joined by the scale-out network, up to {MAX_COPY} chips",
    "each candidate deployed three ways: colocated (the decoding copies also prefill, a prompt at a time), "
    "in-flight batching (each decode step also carries a chunk of a prompt, up to a token budget of 8,192) and "
    "disaggregated (a prefill pool of the same layout sends each prompt's KV cache to the decoding copies)",
    "a candidate fits when its weights and KV cache take at most engine_memory_share of each chip's HBM (90%, "
    "vLLM's default gpu_memory_utilization; --set engine_memory_share=1 to plan with all of it)",
    "weights searched in bf16, fp8 and fp4 where the chip publishes a dense rate for the format (--formats "
    "to restrict), the KV cache in fp8 with fp8 or fp4 weights, as TensorRT-LLM's fp8 builds run it",
)


def layouts(sc: Scenario) -> list[dict]:
    """The layouts of one copy by LAYOUT_RULES: a dense model tensor-parallel, within the chip's
    scale-up domain (capped at a rack), over chips its query heads divide, no more than its KV
    heads; a mixture of experts on n chips (each power of two up to the domain, the domain, and
    whole domains up to MAX_COPY where the chip publishes a scale-out bandwidth) whose experts n
    divides, expert-parallel over all n, its attention tensor-parallel by tp and data-parallel by n / tp."""
    domain, heads = int(sc.mag("chips")), int(sc.mag("n_heads"))
    kv_heads = int(sc.mag("kv_shards")) if sc.model.tags.get("attention") != "mla" else heads
    if sc.is_dense:
        return [{"tp": t, "dp_attention": 1, "ep": 1, "pp": 1, "chips": t}
                for t in _divisors(heads) if t <= domain and t <= kv_heads]
    experts = int(sc.mag("experts"))
    sizes = {2 ** i for i in range(domain.bit_length()) if 2 ** i <= domain} | {domain}
    if sc.hw.get("scaleout_bandwidth") is not None:   # whole domains joined by the scale-out network
        sizes |= {domain * 2 ** j for j in range(MAX_COPY.bit_length()) if domain * 2 ** j <= MAX_COPY}
    sizes = sorted(sizes)
    return [{"tp": t, "dp_attention": n // t, "ep": n, "pp": 1, "chips": n}
            for n in sizes if int(expert_chips(experts, n)) == n
            for t in _divisors(heads) if n % t == 0 and t <= kv_heads and t <= domain]


def formats_for(sc: Scenario, asked: list[str] | None) -> list[str]:
    """The weight formats searched on a chip: those asked, else bf16, fp8 and fp4 where it publishes
    a dense rate for the format."""
    if asked:
        return asked
    return [f for f in ("bf16", "fp8", "fp4") if sc.hw.get(f"flops_{f}") is not None]


def _sweep(sc: Scenario, names: dict, axes: dict) -> dict:
    """Each quantity over the candidates in the unit shown; NaN where it cannot be evaluated (a
    price not published)."""
    out = {}
    for name, unit in names.items():
        try:
            v = sc.sweep_many([name], {k: (a, None) for k, a in axes.items()})[name]
        except MissingInput:
            v = np.full(next(iter(axes.values())).shape, np.nan)
        out[name] = v * Quantity(1, REGISTRY[name].unit or "").to(unit or "").magnitude
    return out


def plan(data, model: str, hardware: list[str], targets: Targets, formats: list[str] | None = None,
         evidence=None, sets: dict | None = None) -> Search:
    """Evaluate every candidate of every chip in ``hardware``: the bound, the expected numbers (with
    the published measurements' efficiency of each candidate's regime, from ``evidence``) and the
    time to first token."""
    if targets.by not in ("expected", "bound"):
        raise InputError(f"--by {targets.by}: expected 'expected' or 'bound'")
    if targets.by == "expected" and evidence is None:
        raise InputError("--by expected needs the published measurements (measurements.yaml): "
                         "give --by bound to judge by the bound alone")
    fitted = None
    if evidence is not None:   # validation/engine_fit.py: the engine model (with --set engine=NAME, as a set-up reads it)
        probe = Scenario(data, hardware[0], model, dict(sets or {}))
        probe.evidence = evidence
        fitted = probe.evidence()
    res = Search(model, targets, efficiencies={"fit": fitted.text(), "range": list(fitted.band)} if fitted else {})
    given = targets.context is not None
    if not given:   # the workload's default, as eval would take it
        targets.context = float(Scenario(data, hardware[0], model, dict(sets or {}), defaults="serving").mag("context"))
    prompt = targets.prompt or targets.context
    if targets.prompt is not None:   # each sequence's KV cache holds its prompt, then its answer
        answer = targets.output if targets.output is not None else float(
            Scenario(data, hardware[0], model, dict(sets or {})).mag("output_tokens"))
        if given and prompt > targets.context:
            raise InputError(f"--prompt {prompt:,.0f}: longer than --context {targets.context:,.0f}, the tokens each "
                             f"sequence's KV cache holds; give --context of at least {prompt:,.0f}, or leave it out "
                             f"(then it is the prompt and its answer)")
        if not given and prompt + answer > targets.context:
            targets.context = prompt + answer
            targets.context_raised = True

    def inputs(fmt):
        base = {**(sets or {}), "context": repr(float(targets.context)), "pass_tokens": repr(float(prompt))}
        if targets.output is not None:
            base["output_tokens"] = repr(float(targets.output))
        if not fmt:
            return base
        kv = {} if "kv_format" in (sets or {}) or fmt == "bf16" else {"kv_format": "fp8"}
        return {**base, "weight_format": fmt, **kv}

    for fmt in formats or [None]:   # the user's own inputs, checked once: a bad one is an error, not a chip's verdict
        Scenario(data, hardware[0], model, inputs(fmt))
    if targets.output is None:
        targets.output = float(Scenario(data, hardware[0], model, inputs(None)).mag("output_tokens"))
    cols: dict[str, list] = {}
    for hw in hardware:
        for fmt in formats_for(Scenario(data, hw, model, dict(sets or {})), formats):
            try:
                sc = Scenario(data, hw, model, inputs(fmt))
                lays = layouts(sc)
            except (MissingInput, InputError) as e:
                res.chips[hw] = str(e)
                continue
            if evidence is not None:
                sc.evidence = evidence
            grid = {k: np.repeat([float(x[k]) for x in lays], len(BATCHES)) for k in lays[0]}
            grid["batch"] = np.tile(BATCHES, len(lays))
            n = grid["batch"].size
            vals = _sweep(sc, BOUND, grid)
            if fitted is not None:
                for fit_in, end in zip((fitted.inputs(), *fitted.ends()), ("", "_low", "_high")):
                    at = {**grid, **{k: np.full(n, v) for k, v in fit_in.items()}}
                    vals.update({k + end: v for k, v in _sweep(sc, EXPECTED, at).items()})
                for k in EXPECTED:   # what the ends and the fit span: a range always holds its value
                    lo, hi, v = vals[k + "_low"], vals[k + "_high"], vals[k]
                    vals[k + "_low"], vals[k + "_high"] = np.fmin(np.fmin(lo, hi), v), np.fmax(np.fmax(lo, hi), v)
            one = {k: np.array([float(x[k]) for x in lays]) for k in lays[0]}
            first = _sweep(sc, FIRST, {**one, "batch": np.ones(len(lays))})
            vals.update({k: np.repeat(v, len(BATCHES)) for k, v in first.items()})
            meta = {"hardware": np.full(n, hw, dtype=object),
                    "weight_format": np.full(n, sc.format, dtype=object),
                    "kv_format": np.full(n, sc.kv_format, dtype=object),
                    "compute_format": np.full(n, sc.compute_format or "", dtype=object),
                    "native_format": np.full(n, sc.model.tags.get("weight_format", ""), dtype=object),
                    "weight_share": vals["weights_per_chip_layout"] / sc.mag("hbm_capacity", "byte/chip")}
            for way, reading in DEPLOYMENTS.items():   # every candidate once per deployment
                row = {**meta, **grid, "deployment": np.full(n, way, dtype=object),
                       "hbm_fill_layout": vals["hbm_fill_layout"],
                       # judged as the rest is: the expected first token where the expected numbers judge
                       TTFT: vals[reading["ttft"][targets.by == "expected" and fitted is not None]],
                       "memory_share": np.full(n, sc.mag("engine_memory_share")),
                       "pool_ratio": (vals.get(reading["ratio"], np.full(n, np.nan)) if reading["ratio"]
                                      else np.zeros(n))}
                for by in ("bound", "expected"):
                    for col, q in zip(READING[by], reading[by]):
                        for end in ("", "_low", "_high") if by == "expected" else ("",):
                            row[col + end] = vals.get(q + end, np.full(n, np.nan))
                row["efficiency"] = row["speed_expected"] / row["speed_bound"]   # the share of the bound's speed
                if targets.total_gpus is not None:   # whole workers within the budget
                    budget(sc, way, row, vals, lays, targets, prompt, _sweep)
                for k, v in row.items():
                    cols.setdefault(k, []).append(v)
            res.chips.setdefault(hw, "")
            res.searched += len(DEPLOYMENTS) * n
    res.columns = {k: np.concatenate(v) for k, v in cols.items()}
    return res
