"""Variants made from their base quantity (derivations/core.py, Registry.variant): a quantity's form
under the layout or at the expected efficiencies is its base's definition with the quantities that
have such a form in their place, with the base's unit and its meaning as the kind changes it."""
import pytest
import sympy as sp

from derivations import REGISTRY, UNDER_LAYOUT
from derivations.core import Registry, Variant


@pytest.fixture
def lecture():
    """A registry of a few quantities, each step time with a form written by hand under the layout and
    at the expected efficiency, and the two kinds of variant as the lecture modules declare them."""
    R = Registry()
    R.section("fixture", "A step", seeds=(), question="?", takeaway="")
    B = R.workload("batch", "sequence", "sequences decoded together", "B", default="64 sequence")
    d = R.workload("tokens_per_step", "token/sequence", "tokens each sequence gains a step", "δ",
                   default="1 token/sequence")
    S = R.workload("chips", "chip", "chips that serve one copy", "S", default="8 chip")
    p = R.workload("price", "USD/hour/chip", "rental price of a chip", "p", default="2 USD/hour/chip")
    t = R.workload("step_time", "s", "one decode step", "t", "step", default="20 ms")
    R.derived("layout_chips", 2 * S, "chip", "chips the layout uses", "S", "layout")
    R.derived("step_time_layout", 3 * t, "s", "one decode step under the layout", "t", "step,layout")
    R.derived("step_time_expected", 4 * t, "s", "expected step", "t", "exp")
    layout = Variant("layout", "layout", "under the layout", table={
        "chips": "layout_chips", "step_time": "step_time_layout", "step_time_expected": "step_time_expected_layout"})
    expected = Variant("expected", "exp", prefix="expected ", explained=False, table={
        "step_time": "step_time_expected", "step_time_layout": "step_time_expected_layout"})
    R.derived("step_time_expected_layout", 5 * t, "s", "expected step under the layout", "t", "exp,layout")
    return R, layout, expected, (B, d, S, p, t)


def test_a_new_base_quantity_gets_its_layout_and_expected_forms_from_one_declaration(lecture):
    R, layout, expected, (B, d, S, p, t) = lecture
    # a new input and a quantity that reads it: declared once, as any lecture module would
    h = R.workload("hit_share", "", "share of tokens served from a cache", "h", default="0", zero=True)
    R.derived("tokens_per_dollar", B * d * (1 + h) / (p * S * t), "token/USD",
              "tokens one dollar of chip rental makes: a step's tokens over its cost", "n", "USD")
    R.section("variants", "Under the layout", seeds=(), question="?", takeaway="")
    R.variant("tokens_per_dollar", layout)
    R.variant("tokens_per_dollar", expected)

    lay, exp = R["tokens_per_dollar_layout"], R["tokens_per_dollar_expected"]
    S_l, t_l, t_e = (R[n].sym for n in ("layout_chips", "step_time_layout", "step_time_expected"))
    assert lay.expr == B * d * (1 + h) / (p * S_l * t_l)
    assert exp.expr == B * d * (1 + h) / (p * S * t_e)
    assert lay.unit == exp.unit == "token/USD"
    assert lay.meaning == "tokens one dollar of chip rental makes under the layout: a step's tokens over its cost"
    assert exp.meaning == "expected tokens one dollar of chip rental makes"
    assert (lay.base, lay.sub, exp.base, exp.sub) == ("n", "USD,layout", "n", "USD,exp")
    assert lay.section == exp.section == "variants"
    assert R.sections["variants"].quantities == ["tokens_per_dollar_layout", "tokens_per_dollar_expected"]
    # each joins its kind's table: eval answers the base under the layout by it
    assert layout.table["tokens_per_dollar"] == "tokens_per_dollar_layout"
    assert expected.table["tokens_per_dollar"] == "tokens_per_dollar_expected"


def test_a_variant_of_a_variant_replaces_what_the_first_made(lecture):
    R, layout, expected, (B, d, S, p, t) = lecture
    R.derived("throughput", B * d / t, "token/s", "tokens per second from one copy", "Θ")
    R.variant("throughput", expected, "expected tokens per second from one copy")
    R.variant("throughput_expected", layout, "expected tokens per second from the layout's chips")
    q = R["throughput_expected_layout"]
    assert q.expr == B * d / R["step_time_expected_layout"].sym
    assert (q.unit, q.sub, q.meaning) == ("token/s", "exp,layout", "expected tokens per second from the layout's chips")


def test_a_quantity_with_nothing_to_replace_has_no_variant(lecture):
    R, layout, _, (B, d, S, p, t) = lecture
    R.derived("price_per_sequence", p / B, "USD/hour/chip/sequence", "rental price of a chip per sequence", "P")
    with pytest.raises(ValueError, match="price_per_sequence: nothing in its definition has a layout variant"):
        R.variant("price_per_sequence", layout)
    R.workload("context", "token", "tokens of context", "L", default="1 token")
    with pytest.raises(ValueError, match="context: nothing"):
        R.variant("context", layout)   # an input has no definition to make one from


def test_the_lecture_s_variants_are_their_base_with_the_layout_in_place():
    s = {n: REGISTRY[n].sym for n in ("batch", "tokens_per_step", "rental_price", "layout_chips", "step_time_layout",
                                      "step_time_expected", "step_time_expected_layout", "throughput_expected_layout")}
    assert REGISTRY["throughput_layout"].expr == s["batch"] * s["tokens_per_step"] / s["step_time_layout"]
    assert REGISTRY["cost_per_token_layout"].expr == (s["rental_price"] * s["layout_chips"] * s["step_time_layout"]
                                                      / (s["batch"] * s["tokens_per_step"]))
    assert REGISTRY["user_speed_expected"].expr == s["tokens_per_step"] / s["step_time_expected"]
    assert (REGISTRY["cost_per_token_expected_layout"].expr
            == s["rental_price"] * s["layout_chips"] / s["throughput_expected_layout"])
    assert REGISTRY["cost_per_token_expected_layout"].unit == "USD/Mtoken"   # the base's, not cost_per_token's
    assert REGISTRY["hbm_fill_layout"].share and REGISTRY["hbm_fill_layout"].fit_measure
    assert isinstance(REGISTRY["memory_per_chip_layout"].expr, sp.Add)


def test_eval_answers_each_variant_under_the_layout_but_not_the_chips():
    # made by R.variant (throughput, speeds, costs, the memory's fill) and written by hand alike
    for name in ("throughput", "throughput_per_chip", "user_speed", "speed_ceiling", "cost_per_token", "hbm_fill",
                 "memory_per_chip", "throughput_expected", "cost_per_token_expected", "user_speed_expected",
                 "time_to_first_token", "step_time", "mfu", "prefill_time"):
        assert UNDER_LAYOUT[name] == f"{name}_layout"
    assert UNDER_LAYOUT["step_time_min"] == "step_time_layout_min"
    assert "chips" not in UNDER_LAYOUT   # an input: eval's chips stay the set-up's, not the layout's
