"""Display formulas too wide for the text, broken over lines at their top-level operators.

A substitution such as t_step = max(compute time, memory time) with every symbol replaced by its
number and unit is several times the width of a page. Scaled down to fit, it becomes
unreadable; so it is set over lines, as one would on a blackboard: a sum breaks before a + or −,
a product before a ·, max(…) and min(…) between their arguments, and a fraction whose
numerator is too wide is written 1/denominator · (numerator) so that the numerator can break.
Continuation lines are indented by the depth of the bracket they continue.

The layout is decided once, on the printers' shared tree (printers.expr_tree) with their width
estimate (printers.width_em, an upper estimate in em of the text size), and then printed by the
MathML and the Typst printers alike, so the page and the PDF break a formula at the same places.
A formula that fits is printed as before, on one line.
"""
from __future__ import annotations

from . import NARROW_EM, WIDTH_EM  # the line budgets, declared in typeset/__init__.py
from . import printers as P
INDENT_EM = 1.0      # one level of indentation: Typst's `quad`, MathML's 1em space
_OP_EM = {"+": P.OP_GAP, "−": P.OP_GAP, "=": P.OP_GAP, "·": P.DOT_GAP, ",": 0.5, "/": 0.8}
_TYPST_OP = {"+": "+", "−": "-", "=": "=", "·": "dot", ",": ",", "/": "slash"}
_MATHML_OP = {**P.OP, "=": "=", ",": ",", "/": "/"}   # the printers' +, − and ·, and this layout's own


class _Flow:
    """Lines being filled: each is [indent, items]; an item is ("node", n, ctx, wrapped),
    ("op", symbol), ("open", name, bracket) or ("close", bracket)."""

    def __init__(self, width: float):
        self.lines: list[list] = [[0, []]]
        self.col, self.width = 0.0, width

    def room(self) -> float:
        return self.width - self.col

    def put(self, item, em: float):
        self.lines[-1][1].append(item)
        self.col += em

    def newline(self, indent: int):
        if self.lines[-1][1] and self.col > indent * INDENT_EM:
            self.lines.append([indent, []])
            self.col = indent * INDENT_EM

    def node(self, n, ctx=None, wrapped=False):
        self.put(("node", n, ctx, wrapped), _width(n, ctx, wrapped))

    def op(self, symbol: str):
        self.put(("op", symbol), _OP_EM[symbol])


def _width(n, ctx=None, wrapped=False) -> float:
    return P.width_em(n) + 2 * P.PAREN if wrapped else P.width_em(n, ctx)


def _flow(n, f: _Flow, indent: int, ctx=None, wrapped=False, trail: float = 0.0):
    """Put ``n`` on the lines, breaking it where it does not fit in what is left of the line.
    ``trail``: the width of what must follow it on its line (the brackets it closes, a comma), so
    that a piece that fits only without them is broken or moved instead of running over."""
    if _width(n, ctx, wrapped) + trail <= f.room():
        f.node(n, ctx, wrapped)
        return
    k = n[0]
    if k in ("floor", "ceil") and not wrapped:   # ⌊…⌋ and ⌈…⌉ break inside, as brackets do
        left, right = ("⌊", "⌋") if k == "floor" else ("⌈", "⌉")
        f.put(("open", "", left), P.PAREN)
        _flow(n[1], f, indent + 1, trail=trail + P.PAREN)
        f.put(("close", right), P.PAREN)
        return
    if k not in ("add", "mul", "frac", "func", "ufunc", "neg"):   # a power or a root: not broken
        f.node(n, ctx, wrapped)
        return
    parens = wrapped or (k == "add" and ctx in ("mul", "pow"))
    if parens:
        f.put(("open", "", "("), P.PAREN)
        indent += 1
        trail += P.PAREN
    if k == "add":
        last = len(n[1]) - 1
        for i, (sign, t) in enumerate(n[1]):
            end = trail if i == last else 0.0
            if i == 0:
                if sign == "-":
                    f.op("−")
                _flow(t, f, indent, trail=end)
                continue
            _then(f, "+" if sign == "+" else "−", t, indent, trail=end)
    elif k == "neg":
        f.op("−")
        _flow(n[1], f, indent, "mul", P.needs_parens(n[1], "mul"), trail)
    elif k == "mul":
        last = len(n[1]) - 1
        for i, x in enumerate(n[1]):
            wrap = P.needs_parens(x, "mul")
            end = trail if i == last else 0.0
            if i == 0:
                _flow(x, f, indent, "mul", wrap, end)
            else:
                _then(f, "·", x, indent, "mul", wrap, end)
    elif k == "frac":
        num, den = n[1], n[2]
        if _width(den) <= f.width / 3:   # 1/den · (num), the numerator broken
            f.node(("frac", ("num", "1"), den))
            _then(f, "·", num, indent, "mul", P.needs_parens(num, "mul") or num[0] == "frac", trail)
        else:                            # (num) / (den), each broken
            _flow(num, f, indent, wrapped=True)
            _then(f, "/", den, indent, wrapped=True, trail=trail)
    else:   # max(…), min(…), a named function: one argument a line once they do not all fit
        name = n[1] if k == "func" else n[1] + (n[2] or "")
        args = n[2] if k == "func" else n[3]
        f.put(("open", name, "("), P.glyphs_width(name) + P.PAREN)
        for i, a in enumerate(args):
            if i:
                f.op(",")
                f.newline(indent + 1)
            _flow(a, f, indent + 1, trail=trail + P.PAREN if i == len(args) - 1 else _OP_EM[","])
        f.put(("close", ")"), P.PAREN)
    if parens:
        f.put(("close", ")"), P.PAREN)


