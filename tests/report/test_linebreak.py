"""Display formulas set over lines (chalkboard/typeset/linebreak.py): the same mathematics, lines that fit,
and the MathML and Typst of every long formula of the project well formed."""
import functools
import re
import xml.etree.ElementTree as ET

import pytest
import sympy as sp
from sympy.parsing.sympy_parser import parse_expr

from chalkboard.typeset import linebreak, printers
from derivations import REGISTRY as R


@functools.lru_cache(maxsize=1)
def long_expressions():
    """Every definition, closed form and board form wider than 30 em (computed when a test first
    asks, not when the tests are collected: every worker collects)."""
    out = []
    for q in R.derived_quantities():
        for tag, e in (("def", q.expr), ("closed", R.closed_form(q.name)),
                       ("board", R.with_constants(R.closed_form(q.name)))):
            node = printers.expr_tree(e)
            if printers.width_em(node) > 30:
                out.append((f"{q.name}:{tag}", e, node))
    return out


WIDTH = 30.0   # narrower than the report's, so that more formulas break, and deeper


def _line_text(items) -> str:
    """A laid-out line in the text printer's notation, to be read back by SymPy."""
    out = []
    for it in items:
        if it[0] == "node":
            _, n, ctx, wrapped = it
            out.append(f"({printers.tree_text(n)})" if wrapped else printers.tree_text(n, ctx))
        elif it[0] == "op":
            out.append({"·": "*", "−": "-", ",": ","}.get(it[1], it[1]))
        elif it[0] == "open":   # a function's name and its bracket: (, or ⌊ and ⌈ around a floor and a ceiling
            out.append({"max": "Max", "min": "Min", "ln": "log"}.get(it[1], it[1]) + it[2])
        else:
            out.append(it[1])
    return " ".join(out)


NAMES = sorted({printers.text_symbol(q) for q in R.quantities.values()}, key=len, reverse=True)
BY_NAME = {name: sp.Symbol(f"Q{i}", positive=True) for i, name in enumerate(NAMES)}


def _named(expr):
    """``expr`` with each symbol replaced by one named for its printed name (two quantities may
    print alike: the comparison is of what a reader sees)."""
    return expr.xreplace({q.sym: BY_NAME[printers.text_symbol(q)] for q in R.quantities.values()})


def _parse(text: str):
    """The text printer's notation read back: each symbol's printed name replaced by its Q name
    (longest first: t_exp,layout before t_exp)."""
    for name in NAMES:
        if name in text:
            text = re.sub(r"(?<!\w)" + re.escape(name) + r"(?!\w)", f" {BY_NAME[name]} ", text)
    text = (text.replace("·", "*").replace("−", "-").replace("^", "**").replace("√", "sqrt")
            .replace("⌊", "floor(").replace("⌋", ")").replace("⌈", "ceiling(").replace("⌉", ")")
            .replace("max(", "Max(").replace("min(", "Min(").replace("ln(", "log("))
    return parse_expr(text, local_dict={**{str(v): v for v in BY_NAME.values()}, "Max": sp.Max, "Min": sp.Min})


def _same(a, b) -> bool:
    """The same expression: SymPy's canonical forms equal, or their difference expands to 0."""
    return a == b or sp.expand(a - b) == 0


def test_there_are_long_formulas_to_break():
    LONG = long_expressions()
    assert len(LONG) > 30
    # the default run's sample holds each kind of form: a definition, a closed form, one with the constants
    assert {n.rsplit(":", 1)[1] for n, _, _ in LONG[::SAMPLE]} == {"def", "closed", "board"}


def test_a_formula_that_fits_is_one_line_as_before():
    q = R["compute_time_weights"]
    text, ml, ty = linebreak.formula(q.expr, lhs=q)
    assert linebreak.lines(printers.expr_tree(q.expr), ("sym", q.base, q.sub)) is None
    assert ty == printers.typst(q.expr, lhs=q) and ml == printers.mathml(q.expr, lhs=q)
    assert text == f"{printers.text_symbol(q)} = {printers.text(q.expr)}"


def test_a_maximum_breaks_between_its_arguments_and_a_sum_before_its_plus():
    """max(a + b, c) wider than the line: the second argument on a line of its own, indented one
    level; a sum too wide breaks before a +, its continuation indented under the argument."""
    B, N, S, F, W = (R[n].sym for n in ("batch", "params_active", "chips", "peak_flops", "hbm_bandwidth"))
    e = sp.Max(B * N / (S * F) + N / (S * W), N / W)
    laid = linebreak.lines(printers.expr_tree(e), width=12)
    shape = [(indent, [it[0] if it[0] != "op" else it[1] for it in items]) for indent, items in laid]
    assert shape == [(0, ["open", "node"]), (1, ["+", "node", ","]), (1, ["node", "close"])]
    typst = linebreak.typst_lines(laid)
    assert typst.startswith("& max\\(") and typst.count(" \\ ") == 2 and '& quad "" + ' in typst


# Each long formula's lines read back by SymPy (parse_expr, then expand where the forms differ):
# about 0.2 s a formula. The default run checks every fifth (all three kinds of form among them);
# CI's slow run checks the rest, so that every formula is checked.
SAMPLE = 5


