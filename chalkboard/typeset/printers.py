"""Typeset SymPy expressions with the declared symbol names: plain Unicode, MathML, Typst.

All three printers share one walk (``expr_tree``) that turns an expression into a small tree of
fractions, products, sums, powers, roots and max/min, so what is shown in the terminal, the
HTML page and the PDF is the same expression SymPy computed.
"""
from __future__ import annotations

import re
from html import escape

import sympy as sp
from sympy.core.function import AppliedUndef

from derivations import REGISTRY


# -- the shared tree ----------------------------------------------------------------------
def _name(sym):
    q = REGISTRY.by_symbol.get(sym)
    if q is None:
        return (str(sym), None)
    return (q.base, q.sub)


def _num(x) -> str:
    if isinstance(x, sp.Rational) and not isinstance(x, sp.Integer):
        return f"{x.p}/{x.q}"
    if isinstance(x, sp.Float):
        return f"{float(x):g}"
    return str(x)


_NODES: dict = {}   # expression -> its tree (without values): each expression is walked once


def expr_tree(e, values=None):
    """('sym', base, sub) | ('num', text) | ('frac', n, d) | ('mul', [..]) | ('add', [(sign, t)..])
    | ('pow', base, exp) | ('sqrt', x) | ('func', name, [..]) | ('neg', x)"""
    if values is None:
        tree = _NODES.get(e)
        if tree is None:
            tree = _NODES[e] = _build(e, None)
        return tree
    return _build(e, values)


def _build(e, values):
    if isinstance(e, sp.Symbol):
        if values is not None and e in values:
            from .fmt import counted, operand, split
            mag, unit = split(values[e])
            return ("val", operand(mag), counted(operand(mag), unit))
        return ("sym",) + _name(e)
    if e.is_Number:
        if e.is_Rational and not e.is_Integer:
            return ("frac", ("num", str(abs(e.p))), ("num", str(e.q))) if e > 0 else \
                ("neg", ("frac", ("num", str(abs(e.p))), ("num", str(e.q))))
        if e < 0:
            return ("neg", ("num", _num(-e)))
        return ("num", _num(e))
    if isinstance(e, (sp.Max, sp.Min)):
        return ("func", "max" if isinstance(e, sp.Max) else "min", [expr_tree(a, values) for a in _ordered(e.args)])
    if isinstance(e, sp.log):
        return ("func", "ln", [expr_tree(e.args[0], values)])
    if isinstance(e, sp.floor):
        return ("floor", expr_tree(e.args[0], values))
    if isinstance(e, sp.ceiling):
        return ("ceil", expr_tree(e.args[0], values))
    if isinstance(e, sp.Add):
        terms = []
        for t in _ordered(e.args):
            c, rest = t.as_coeff_Mul()
            if c < 0:
                terms.append(("-", expr_tree(-t, values)))
            else:
                terms.append(("+", expr_tree(t, values)))
        terms.sort(key=lambda st: st[0] == "-")  # positive terms first
        if values is not None:   # a substituted term that is zero ("+ 0 ns") adds nothing to read
            terms = [t for t in terms if not _is_val(t[1], "0")] or terms[:1]
            if len(terms) == 1 and terms[0][0] == "+":
                return terms[0][1]
        return ("add", terms)
    if isinstance(e, sp.Mul):
        c, rest = e.as_coeff_Mul()
        if c < 0:
            n, d = _fraction(e)
            if isinstance(d, sp.Add):  # −a/(b − c) reads better as a/(c − b)
                return ("frac", expr_tree(-n, values), expr_tree(sp.expand(-d), values))
            return ("neg", expr_tree(-e, values))
        n, d = _fraction(e)
        if d != 1:
            den = expr_tree(d, values)
            if values is not None and _is_val(den, "1", ""):   # over a substituted bare 1: the numerator
                return expr_tree(n, values)
            return ("frac", expr_tree(n, values), den)
        factors = list(e.args)
        nums = [f for f in factors if f.is_Number]
        others = [f for f in _ordered([f for f in factors if not f.is_Number])]
        nodes = [expr_tree(f, values) for f in nums + others]
        if values is not None:   # a substituted factor of a bare 1 ("1 · …") multiplies by nothing
            nodes = [f for f in nodes if not _is_val(f, "1", "")] or nodes[:1]
            if len(nodes) == 1:
                return nodes[0]
        return ("mul", nodes)
    if isinstance(e, sp.Pow):
        b, x = e.args
        if x == sp.Rational(1, 2):
            return ("sqrt", expr_tree(b, values))
        if x.is_Number and x < 0:
            return ("frac", ("num", "1"), expr_tree(b ** -x, values))
        return ("pow", expr_tree(b, values), expr_tree(x, values))
    if isinstance(e, AppliedUndef):   # an arbitrary map: f(x), or f₁(x) for a function named f1
        m = re.fullmatch(r"([A-Za-z]+)(\d*)", str(e.func))
        base, sub = (m.group(1), m.group(2) or None) if m else (str(e.func), None)
        return ("ufunc", base, sub, [expr_tree(a, values) for a in e.args])
    raise TypeError(f"cannot typeset {type(e).__name__}: {e}")


