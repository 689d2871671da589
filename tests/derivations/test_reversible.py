"""Chapter 7: reversible maps and their inverses, and the activation memory of training."""
import pytest
import sympy as sp

from chalkboard.evaluation.check import check_all
from chalkboard.evaluation.evaluate import Scenario
from derivations import REGISTRY as R
from derivations import reversible as rv

f, g = rv.f, rv.g


def test_every_inverse_holds_symbolically_for_arbitrary_functions():
    assert rv.VERIFIED == {name: True for name in rv.INVERSES}
    for forward, inverse in rv.INVERSES.values():
        assert rv.is_inverse(forward, inverse)


def test_feistel_inverse_by_hand():
    # The lecture (chapters-3-7.md, R-05): (x, y) -> (x, y + f(x)), undone by x = x', y = y' - f(x').
    x, y = sp.symbols("x y")
    u, v = rv.feistel(x, y)
    assert (u, v) == (x, y + f(x))
    assert rv.feistel_inverse(u, v) == (x, y)


@pytest.mark.parametrize("forward,wrong", [
    (rv.feistel, lambda u, v: (u, v + f(u))),                          # sign flipped
    (rv.feistel, lambda u, v: (u, v - f(v))),                          # f of the wrong half
    (rv.rev_transformer, lambda u, v: (v, u - f(u))),                  # f of the new stream, not the old
    (rv.revnet, lambda u, v: (u - f(v - g(u)), v - f(u))),             # g and f swapped in one place
    (rv.revnet, lambda u, v: (u - f(v), v - g(u))),                    # undoes the rounds in the wrong order
    (rv.stack(rv.rev_transformer, rv._fs),
     rv.stack(rv.rev_transformer_inverse, rv._fs)),                    # layers undone first-to-last
])
def test_a_wrong_inverse_is_caught(forward, wrong):
    assert not rv.is_inverse(forward, wrong)


def test_the_whole_stack_is_the_composition_of_its_layers():
    # Three layers (x, y) -> (y + f_i(x), x): the stream two layers on is x plus f_2 of the next.
    x, y = sp.symbols("x y")
    f1, f2, f3 = rv._fs
    got = rv.stack(rv.rev_transformer, rv._fs)(x, y)
    a = y + f1(x)
    b = x + f2(a)
    assert got == (a + f3(b), b)


def test_inverse_identities_and_memory_identities_pass_the_check():
    rep = check_all(R)
    assert rep.ok, rep.failures
    mine = [e for e in R.equations.values() if e.section == "reversible" and not e.free]
    assert {e.name for e in mine} == {"checkpoint_best_is_two_sqrt_layers", "recompute_adds_one_forward_pass"}
    assert set(R.sections["reversible"].equations) == {e.name for e in mine}
    assert all(e.identity for e in mine)


def test_best_checkpoint_interval_is_solved_as_sqrt_layers():
    assert R["checkpoint_interval_best"].how.startswith("solved")
    assert sp.simplify(R.closed_form("checkpoint_interval_best") - sp.sqrt(R["layers"].sym)) == 0


def test_reversible_memory_does_not_grow_with_depth():
    n = R["layers"].sym
    assert sp.diff(R.closed_form("activation_bytes_per_token_reversible"), n) == 0
    assert sp.diff(R.closed_form("activation_bytes_per_token_stored"), n) != 0


# Llama 3 70B: 80 layers, model dimension 8192 (Llama 3 paper, "The Llama 3 Herd of Models", Table 3;
# also the Hugging Face config meta-llama/Meta-Llama-3-70B: num_hidden_layers 80, hidden_size 8192).
# bf16 activations: 2 bytes each.
def test_activation_memory_for_llama_3_70b_by_hand(data):
    sc = Scenario(data, "h100-sxm", "llama-3-70b")
    per_token = lambda name: sc.value(name).to("byte/token").magnitude
    assert per_token("activation_bytes_per_token_stored") == pytest.approx(80 * 8192 * 2)       # 1,310,720
    # checkpoint every round(sqrt(80)) = 9 layers: 80/9 kept + 9 recomputed in the current segment
    assert sc.value("checkpoint_interval").magnitude == 9
    assert per_token("activation_bytes_per_token_checkpoint") == pytest.approx((80 / 9 + 9) * 8192 * 2)
    assert per_token("activation_bytes_per_token_checkpoint_best") == pytest.approx(2 * 80 ** 0.5 * 8192 * 2)
    assert per_token("activation_bytes_per_token_reversible") == pytest.approx(2 * 8192 * 2)    # 32,768
    assert sc.value("activation_saving_reversible").magnitude == pytest.approx(40)
    # one step of the default workload: 2,000 sequences of 8,192 tokens = 16,384,000 tokens
    assert sc.value("activation_memory_stored").to("byte").magnitude == pytest.approx(
        2000 * 8192 * 80 * 8192 * 2)                                                            # 21.5 TB
    assert sc.value("activation_memory_reversible").to("GB").magnitude == pytest.approx(
        2000 * 8192 * 2 * 8192 * 2 / 1e9)                                                       # 537 GB


