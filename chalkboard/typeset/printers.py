"""Typeset SymPy expressions with the declared symbol names: plain Unicode, MathML, Typst.

All three printers share one walk (``_node``) that turns an expression into a small tree of
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


def _node(e, values=None):
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
        return ("func", "max" if isinstance(e, sp.Max) else "min", [_node(a, values) for a in _ordered(e.args)])
    if isinstance(e, sp.log):
        return ("func", "ln", [_node(e.args[0], values)])
    if isinstance(e, sp.floor):
        return ("floor", _node(e.args[0], values))
    if isinstance(e, sp.ceiling):
        return ("ceil", _node(e.args[0], values))
    if isinstance(e, sp.Add):
        terms = []
        for t in _ordered(e.args):
            c, rest = t.as_coeff_Mul()
            if c < 0:
                terms.append(("-", _node(-t, values)))
            else:
                terms.append(("+", _node(t, values)))
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
                return ("frac", _node(-n, values), _node(sp.expand(-d), values))
            return ("neg", _node(-e, values))
        n, d = _fraction(e)
        if d != 1:
            den = _node(d, values)
            if values is not None and _is_val(den, "1", ""):   # over a substituted bare 1: the numerator
                return _node(n, values)
            return ("frac", _node(n, values), den)
        factors = list(e.args)
        nums = [f for f in factors if f.is_Number]
        others = [f for f in _ordered([f for f in factors if not f.is_Number])]
        nodes = [_node(f, values) for f in nums + others]
        if values is not None:   # a substituted factor of a bare 1 ("1 · …") multiplies by nothing
            nodes = [f for f in nodes if not _is_val(f, "1", "")] or nodes[:1]
            if len(nodes) == 1:
                return nodes[0]
        return ("mul", nodes)
    if isinstance(e, sp.Pow):
        b, x = e.args
        if x == sp.Rational(1, 2):
            return ("sqrt", _node(b, values))
        if x.is_Number and x < 0:
            return ("frac", ("num", "1"), _node(b ** -x, values))
        return ("pow", _node(b, values), _node(x, values))
    if isinstance(e, AppliedUndef):   # an arbitrary map: f(x), or f₁(x) for a function named f1
        m = re.fullmatch(r"([A-Za-z]+)(\d*)", str(e.func))
        base, sub = (m.group(1), m.group(2) or None) if m else (str(e.func), None)
        return ("ufunc", base, sub, [_node(a, values) for a in e.args])
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


def _needs_parens(n, ctx):
    kind = n[0]
    if ctx == "mul":
        return kind in ("add", "neg")
    if ctx == "pow":
        return kind in ("add", "mul", "frac", "neg")
    return False


# -- plain Unicode --------------------------------------------------------------------------
_SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def _text(n, ctx=None) -> str:
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
        return "−" + _text(n[1], "mul")
    if k == "frac":
        num, den = _text(n[1], "mul"), _text(n[2], "mul")
        if n[2][0] == "mul":
            den = f"({den})"
        s = f"{num}/{den}"
        return f"({s})" if ctx in ("mul", "pow") else s
    if k == "mul":
        parts = [(f"({_text(f)})" if _needs_parens(f, "mul") else _text(f, "mul")) for f in n[1]]
        return "·".join(parts)
    if k == "add":
        out = ""
        for i, (sign, t) in enumerate(n[1]):
            s = _text(t)
            out += (s if sign == "+" else "−" + s) if i == 0 else f" {'+' if sign == '+' else '−'} {s}"
        return f"({out})" if ctx in ("mul", "pow") else out
    if k == "pow":
        b = _text(n[1])
        b = f"({b})" if _needs_parens(n[1], "pow") else b
        x = _text(n[2], "pow")
        return f"{b}^({x})" if n[2][0] in ("mul", "neg", "pow") else f"{b}^{x}"   # x^(B·n), not x^B·n
    if k == "sqrt":
        return f"√({_text(n[1])})"
    if k == "func":
        return f"{n[1]}(" + ", ".join(_text(a) for a in n[2]) + ")"
    if k == "ufunc":
        sub = (n[2] or "").translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))
        return f"{n[1]}{sub}(" + ", ".join(_text(a) for a in n[3]) + ")"
    if k == "floor":
        return f"⌊{_text(n[1])}⌋"
    if k == "ceil":
        return f"⌈{_text(n[1])}⌉"
    raise TypeError(k)


def text(expr) -> str:
    return _text(_node(sp.sympify(expr, strict=True)))


# -- MathML (Presentation, rendered natively by browsers) ------------------------------------
_OP = {"−": "&#x2212;", "+": "+", "·": "&#x22C5;"}


def _mi(s: str) -> str:
    s = escape(s)
    return f"<mi>{s}</mi>" if len(s) == 1 else f'<mi mathvariant="normal">{s}</mi>' if s.isalpha() and s.isascii() else f"<mi>{s}</mi>"


def _ml(n, ctx=None) -> str:
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
        return f"<mrow><mo>&#x2212;</mo>{_ml(n[1], 'mul')}</mrow>"
    if k == "frac":
        return f"<mfrac><mrow>{_ml(n[1])}</mrow><mrow>{_ml(n[2])}</mrow></mfrac>"
    if k == "mul":
        parts = []
        for f in n[1]:   # a sum or a negation is bracketed here, once (as the text and Typst printers do)
            parts.append(f"<mrow><mo>(</mo>{_ml(f)}<mo>)</mo></mrow>" if _needs_parens(f, "mul") else _ml(f, "mul"))
        return "<mrow>" + "<mo>&#x22C5;</mo>".join(parts) + "</mrow>"
    if k == "add":
        out = []
        for i, (sign, t) in enumerate(n[1]):
            if i or sign == "-":
                out.append(f"<mo>{_OP['−' if sign == '-' else '+']}</mo>")
            out.append(_ml(t))
        inner = "".join(out)
        return f"<mrow><mo>(</mo>{inner}<mo>)</mo></mrow>" if ctx in ("mul", "pow") else f"<mrow>{inner}</mrow>"
    if k == "pow":
        b = _ml(n[1])
        b = f"<mrow><mo>(</mo>{b}<mo>)</mo></mrow>" if _needs_parens(n[1], "pow") else b
        return f"<msup>{b}<mrow>{_ml(n[2])}</mrow></msup>"
    if k == "sqrt":
        return f"<msqrt>{_ml(n[1])}</msqrt>"
    if k == "func":
        args = "<mo>,</mo>".join(_ml(a) for a in n[2])
        return f"<mrow><mi>{n[1]}</mi><mo>(</mo>{args}<mo>)</mo></mrow>"
    if k == "ufunc":
        args = "<mo>,</mo>".join(_ml(a) for a in n[3])
        name = f"<msub><mi>{escape(n[1])}</mi><mn>{n[2]}</mn></msub>" if n[2] else f"<mi>{escape(n[1])}</mi>"
        return f"<mrow>{name}<mo>(</mo>{args}<mo>)</mo></mrow>"
    if k == "floor":
        return f"<mrow><mo>&#x230A;</mo>{_ml(n[1])}<mo>&#x230B;</mo></mrow>"
    if k == "ceil":
        return f"<mrow><mo>&#x2308;</mo>{_ml(n[1])}<mo>&#x2309;</mo></mrow>"
    raise TypeError(k)


def mathml_symbol(q) -> str:
    return _ml(("sym", q.base, q.sub))


def mathml(expr, lhs=None, display: bool = True) -> str:
    body = _ml(_node(sp.sympify(expr, strict=True)))
    if lhs is not None:
        body = f"{mathml_symbol(lhs)}<mo>=</mo>{body}"
    mode = ' display="block"' if display else ""
    return f'<math{mode}><mrow>{body}</mrow></math>'


# -- Typst math --------------------------------------------------------------------------------
def typst_str(s: str) -> str:
    """A Typst string literal: every character shown as itself, nothing interpreted."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def _ty_ident(s: str) -> str:
    if len(s) == 1 and s.isalpha():
        return s
    return typst_str(s)  # multi-letter names in quotes are upright text in math mode