def _is_val(n, text: str, unit=None) -> bool:
    """Whether ``n`` is a substituted value shown as ``text`` (with the unit ``unit``, any if None)."""
    return n[0] == "val" and n[1] == text and (unit is None or not n[2])


def _fraction(e):
    """Numerator and denominator of a product, as ``sp.fraction(e, exact=True)`` splits them
    for what the printers meet (rational coefficients, powers with a negative number as
    exponent), without SymPy's constancy test of symbolic exponents (a simplify each)."""
    num, den = [], []
    for f in sp.Mul.make_args(e):
        if f.is_Rational:
            if f.p != 1:
                num.append(sp.Integer(f.p))
            if f.q != 1:
                den.append(sp.Integer(f.q))
        elif isinstance(f, sp.Pow) and f.exp.is_Number and f.exp.is_negative:
            den.append(sp.Pow(f.base, -f.exp))
        else:
            num.append(f)
    return sp.Mul(*num), sp.Mul(*den)


_RANK = {"constant": 0, "workload": 1, "model": 2, "hardware": 3, "price": 4, "tier": 5, "derived": 6}
_ORDER: dict = {}


def _order() -> dict:
    if len(_ORDER) != len(REGISTRY.quantities):  # rebuilt only when quantities were declared
        _ORDER.clear()
        _KEYS.clear()
        _NODES.clear()
        _ORDER.update({q.sym: _RANK[q.origin] * 1000 + i for i, q in enumerate(REGISTRY.quantities.values())})
    return _ORDER


def _ordered(args):
    """Symbols in declaration order (so B comes before N, hardware after model), then the rest."""
    order = _order()

    def key(a):
        k = _KEYS.get(a)
        if k is None:
            syms = [order.get(s, 100_000) for s in a.free_symbols]
            k = _KEYS[a] = (0 if a.is_Number else 1, min(syms) if syms else -1, _Text(a))
        return k
    return sorted(args, key=key)


class _Text:
    """An expression's text as the last sort key, printed only when the keys before it tie."""
    __slots__ = ("e", "s")

    def __init__(self, e):
        self.e, self.s = e, None

    def text(self) -> str:
        if self.s is None:
            self.s = str(self.e)
        return self.s

    def __eq__(self, other):
        return self.text() == other.text()

    def __lt__(self, other):
        return self.text() < other.text()


_KEYS: dict = {}


def needs_parens(n, ctx):
    kind = n[0]
    if ctx == "mul":
        return kind in ("add", "neg")
    if ctx == "pow":
        return kind in ("add", "mul", "frac", "neg")
    return False