def _breaking_faults(name, expr, node) -> list[str]:
    """What is wrong with one long formula set over lines: not the same mathematics read back, its
    brackets unbalanced, or a line over the width that a piece which cannot break does not explain."""
    laid = linebreak.lines(node, width=WIDTH)
    if laid is None:
        return [f"{name}: not laid out"]
    flat = " ".join(_line_text(items) for _, items in laid)
    faults = [] if _same(_parse(flat), _named(expr)) else [f"{name}: reads back otherwise: {flat}"]
    opens = sum(it[0] == "open" for _, items in laid for it in items)
    if opens != sum(it[0] == "close" for _, items in laid for it in items):
        faults.append(f"{name}: unbalanced brackets")
    for indent, items in laid:
        width = indent * linebreak.INDENT_EM + sum(linebreak._item_em(it) for it in items)
        # over the line only where one piece cannot break (a power, a root, a narrow fraction)
        if width > WIDTH and not any(it[0] == "node" and printers.width_em(it[1]) > WIDTH / 3 for it in items):
            faults.append(f"{name}: a line of {width:.1f} em at indent {indent}")
    return faults


def test_breaking_keeps_the_mathematics_and_fits_the_lines():
    faults = [f for n, e, node in long_expressions()[::SAMPLE] for f in _breaking_faults(n, e, node)]
    assert not faults, faults[:10]


@pytest.mark.slow
def test_breaking_keeps_the_mathematics_and_fits_the_lines_in_every_long_formula():
    faults = [f for i, (n, e, node) in enumerate(long_expressions()) if i % SAMPLE
              for f in _breaking_faults(n, e, node)]
    assert not faults, faults[:10]


def test_every_long_formula_is_well_formed_mathml_and_compiles_in_typst(tmp_path):
    import typst

    lines = ["#set page(width: 20cm, height: auto)", "#show math.equation: set block(breakable: true)"]
    for name, expr, node in long_expressions():
        laid = linebreak.lines(node, width=WIDTH)
        root = ET.fromstring(linebreak.mathml_lines(laid))
        assert root.tag == "math" and len(root[0]) == len(laid), name
        lines.append(f"$ {linebreak.typst_lines(laid)} $")
    src = tmp_path / "long.typ"
    src.write_text("\n".join(lines), encoding="utf-8")
    assert typst.compile(str(src))[:5] == b"%PDF-"


def test_a_formula_wider_than_a_phone_has_a_second_narrower_layout():
    """The page carries a second layout of each formula wider than a phone's column (NARROW_EM),
    shown there instead of the first: the same mathematics, in lines of at most NARROW_EM where it
    can break. The PDF's Typst is the first layout alone."""
    from chalkboard.typeset import NARROW_EM, WIDTH_EM

    def layouts(q):
        node, lhs = printers.expr_tree(q.expr), ("sym", q.base, q.sub)
        return linebreak.lines(node, lhs, WIDTH_EM), linebreak.lines(node, lhs, NARROW_EM)
    # the first definition that is one line on a desktop and in print but several on a phone
    q = next(q for q in R.quantities.values() if not q.is_input and layouts(q)[0] is None
             and len(layouts(q)[1] or []) >= 3)
    expr, narrow = q.expr, layouts(q)[1]
    _, ml, ty = linebreak.formula(expr, lhs=q)
    wide, phone = ml.split("</math>")[:2]
    assert 'class="wide"' in wide and 'class="lines narrow"' in phone
    assert len(ET.fromstring(phone + "</math>")[0]) == len(narrow)
    assert ty == printers.typst(expr, lhs=q)
    flat = " ".join(_line_text(items) for _, items in narrow)
    assert narrow[0][1][1] == ("op", "=")
    flat = flat.split(" = ", 1)[1]   # the right side
    for indent, items in narrow:
        width = indent * linebreak.INDENT_EM + sum(linebreak._item_em(it) for it in items)
        assert width <= NARROW_EM or any(it[0] == "node" and printers.width_em(it[1]) > NARROW_EM / 3 for it in items)
    assert _same(_parse(flat), _named(expr)), (q.name, flat)
    # asked for one layout (a notebook has no style sheet to choose): the first alone, unmarked
    alone = linebreak.formula(expr, lhs=q, phone=False)[1]
    assert alone.count("<math") == 1 and "wide" not in alone and "narrow" not in alone
    # one that fits a phone has no second layout
    small = R["compute_time_weights"]
    assert 'class="wide"' not in linebreak.formula(small.expr, lhs=small)[1]


def test_a_floor_breaks_inside_its_brackets():
    q = R["train_chips_to_fit"]
    expr = R.closed_form(q.name)
    laid = linebreak.lines(printers.expr_tree(expr), width=20)
    brackets = [it[1] if it[0] == "close" else it[2] for _, items in laid for it in items if it[0] in ("open", "close")]
    assert "⌈" in brackets and "⌉" in brackets
    assert _same(_parse(" ".join(_line_text(items) for _, items in laid)), _named(expr))


def test_a_substitution_shows_no_factor_of_one_and_no_zero_term():
    """'1 · (2 ms) + 0 ns' reads '2 ms': a bare 1 multiplies by nothing, a zero adds nothing."""
    from units import parse

    S, F, N, B = (R[n].sym for n in ("chips", "peak_flops", "params_active", "batch"))
    values = {S: parse("1"), F: parse("2 ms"), N: parse("0 ns"), B: parse("3")}
    assert printers.tree_text(printers.expr_tree(S * F + N, values)) == "2 ms"
    assert printers.tree_text(printers.expr_tree(S * B * F + N + F, values)) == "3·(2 ms) + 2 ms"
    assert printers.tree_text(printers.expr_tree(F / S, values)) == "2 ms"
    # a symbol shown as itself, and a 1 with a unit (it carries the unit), stay
    assert printers.tree_text(printers.expr_tree(S * F, {F: parse("2 ms")})) == "S·(2 ms)"
    assert printers.tree_text(printers.expr_tree(S * F, {S: parse("1 chip"), F: parse("2 ms")})) == "(1 chip)·(2 ms)"