def _ty(n, ctx=None) -> str:
    k = n[0]
    if k == "val":
        if not n[2]:
            return typst_str(n[1])
        body = f"{typst_str(n[1])} thin {typst_str(n[2])}"
        return f"({body})" if ctx in ("mul", "pow") else body
    if k == "sym":
        base = _ty_ident(n[1])
        return f"{base}_{typst_str(n[2])}" if n[2] else base
    if k == "num":
        return n[1]
    if k == "neg":
        return f"-{_ty(n[1], 'mul')}"
    if k == "frac":
        return f"frac({_ty(n[1])}, {_ty(n[2])})"
    if k == "mul":
        parts = [(f"({_ty(f)})" if _needs_parens(f, "mul") else _ty(f, "mul")) for f in n[1]]
        return " dot ".join(parts)
    if k == "add":
        out = ""
        for i, (sign, t) in enumerate(n[1]):
            s = _ty(t)
            out += (s if sign == "+" else "-" + s) if i == 0 else f" {'+' if sign == '+' else '-'} {s}"
        return f"({out})" if ctx in ("mul", "pow") else out
    if k == "pow":
        b = _ty(n[1])
        b = f"({b})" if _needs_parens(n[1], "pow") else b
        return f"{b}^({_ty(n[2])})"
    if k == "sqrt":
        return f"sqrt({_ty(n[1])})"
    if k == "func":
        return f"{n[1]}(" + ", ".join(_ty(a) for a in n[2]) + ")"
    if k == "ufunc":
        name = f"{n[1]}_{n[2]}" if n[2] else n[1]
        return f"{name}(" + ", ".join(_ty(a) for a in n[3]) + ")"
    if k == "floor":
        return f"floor({_ty(n[1])})"
    if k == "ceil":
        return f"ceil({_ty(n[1])})"
    raise TypeError(k)