# -- plain Unicode --------------------------------------------------------------------------
_SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def tree_text(n, ctx=None) -> str:
    k = n[0]
    if k == "val":
        if not n[2]:
            return n[1]
        return f"({n[1]} {n[2]})" if ctx in ("mul", "pow") else f"{n[1]} {n[2]}"
    if k == "sym":
        return n[1] + (f"_{n[2]}" if n[2] else "")
    if k == "num":
        return n[1]
    if k == "neg":
        return "−" + tree_text(n[1], "mul")
    if k == "frac":
        num, den = tree_text(n[1], "mul"), tree_text(n[2], "mul")
        if n[2][0] == "mul":
            den = f"({den})"
        s = f"{num}/{den}"
        return f"({s})" if ctx in ("mul", "pow") else s
    if k == "mul":
        parts = [(f"({tree_text(f)})" if needs_parens(f, "mul") else tree_text(f, "mul")) for f in n[1]]
        return "·".join(parts)
    if k == "add":
        out = ""
        for i, (sign, t) in enumerate(n[1]):
            s = tree_text(t)
            out += (s if sign == "+" else "−" + s) if i == 0 else f" {'+' if sign == '+' else '−'} {s}"
        return f"({out})" if ctx in ("mul", "pow") else out
    if k == "pow":
        b = tree_text(n[1])
        b = f"({b})" if needs_parens(n[1], "pow") else b
        x = tree_text(n[2], "pow")
        return f"{b}^({x})" if n[2][0] in ("mul", "neg", "pow") else f"{b}^{x}"   # x^(B·n), not x^B·n
    if k == "sqrt":
        return f"√({tree_text(n[1])})"
    if k == "func":
        return f"{n[1]}(" + ", ".join(tree_text(a) for a in n[2]) + ")"
    if k == "ufunc":
        sub = (n[2] or "").translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))
        return f"{n[1]}{sub}(" + ", ".join(tree_text(a) for a in n[3]) + ")"
    if k == "floor":
        return f"⌊{tree_text(n[1])}⌋"
    if k == "ceil":
        return f"⌈{tree_text(n[1])}⌉"
    raise TypeError(k)


def text(expr) -> str:
    return tree_text(expr_tree(sp.sympify(expr, strict=True)))


# -- MathML (Presentation, rendered natively by browsers) ------------------------------------
OP = {"−": "&#x2212;", "+": "+", "·": "&#x22C5;"}


def _mi(s: str) -> str:
    s = escape(s)
    return f"<mi>{s}</mi>" if len(s) == 1 else f'<mi mathvariant="normal">{s}</mi>' if s.isalpha() and s.isascii() else f"<mi>{s}</mi>"


def tree_mathml(n, ctx=None) -> str:
    k = n[0]
    if k == "val":
        if not n[2]:
            return f"<mn>{escape(n[1])}</mn>"
        inner = f'<mn>{escape(n[1])}</mn><mspace width="0.2em"/><mtext>{escape(n[2])}</mtext>'
        # a number and its unit, one line high: brackets that never stretch to their neighbours
        return (f'<mrow><mo stretchy="false">(</mo>{inner}<mo stretchy="false">)</mo></mrow>'
                if ctx in ("mul", "pow") else f"<mrow>{inner}</mrow>")
    if k == "sym":
        base = _mi(n[1])
        if n[2]:
            return f"<msub>{base}<mtext>{escape(n[2])}</mtext></msub>"
        return base
    if k == "num":
        return f"<mn>{escape(n[1])}</mn>"
    if k == "neg":
        return f"<mrow><mo>&#x2212;</mo>{tree_mathml(n[1], 'mul')}</mrow>"
    if k == "frac":
        return f"<mfrac><mrow>{tree_mathml(n[1])}</mrow><mrow>{tree_mathml(n[2])}</mrow></mfrac>"
    if k == "mul":
        parts = []
        for f in n[1]:   # a sum or a negation is bracketed here, once (as the text and Typst printers do)
            parts.append(f"<mrow><mo>(</mo>{tree_mathml(f)}<mo>)</mo></mrow>" if needs_parens(f, "mul") else tree_mathml(f, "mul"))
        return "<mrow>" + "<mo>&#x22C5;</mo>".join(parts) + "</mrow>"
    if k == "add":
        out = []
        for i, (sign, t) in enumerate(n[1]):
            if i or sign == "-":
                out.append(f"<mo>{OP['−' if sign == '-' else '+']}</mo>")
            out.append(tree_mathml(t))
        inner = "".join(out)
        return f"<mrow><mo>(</mo>{inner}<mo>)</mo></mrow>" if ctx in ("mul", "pow") else f"<mrow>{inner}</mrow>"
    if k == "pow":
        b = tree_mathml(n[1])
        b = f"<mrow><mo>(</mo>{b}<mo>)</mo></mrow>" if needs_parens(n[1], "pow") else b
        return f"<msup>{b}<mrow>{tree_mathml(n[2])}</mrow></msup>"
    if k == "sqrt":
        return f"<msqrt>{tree_mathml(n[1])}</msqrt>"
    if k == "func":
        args = "<mo>,</mo>".join(tree_mathml(a) for a in n[2])
        return f"<mrow><mi>{n[1]}</mi><mo>(</mo>{args}<mo>)</mo></mrow>"
    if k == "ufunc":
        args = "<mo>,</mo>".join(tree_mathml(a) for a in n[3])
        name = f"<msub><mi>{escape(n[1])}</mi><mn>{n[2]}</mn></msub>" if n[2] else f"<mi>{escape(n[1])}</mi>"
        return f"<mrow>{name}<mo>(</mo>{args}<mo>)</mo></mrow>"
    if k == "floor":
        return f"<mrow><mo>&#x230A;</mo>{tree_mathml(n[1])}<mo>&#x230B;</mo></mrow>"
    if k == "ceil":
        return f"<mrow><mo>&#x2308;</mo>{tree_mathml(n[1])}<mo>&#x2309;</mo></mrow>"
    raise TypeError(k)


