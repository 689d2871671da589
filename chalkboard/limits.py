"""The largest value each count may take, with why.

Every count (in a data file, a --model-config, --set or --sweep) is checked against its bound
before any work (chalkboard/data.py, hfconfig.py, evaluation/settings.py and sweep.py read this
table), so that no input can make a rule that reads it (a divisor search, a sweep, a per-layer
count) run for minutes or exhaust memory. Each bound is far past anything built or published,
so a real model or machine never meets it.
"""
from __future__ import annotations

_WIDTH = (2**24, "a width; the widest published models are about 2^15 wide")
_HEADS = (2**16, "the most published attention heads are a few hundred")
_EXPERTS = (2**20, "the most published experts are a few hundred per layer")
_DEGREE = (10**9, "a billion chips is a thousand times the largest machine built")
_STEPS = (10**6, "a million stages or micro-batches is far past any pipeline built")
LARGEST = {
    "layers": (2**16, "the deepest published models have a few hundred layers"),
    "moe_layers": (2**16, "the deepest published models have a few hundred layers"),
    "d_model": _WIDTH, "d_head": _WIDTH, "kv_latent_dim": _WIDTH, "kv_rope_dim": _WIDTH,
    "q_latent_dim": _WIDTH, "d_expert": _WIDTH, "d_ff": _WIDTH, "index_head_dim": _WIDTH,
    "vocab_size": (2**24, "the largest published vocabularies are about 2^18 tokens"),
    "n_heads": _HEADS, "n_kv_heads": _HEADS, "index_heads": _HEADS,
    "experts": _EXPERTS, "experts_per_token": _EXPERTS, "shared_experts": _EXPERTS,
    "scaleup_domain": (2**20, "the largest scale-up domains built are a few hundred chips"),
    "dies_per_package": (1024, "packages hold a few dies"),
    "chips": _DEGREE, "ring_chips": _DEGREE, "tp": _DEGREE, "pp": _DEGREE, "ep": _DEGREE,
    "dp_attention": _DEGREE, "train_tp": _DEGREE, "train_pp": _DEGREE, "train_dp": _DEGREE,
    "batch": (10**9, "a billion sequences at once is far past any deployment"),
    "context": (10**9, "a billion tokens of context is a thousand times the longest window offered"),
    "racks": (10**6, "a million racks is far past any machine built"),
    "matmul_m": (10**9, "a matrix dimension of a billion is far past any layer"),
    "matmul_k": (10**9, "a matrix dimension of a billion is far past any layer"),
    "matmul_n": (10**9, "a matrix dimension of a billion is far past any layer"),
    "pipeline_stages": _STEPS, "micro_batches": _STEPS, "moe_layers_per_stage": _STEPS,
    "virtual_stages": _STEPS,
    "ring_directions": (64, "a ring runs in one or two directions"),
    "collective_axes": (64, "a collective runs over a few axes of the network"),
    "optimizer_moments": (64, "optimizers keep a few moments (Adam: two)"),
}
# A year a data file gives: the earliest and latest it may be, with why. The figures set the chips
# on a time axis, which a year of 1e29 stretched until matplotlib's layout collapsed.
YEARS = {"launch_year": (1958, 2100, "a chip's launch, past or announced; the first integrated circuit "
                                     "was made in 1958")}


def not_a_year(name: str, magnitude: float) -> str | None:
    """Why ``magnitude`` is not a year ``name`` may take (YEARS), or None."""
    if name in YEARS and not YEARS[name][0] <= magnitude <= YEARS[name][1]:
        lo, hi, why = YEARS[name]
        return f"a year from {lo} to {hi} ({why})"
    return None


def too_large(name: str, magnitude: float) -> str | None:
    """Why ``magnitude`` (in the input's declared unit) is past the largest value of ``name``, or None."""
    if name in LARGEST and magnitude > LARGEST[name][0]:
        return f"at most {LARGEST[name][0]:,} ({LARGEST[name][1]})"
    return None