class TypstMath(str):
    """Typst math source, with ``em``: an upper estimate of its set width in em (see _em)."""
    em: float


def _math(src: str, em: float) -> TypstMath:
    out = TypstMath(src)
    out.em = em
    return out


# Widths in em of the text size, for deciding which display formulas might not fit the line
# (only those are measured by Typst, which costs layout time): every glyph counted at full size
# (subscripts and nested fractions are set smaller), with the spacing Typst puts around
# operators. tests/report/test_report_defects.py measures every formula this calls narrow.
_GLYPH, _SUB_GLYPH, _OP_GAP, _DOT_GAP, _PAREN = 0.62, 0.45, 1.25, 0.6, 0.45


def _glyphs(s: str, size: float = _GLYPH) -> float:
    """Capitals (M, W, C in italics) are the widest glyphs."""
    return sum(size * (1.4 if c.isupper() else 1.0) for c in s)


_EM_MEMO: dict | None = None   # while a formula is laid out over lines (linebreak.formula): widths kept


def _em(n, ctx=None) -> float:
    memo = _EM_MEMO
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
        w = _glyphs(n[1]) + _glyphs(n[2] or "") + (0.25 if n[2] else 0)
        return w + (2 * _PAREN if n[2] and ctx in ("mul", "pow") else 0)
    if k == "sym":
        return _glyphs(n[1]) + _glyphs(n[2] or "", _SUB_GLYPH)
    if k == "num":
        return _glyphs(n[1])
    if k == "neg":
        return _GLYPH + _em(n[1], "mul")
    if k == "frac":
        return max(_em(n[1]), _em(n[2])) + 0.4
    if k == "mul":
        return sum(_em(f) + 2 * _PAREN if _needs_parens(f, "mul") else _em(f, "mul") for f in n[1]) \
            + _DOT_GAP * (len(n[1]) - 1)
    if k == "add":
        w = sum(_em(t) for _, t in n[1]) + _OP_GAP * (len(n[1]) - 1) + (_GLYPH if n[1][0][0] == "-" else 0)
        return w + (2 * _PAREN if ctx in ("mul", "pow") else 0)
    if k == "pow":
        return _em(n[1]) + (2 * _PAREN if _needs_parens(n[1], "pow") else 0) + _em(n[2])
    if k == "sqrt":
        return _em(n[1]) + 1.0
    if k == "func":
        return len(n[1]) * _GLYPH + 2 * _PAREN + sum(_em(a) for a in n[2]) + _DOT_GAP * (len(n[2]) - 1)
    if k == "ufunc":
        return (_glyphs(n[1]) + _glyphs(n[2] or "", _SUB_GLYPH) + 2 * _PAREN
                + sum(_em(a) for a in n[3]) + _DOT_GAP * (len(n[3]) - 1))
    if k in ("floor", "ceil"):
        return _em(n[1]) + 2 * _PAREN
    raise TypeError(k)


def _ty_math(n) -> TypstMath:
    return _math(_ty(n), _em(n))


def _eq(lhs: TypstMath, rhs: TypstMath) -> TypstMath:
    return _math(f"{lhs} = {rhs}", lhs.em + _OP_GAP + rhs.em)


def typst_symbol(q) -> TypstMath:
    return _ty_math(("sym", q.base, q.sub))


def typst(expr, lhs=None) -> TypstMath:
    body = _ty_math(_node(sp.sympify(expr, strict=True)))
    return _eq(typst_symbol(lhs), body) if lhs is not None else body


def text_symbol(q) -> str:
    return _text(("sym", q.base, q.sub))


def with_values(expr, values: dict) -> tuple[str, str, str]:
    """``expr`` with each symbol in ``values`` shown as its number and unit: text, MathML, Typst."""
    node = _node(sp.sympify(expr, strict=True), values)
    return _text(node), f'<math display="block"><mrow>{_ml(node)}</mrow></math>', _ty_math(node)