def test_recomputation_costs_one_forward_pass(data):
    # 2 (forward) + 4 (backward) FLOP per parameter per token, plus one more forward: 8, a third more.
    # Llama 3 70B's active parameters from models.yaml: the extra forward pass is 2 FLOP each.
    sc = Scenario(data, "h100-sxm", "llama-3-70b")
    assert sc.value("train_flop_per_param_token_recompute").to("FLOP/parameter/token").magnitude == 8
    assert sc.value("recompute_overhead").magnitude == pytest.approx(1 / 3)
    n = sc.value("params_active").to("parameter").magnitude
    assert sc.value("recompute_flops_per_token").to("FLOP/token").magnitude == pytest.approx(2 * n)


def test_bytes_per_activation_and_interval_can_be_set(data):
    sc = Scenario(data, "h100-sxm", "llama-3-70b", {"bytes_per_saved_activation": "1 byte",
                                                     "checkpoint_interval": "1"})
    # k = 1 keeps every layer's input plus the one being back-propagated: 81 vectors of 8,192 fp8 numbers
    assert sc.value("activation_bytes_per_token_checkpoint").to("byte/token").magnitude == pytest.approx(81 * 8192)


# -- the opposite trade: the KV cache (chapters-3-7.md#R-08) ---------------------------------------
def test_kv_recompute_over_read_for_llama_3_70b_on_h100_by_hand(data):
    # Recomputing a token's KV is one forward pass: 2 FLOP x 70e9 parameters at the H100 SXM's dense
    # bf16 989.5 TFLOP/s (NVIDIA datasheet: 1,979 with sparsity) = 141.5 us of chip time. Reading it
    # back: 80 layers x 2 (K, V) x 8 KV heads x 128 x 2 bytes (bf16) = 327,680 bytes at 3.35 TB/s =
    # 97.8 ns. Their ratio: 2 x 70e9 x 3.35e12 / (989.5e12 x 327,680) = 1,446.4.
    sc = Scenario(data, "h100-sxm", "llama-3-70b")
    assert sc.value("kv_recompute_over_read").magnitude == pytest.approx(1446.4, rel=1e-4)
    # an fp8 KV cache halves the bytes read, so the cache saves twice as much compute per byte read
    fp8 = Scenario(data, "h100-sxm", "llama-3-70b", {"kv_format": "fp8"})
    assert fp8.value("kv_recompute_over_read").magnitude == pytest.approx(2 * 1446.4, rel=1e-4)


# -- the inverses as identities of `build.py check` -------------------------------------------------
def test_check_verifies_and_counts_the_inverse_identities():
    # 4 maps (Feistel, RevNet, the lecture's layer, a 3-layer stack) x 2 ways round x 2 halves
    names = [n for n, e in R.equations.items() if e.free]
    assert len(names) == 4 * 2 * 2
    assert all(R.equations[n].identity and R.equations[n].section == "reversible" for n in names)
    assert not set(names) & set(R.sections["reversible"].equations)   # checks, not board equations
    rep = check_all(R)
    assert rep.ok, rep.failures
    assert rep.in_functions == 16


def test_check_fails_a_wrong_inverse_and_a_unit_mismatch():
    from chalkboard.evaluation.check import check_equation
    from chalkboard.evaluation.walk import DimensionMismatch
    from derivations.core import Equation
    x, y = sp.symbols("x y")
    with sp.evaluate(False):
        there = rv.feistel(*rv.feistel(x, y))          # the map applied twice is not undone
    wrong = Equation("feistel_twice", there[1], y, "wrong", "reversible", identity=True, free=(x, y))
    assert check_equation(R, wrong) is False
    # y + f(x) with y a quantity in bytes and x a bare number: f keeps x's dimension, so the sum fails
    b = R["kv_bytes_per_token"].sym
    bad = Equation("bytes_plus_f", b + f(x), b, "mismatch", "reversible", identity=False, free=(x,))
    with pytest.raises(DimensionMismatch):
        check_equation(R, bad)


def test_check_cli_reports_the_function_identities(cli):
    r = cli("check")
    assert r.returncode == 0, r.stderr
    assert "16 of them in undefined functions" in r.stdout
