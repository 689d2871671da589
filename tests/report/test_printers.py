"""The Typst and MathML printers, run on every expression in the project."""
import functools
import xml.etree.ElementTree as ET

import sympy as sp

from chalkboard.typeset import printers
from derivations import REGISTRY as R


@functools.lru_cache(maxsize=1)
def all_expressions():
    """Every expression of the project (made when a test first asks, not when the tests are collected)."""
    out = []
    for q in R.derived_quantities():
        out.append((q.name, q.expr))
        out.append((q.name + ":closed", R.closed_form(q.name)))
        out.append((q.name + ":board", R.with_constants(R.closed_form(q.name))))
    for eq in R.equations.values():
        out.append((eq.name + ":lhs", eq.lhs))
        out.append((eq.name + ":rhs", eq.rhs))
    return out




def test_there_are_many_expressions():
    assert len(all_expressions()) > 100


def _mathml_faults(name, expr) -> list[str]:
    """What is wrong with one expression's MathML: not well formed, or a symbol it does not name."""
    ml = printers.mathml(expr)
    try:
        root = ET.fromstring(ml)
    except ET.ParseError as e:
        return [f"{name}: not well formed ({e})"]
    if root.tag != "math":
        return [f"{name}: root is <{root.tag}>"]
    text = "".join(root.itertext())
    faults = []
    for s in expr.free_symbols:
        q = R.by_symbol.get(s)
        if q is None:  # only a symbol local to an equation (a reversible map's halves x, y)
            if not any(s in eq.free for eq in R.equations.values()) or str(s) not in text:
                faults.append(f"{name}: {s} unknown or not shown")
            continue
        if q.base not in text or (q.sub and f"{q.sub}" not in text):  # a subscript is <msub>base sub</msub>
            faults.append(f"{name}: {q.name} not shown")
    return faults


def test_mathml_is_well_formed_and_names_every_symbol():
    # every expression in one test: a thousand the same check, reported together
    faults = [f for name, expr in all_expressions() for f in _mathml_faults(name, expr)]
    assert not faults, f"{len(faults)} faults, first: {faults[:10]}"


def test_typst_compiles_every_expression(tmp_path):
    import typst
    lines = ["#set page(width: 40cm, height: auto)"]
    for name, expr in all_expressions():
        lines.append(f"$ {printers.typst(expr)} $")
    src = tmp_path / "all.typ"
    src.write_text("\n".join(lines), encoding="utf-8")
    pdf = typst.compile(str(src))
    assert pdf[:5] == b"%PDF-"


def test_text_printer_shapes():
    B, N, S, F = (R[n].sym for n in ("batch", "params_active", "chips", "peak_flops"))
    assert printers.text(2 * B * N / (S * F)) == "2·B·N_active/(S·F)"
    assert printers.text(sp.Max(B, N)) in ("max(B, N_active)",)
    assert printers.text(sp.sqrt(B)) == "√(B)"
    assert printers.text(1 - 1 / S) == "1 − 1/S"
    assert printers.text((1 - B / S) ** (B * N)) == "(1 − B/S)^(B·N_active)"   # not (…)^B·N_active


def test_typst_strings_cannot_inject():
    s = printers.typst_str('a"b\\c #x $y$')
    assert s == '"a\\"b\\\\c #x $y$"'


def _brackets(s: str) -> str:
    return "".join(c for c in s if c in "()")


def _doubled(s: str) -> bool:
    """Whether a bracket pair directly encloses another pair and nothing else: ((x))."""
    s = "".join(c if c in "()" else "x" for c in s)
    stack, match = [], {}
    for i, c in enumerate(s):
        if c == "(":
            stack.append(i)
        elif c == ")" and stack:
            match[stack.pop()] = i
    return any(s[i + 1:i + 2] == "(" and match.get(i + 1) == j - 1 for i, j in match.items())


def test_no_printer_doubles_a_bracket():
    """The three printers bracket the same groups, each once: the MathML once read
    ((c_F·δ·N_active + L·a_attn))·B. Compared on every expression (fractions apart: MathML and
    Typst stack them, the text printer writes a/b, bracketed where a product needs it)."""
    import re

    doubled, differ = [], []
    for name, e in all_expressions():
        ml = printers.mathml(e)
        flat = re.sub(r"<[^>]+>", "", ml.replace("<mo>(</mo>", "(").replace("<mo>)</mo>", ")"))
        for printed in (flat, printers.text(e), printers.typst(e)):
            if _doubled(printed):
                doubled.append(name)
        if not e.has(sp.Pow) or all(a.exp.is_negative is not True for a in e.atoms(sp.Pow)):   # no fraction
            if _brackets(flat) != _brackets(printers.text(e)) and not {"/", "√"} & set(printers.text(e)):
                differ.append(name)
    assert doubled == [] and differ == [], (doubled[:5], differ[:5])


def test_a_substituted_number_shown_whole_is_whole():
    """Issue found in the report: 4 · (5,667 sequences) = 22,669 sequences, because 5,667 was
    5,667.25 rounded. A value from 1,000 up that is not whole keeps a decimal in a formula."""
    from chalkboard.typeset.fmt import operand, sig

    assert operand(5667.25) in ("5,667.2", "5,667.3") and operand(5667.0) == "5,667" and operand(70.27) == "70.3"
    assert sig(4 * float(operand(5667.25).replace(",", ""))) == sig(4 * 5667.25) == "22,669"
    B = R["batch"].sym
    text = printers.with_values(4 * B, {B: __import__("units").parse("5667.25 sequence")})[0]
    assert "5,667." in text and "5,667 " not in text