def _then(f: _Flow, symbol: str, n, indent: int, ctx=None, wrapped=False, trail: float = 0.0):
    """An operator and its operand, on a new line when they do not fit on this one and either
    fit on a new one or would start with little room left (else the operand breaks inside)."""
    w = _OP_EM[symbol] + _width(n, ctx, wrapped) + trail
    if w > f.room() and (w <= f.width - indent * INDENT_EM or f.room() < f.width / 3):
        f.newline(indent)
    f.op(symbol)
    _flow(n, f, indent, ctx, wrapped, trail)


def formula(expr, lhs=None, values=None, phone: bool = True) -> tuple[str, str, "P.TypstMath"]:
    """A display formula ``[lhs =] expr`` as plain text (one line), MathML and Typst, the last two
    broken over lines where it is wider than WIDTH_EM; ``lhs`` a declared quantity or an
    expression, ``values`` {symbol: quantity} to show symbols as their numbers. With ``phone``
    a formula wider than NARROW_EM has a second MathML layout after the first (class "narrow",
    the first "wide"): a page that does not choose between them by its style sheet asks for none."""
    import sympy as sp

    n = P.expr_tree(sp.sympify(expr, strict=True), values)
    left = None if lhs is None else ("sym", lhs.base, lhs.sub) if hasattr(lhs, "base") else P.expr_tree(sp.sympify(lhs, strict=True))
    text = P.tree_text(n) if left is None else f"{P.tree_text(left)} = {P.tree_text(n)}"
    P.EM_MEMO = {}   # each node's width computed once while this formula is laid out and printed
    try:
        laid = lines(n, left)
        narrow = lines(n, left, NARROW_EM) if phone else None   # a phone's: shown there in place of the first
        wide = ' class="wide"' if narrow is not None else ""
        if laid is not None:
            ml, ty = mathml_lines(laid, "lines wide" if wide else "lines"), typst_lines(laid)
        elif left is None:
            ml, ty = f'<math display="block"{wide}><mrow>{P.tree_mathml(n)}</mrow></math>', P.typst_of(n)
        else:
            ml = f'<math display="block"{wide}><mrow>{P.tree_mathml(left)}<mo>=</mo>{P.tree_mathml(n)}</mrow></math>'
            ty = P.typst_eq(P.typst_of(left), P.typst_of(n))
        if narrow is not None:
            ml += mathml_lines(narrow, "lines narrow")
        return text, ml, ty
    finally:
        P.EM_MEMO = None


# The formulas of the sources alone (no numbers), by kind: the expression and its left side,
# read from the registry here, so that what is kept depends only on keyed code (the derivations,
# the printers and this module: chalkboard/cache/symcache.py).
SOURCE_FORMS = {
    "definition": lambda R, name: (R[name].expr, R[name]),
    "closed form": lambda R, name: (R.closed_form(name), R[name]),
    "board form": lambda R, name: (R.board_form(name), R[name]),
    "equation": lambda R, name: (R.equations[name].rhs, R.equations[name].lhs),
}