def mathml_symbol(q) -> str:
    return tree_mathml(("sym", q.base, q.sub))


def mathml(expr, lhs=None, display: bool = True) -> str:
    body = tree_mathml(expr_tree(sp.sympify(expr, strict=True)))
    if lhs is not None:
        body = f"{mathml_symbol(lhs)}<mo>=</mo>{body}"
    mode = ' display="block"' if display else ""
    return f'<math{mode}><mrow>{body}</mrow></math>'


# -- Typst math --------------------------------------------------------------------------------
def typst_str(s: str) -> str:
    """A Typst string literal: every character shown as itself, nothing interpreted."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def typst_ident(s: str) -> str:
    if len(s) == 1 and s.isalpha():
        return s
    return typst_str(s)  # multi-letter names in quotes are upright text in math mode


def tree_typst(n, ctx=None) -> str:
    k = n[0]
    if k == "val":
        if not n[2]:
            return typst_str(n[1])
        body = f"{typst_str(n[1])} thin {typst_str(n[2])}"
        return f"({body})" if ctx in ("mul", "pow") else body
    if k == "sym":
        base = typst_ident(n[1])
        return f"{base}_{typst_str(n[2])}" if n[2] else base
    if k == "num":
        return n[1]
    if k == "neg":
        return f"-{tree_typst(n[1], 'mul')}"
    if k == "frac":
        return f"frac({tree_typst(n[1])}, {tree_typst(n[2])})"
    if k == "mul":
        parts = [(f"({tree_typst(f)})" if needs_parens(f, "mul") else tree_typst(f, "mul")) for f in n[1]]
        return " dot ".join(parts)
    if k == "add":
        out = ""
        for i, (sign, t) in enumerate(n[1]):
            s = tree_typst(t)
            out += (s if sign == "+" else "-" + s) if i == 0 else f" {'+' if sign == '+' else '-'} {s}"
        return f"({out})" if ctx in ("mul", "pow") else out
    if k == "pow":
        b = tree_typst(n[1])
        b = f"({b})" if needs_parens(n[1], "pow") else b
        return f"{b}^({tree_typst(n[2])})"
    if k == "sqrt":
        return f"sqrt({tree_typst(n[1])})"
    if k == "func":
        return f"{n[1]}(" + ", ".join(tree_typst(a) for a in n[2]) + ")"
    if k == "ufunc":
        name = f"{n[1]}_{n[2]}" if n[2] else n[1]
        return f"{name}(" + ", ".join(tree_typst(a) for a in n[3]) + ")"
    if k == "floor":
        return f"floor({tree_typst(n[1])})"
    if k == "ceil":
        return f"ceil({tree_typst(n[1])})"
    raise TypeError(k)


class TypstMath(str):
    """Typst math source, with ``em``: an upper estimate of its set width in em (see width_em)."""
    em: float


def typst_math(src: str, em: float) -> TypstMath:
    out = TypstMath(src)
    out.em = em
    return out


# Widths in em of the text size, for deciding which display formulas might not fit the line
# (only those are measured by Typst, which costs layout time): every glyph counted at full size
# (subscripts and nested fractions are set smaller), with the spacing Typst puts around
# operators. tests/report/test_report_defects.py measures every formula this calls narrow.
_GLYPH, _SUB_GLYPH, OP_GAP, DOT_GAP, PAREN = 0.62, 0.45, 1.25, 0.6, 0.45


def glyphs_width(s: str, size: float = _GLYPH) -> float:
    """Capitals (M, W, C in italics) are the widest glyphs."""
    return sum(size * (1.4 if c.isupper() else 1.0) for c in s)


EM_MEMO: dict | None = None   # while a formula is laid out over lines (linebreak.formula): widths kept


def width_em(n, ctx=None) -> float:
    memo = EM_MEMO
    if memo is None:
        return _em_of(n, ctx)
    key = (id(n), ctx)
    hit = memo.get(key)
    if hit is None or hit[0] is not n:   # the node is kept with its width: its id is not reused
        hit = memo[key] = (n, _em_of(n, ctx))
    return hit[1]


def _em_of(n, ctx=None) -> float:
    k = n[0]
    if k == "val":
        w = glyphs_width(n[1]) + glyphs_width(n[2] or "") + (0.25 if n[2] else 0)
        return w + (2 * PAREN if n[2] and ctx in ("mul", "pow") else 0)
    if k == "sym":
        return glyphs_width(n[1]) + glyphs_width(n[2] or "", _SUB_GLYPH)
    if k == "num":
        return glyphs_width(n[1])
    if k == "neg":
        return _GLYPH + width_em(n[1], "mul")
    if k == "frac":
        return max(width_em(n[1]), width_em(n[2])) + 0.4
    if k == "mul":
        return sum(width_em(f) + 2 * PAREN if needs_parens(f, "mul") else width_em(f, "mul") for f in n[1]) \
            + DOT_GAP * (len(n[1]) - 1)
    if k == "add":
        w = sum(width_em(t) for _, t in n[1]) + OP_GAP * (len(n[1]) - 1) + (_GLYPH if n[1][0][0] == "-" else 0)
        return w + (2 * PAREN if ctx in ("mul", "pow") else 0)
    if k == "pow":
        return width_em(n[1]) + (2 * PAREN if needs_parens(n[1], "pow") else 0) + width_em(n[2])
    if k == "sqrt":
        return width_em(n[1]) + 1.0
    if k == "func":
        return len(n[1]) * _GLYPH + 2 * PAREN + sum(width_em(a) for a in n[2]) + DOT_GAP * (len(n[2]) - 1)
    if k == "ufunc":
        return (glyphs_width(n[1]) + glyphs_width(n[2] or "", _SUB_GLYPH) + 2 * PAREN
                + sum(width_em(a) for a in n[3]) + DOT_GAP * (len(n[3]) - 1))
    if k in ("floor", "ceil"):
        return width_em(n[1]) + 2 * PAREN
    raise TypeError(k)


def typst_of(n) -> TypstMath:
    return typst_math(tree_typst(n), width_em(n))


def typst_eq(lhs: TypstMath, rhs: TypstMath) -> TypstMath:
    return typst_math(f"{lhs} = {rhs}", lhs.em + OP_GAP + rhs.em)


def typst_symbol(q) -> TypstMath:
    return typst_of(("sym", q.base, q.sub))


def typst(expr, lhs=None) -> TypstMath:
    body = typst_of(expr_tree(sp.sympify(expr, strict=True)))
    return typst_eq(typst_symbol(lhs), body) if lhs is not None else body


def text_symbol(q) -> str:
    return tree_text(("sym", q.base, q.sub))


def with_values(expr, values: dict) -> tuple[str, str, str]:
    """``expr`` with each symbol in ``values`` shown as its number and unit: text, MathML, Typst."""
    node = expr_tree(sp.sympify(expr, strict=True), values)
    return tree_text(node), f'<math display="block"><mrow>{tree_mathml(node)}</mrow></math>', typst_of(node)

