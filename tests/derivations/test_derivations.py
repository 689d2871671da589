"""The batch-size chapter: SymPy results, limits, and the dimension check catching wrong equations."""
import pytest
import sympy as sp

from chalkboard.evaluation.check import check_all, check_definition
from chalkboard.evaluation.walk import DimensionMismatch
from derivations import REGISTRY as R
from derivations.core import Registry


def sym(name):
    return R[name].sym


def test_every_derivation_passes_the_dimension_check():
    rep = check_all(R)
    assert rep.ok, rep.failures
    assert rep.definitions == len(R.derived_quantities())
    assert rep.equations == len(R.equations) >= 4
    assert rep.identities >= 1


def test_balance_batch_is_solved_not_typed():
    q = R["balance_batch"]
    assert q.how.startswith("solved")
    # the lecture's compute time equals its all-weights fetch time at the solved batch
    t_c, t_w = R.closed_form("compute_time_weights"), R.closed_form("weight_fetch_time_all")
    at = {sym("batch"): R.closed_form("balance_batch")}
    assert sp.simplify(t_c.subs(at) - t_w.subs(at)) == 0


def test_balance_batch_is_ratio_times_sparsity():
    lhs = R.closed_form("balance_batch")
    rhs = R.closed_form("hardware_ratio") * R.closed_form("sparsity") / sym("tokens_per_step")
    assert sp.simplify(lhs - rhs) == 0


def test_latency_floor_is_the_step_time_of_one_sequence():
    one = {sym("batch"): sym("one_sequence")}
    assert sp.simplify(R.closed_form("latency_floor") - R.closed_form("step_time").xreplace(one)) == 0
    # with every constant set to 1, one token reads its own k experts: the memory branch is the
    # strict weight bound plus one sequence's KV (board form: (N_active·β_w + L·b_kv)/(S·W))
    board = R.with_constants(R.closed_form("latency_floor"))
    mem = R.with_constants(R.closed_form("weight_fetch_time_min")
                           + R.closed_form("kv_fetch_time").xreplace({sym("batch"): 1}))
    assert any(sp.simplify(a - mem) == 0 for a in board.args)


def test_cost_floor_is_the_larger_per_token_slope():
    # as B -> oo only the per-token terms survive: compute, or the KV fetch
    floor = R.closed_form("cost_floor")
    assert isinstance(floor, sp.Max)
    assert sym("batch") not in floor.free_symbols
    assert sym("params_total") not in floor.free_symbols  # the weight fetch is amortised away


def test_context_crossover_matches_slopes():
    L = sym("context")
    at = {L: R.closed_form("context_crossover")}
    kv, comp = R.closed_form("kv_fetch_time"), R.closed_form("compute_time")
    assert sp.simplify((kv - comp).subs(at)) == 0


def test_balance_batch_with_kv_diverges_at_the_crossover():
    expr = R.closed_form("balance_batch_kv")
    L, Lstar = sym("context"), R.closed_form("context_crossover")
    assert sp.limit(expr.subs(L, Lstar * sp.Symbol("x", positive=True)),
                    sp.Symbol("x", positive=True), 1, "-") == sp.oo


def test_mfu_large_batch_is_the_ratio_of_slopes_beyond_the_crossover():
    # beyond L* the step is the KV fetch, so MFU -> (compute per sequence) / (KV fetch per sequence)
    expr = R.closed_form("mfu_large_batch")
    L, Lstar, B = sym("context"), R.closed_form("context_crossover"), sym("batch")
    slopes = sp.diff(R.closed_form("compute_time"), B) / sp.diff(R.closed_form("kv_fetch_time"), B)
    assert sp.simplify(expr.args[1] - slopes) == 0 if isinstance(expr, sp.Min) else False
    assert sp.simplify(slopes.subs(L, Lstar)) == 1


def test_constants_are_named_quantities_with_units():
    from units import Quantity
    assert Quantity(1, R["flop_per_param_token"].unit) == Quantity(1, "FLOP/parameter/token")
    assert R["flop_per_param_token"].default == "2 FLOP/parameter/token"
    # the board form of compute time carries the 2, the declared form carries c_F
    assert sym("flop_per_param_token") in R.closed_form("compute_time_weights").free_symbols
    assert R.with_constants(R.closed_form("compute_time_weights")).as_coeff_Mul()[0] == 2


# -- deliberately wrong equations must be caught ----------------------------------------------
def _mini():
    r = Registry()
    B = r.workload("batch", "sequence", "batch", "B", default="1 sequence")
    S = r.workload("chips", "chip", "chips", "S", default="1 chip")
    F = r.hardware("peak_flops", "FLOP/s/chip", "flops", "F")
    W = r.hardware("hbm_bandwidth", "byte/s/chip", "bandwidth", "W")
    N = r.model("params", "parameter", "params", "N")
    beta = r.model("bytes_per_weight", "byte/parameter", "bytes per weight", "β")
    c = r.constant("flop_per_param_token", "2 FLOP/parameter/token", "2 FLOP per MAC", "c")
    d = r.constant("tokens_per_step", "1 token/sequence", "one token per step", "δ")
    return r, B, S, F, W, N, beta, c, d


def test_check_catches_dropped_bytes_per_parameter():
    r, B, S, F, W, N, beta, c, d = _mini()
    r.derived("weight_fetch_time", N / (S * W), "s", "wrong: no bytes per parameter", "t")
    rep = check_all(r)
    assert len(rep.failures) == 1 and "weight_fetch_time" in rep.failures[0]
    assert "[parameter]" in rep.failures[0]


def test_check_catches_flop_vs_multiply_accumulate():
    r, B, S, F, W, N, beta, c, d = _mini()
    r.derived("compute_time", B * d * N / (S * F), "s", "wrong: MACs divided by FLOP/s", "t")
    with pytest.raises(DimensionMismatch, match="compute_time"):
        check_definition(r, r["compute_time"])


def test_check_catches_per_chip_vs_per_system():
    r, B, S, F, W, N, beta, c, d = _mini()
    r.derived("compute_time", c * d * B * N / F, "s", "wrong: one chip's FLOP/s for the system", "t")
    rep = check_all(r)
    assert rep.failures and "[chip]" in rep.failures[0]


def test_check_names_the_terms_of_a_bad_sum():
    r, B, S, F, W, N, beta, c, d = _mini()
    t_w = r.derived("weight_fetch_time", N * beta / (S * W), "s", "ok", "t", "w")
    r.derived("memory_time", t_w + N * beta, "s", "wrong: seconds plus bytes", "t", "m")
    rep = check_all(r)
    assert len(rep.failures) == 1
    msg = rep.failures[0]
    assert msg.startswith("memory_time:") and "weight_fetch_time" in msg and "[information]" in msg


def test_check_catches_a_wrong_equation():
    r, B, S, F, W, N, beta, c, d = _mini()
    t_c = r.derived("compute_time", c * d * B * N / (S * F), "s", "ok", "t", "c")
    r.equation("balance", t_c, N * beta / W, "wrong: weights per chip vs system time")
    rep = check_all(r)
    assert rep.failures and rep.failures[0].startswith("balance:")