def kept_formula(kind: str, name: str) -> tuple[str, str, "P.TypstMath"]:
    """formula(expr, lhs) of the formula of kind ``kind`` (a key of SOURCE_FORMS) of the quantity
    or equation ``name``, kept with SymPy's work: printing the report's 800 of them costs about
    0.3 s a build."""
    from derivations import REGISTRY

    def printed():
        text, mathml, typst = formula(*SOURCE_FORMS[kind](REGISTRY, name))
        return text, mathml, str(typst), typst.em   # plain values: the cache is read before this module
    text, mathml, typst, em = REGISTRY.kept(("formula", kind, name), printed)
    return text, mathml, P.typst_math(typst, em)


def lines(n, lhs=None, width: float = WIDTH_EM) -> list[list] | None:
    """``[lhs =] n`` laid out in lines of at most ``width`` em where it can break; None if it
    fits on one line."""
    total = _width(n) + (P.width_em(lhs) + P.OP_GAP if lhs is not None else 0)
    if total <= width:
        return None
    f = _Flow(width)
    if lhs is not None:
        f.node(lhs)
        f.op("=")
    _flow(n, f, 1 if lhs is not None else 0)
    return [line for line in f.lines if line[1]]


# -- the two printers of a laid-out formula -------------------------------------------------------
def _typst_item(item, first: bool) -> str:
    k = item[0]
    if k == "node":
        _, n, ctx, wrapped = item
        return f"({P.tree_typst(n)})" if wrapped else P.tree_typst(n, ctx)
    if k == "op":
        s = _TYPST_OP[item[1]]
        return f'"" {s}' if first and item[1] not in (",",) else s   # "" keeps a binary operator's spacing
    if k == "open":
        name, b = item[1], "\\(" if item[2] == "(" else item[2]
        return f"{name}{b}" if name in ("max", "min", "ln") else f"{P.typst_ident(name)}{b}" if name else b
    return "\\)" if item[1] == ")" else item[1]


def typst_lines(laid: list[list]) -> "P.TypstMath":
    """Typst math of a laid-out formula: lines aligned at their start, indented by quads."""
    rows = []
    widest = 0.0
    for indent, items in laid:
        body = " ".join(_typst_item(it, i == 0) for i, it in enumerate(items))
        rows.append("& " + "quad " * indent + body)
        widest = max(widest, indent * INDENT_EM + sum(_item_em(it) for it in items))
    return P.typst_math(" \\ ".join(rows), widest)


def _item_em(item) -> float:
    k = item[0]
    if k == "node":
        return _width(item[1], item[2], item[3])
    if k == "op":
        return _OP_EM[item[1]]
    if k == "open":
        return P.glyphs_width(item[1]) + P.PAREN
    return P.PAREN


def _mathml_item(item, first: bool) -> str:
    k = item[0]
    if k == "node":
        _, n, ctx, wrapped = item
        if not wrapped:
            return P.tree_mathml(n, ctx)
        inner = P.tree_mathml(n)
        fixed = "" if "<mfrac" in inner else ' stretchy="false"'   # as tall as a fraction inside, else a line
        return f"<mrow><mo{fixed}>(</mo>{inner}<mo{fixed}>)</mo></mrow>"
    if k == "op":
        return f'<mo form="infix">{_MATHML_OP[item[1]]}</mo>'
    if k == "open":
        name = item[1]
        head = f"<mi>{P.escape(name)}</mi>" if name else ""
        return f'{head}<mo stretchy="false">{item[2]}</mo>'
    return f'<mo stretchy="false">{item[1]}</mo>'


def mathml_lines(laid: list[list], css: str = "lines") -> str:
    """MathML of a laid-out formula: a one-column table whose rows are the lines, set flush left,
    its fractions full size (a table's cells are set compact by default), indented by spaces."""
    rows = []
    for indent, items in laid:
        pad = f'<mspace width="{indent * INDENT_EM:g}em"/>' if indent else ""
        body = "".join(_mathml_item(it, i == 0) for i, it in enumerate(items))
        rows.append(f'<mtr><mtd style="text-align: left; padding: 0.1em 0">{pad}{body}</mtd></mtr>')
    # styled here, not by a page's style sheet, so that it reads the same wherever it is shown
    return (f'<math display="block" class="{css}"><mtable columnalign="left" style="math-style: normal">'
            f'{"".join(rows)}</mtable></math>')
