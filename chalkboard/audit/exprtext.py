"""An expression written in a data file, read without running it.

SymPy's `sympify` reads text with Python's `eval`, so a claim whose `expr:` said
`__import__('os').system(...)` would run that command. Here the text is only *parsed* (Python's
`ast.parse`, which executes nothing) and the tree is rebuilt as SymPy objects from an explicit
whitelist: numbers, the names given, + - * / ** and unary minus, and calls of the functions given.
Anything else (attributes, subscripts, strings, lambdas, comprehensions, keywords, unknown names)
is refused with a one-line reason.
"""
from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping

import sympy as sp

MAX_TEXT = 2000        # characters: the longest identity in claims.yaml is under 200
MAX_NODES = 400        # syntax-tree nodes; bounds SymPy's work on what is built
MAX_DEPTH = 40         # nesting; Python's own parser stops near 200 parentheses
MAX_DIGITS = 30        # an integer literal; larger constants are written with an exponent
MAX_EXPONENT = 64      # |n| in x**n for a numeric n: 2**1000000000 would be computed eagerly

_BINARY = {ast.Add: sp.Add, ast.Mult: sp.Mul,
           ast.Sub: lambda a, b: sp.Add(a, -b), ast.Div: lambda a, b: sp.Mul(a, sp.Pow(b, -1))}


class ExprError(ValueError):
    """Why a text is not an expression this parser accepts (one line)."""


class Function:
    """A function an expression may call. `names_as_text`: its bare-name arguments are passed as
    strings (the name of an equation, say) instead of being looked up as quantities."""

    def __init__(self, fn: Callable, arity: int | tuple[int, int], names_as_text: bool = False):
        self.fn, self.names_as_text = fn, names_as_text
        self.arity = (arity, arity) if isinstance(arity, int) else arity


# SymPy functions an expression in a data file may use; none runs anything but algebra
MATH = {"Max": Function(sp.Max, (2, 8)), "Min": Function(sp.Min, (2, 8)),
        "sqrt": Function(sp.sqrt, 1), "log": Function(sp.log, 1), "Abs": Function(sp.Abs, 1),
        "floor": Function(sp.floor, 1), "ceiling": Function(sp.ceiling, 1)}


def shorten(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[:n] + "…"


def parse(text: str, names: Mapping[str, sp.Basic], functions: Mapping[str, Function] = MATH,
          noun: str = "quantity") -> sp.Basic:
    """`text` as a SymPy expression over `names` (each a `noun`), or ExprError. Nothing in `text`
    is executed."""
    if not isinstance(text, str):
        raise ExprError(f"expected an expression as text, got a {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise ExprError(f"expression too long ({len(text)} characters; at most {MAX_TEXT})")
    if not text.strip():
        raise ExprError("empty expression")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as e:
        raise ExprError(f"not an expression ({type(e).__name__}: {getattr(e, 'msg', e)})") from None
    nodes = list(ast.walk(tree))
    if len(nodes) > MAX_NODES:
        raise ExprError(f"expression too large ({len(nodes)} terms and operators; at most {MAX_NODES})")
    _check_depth(tree)
    return _Builder(names, functions, noun).build(tree.body)


def _check_depth(tree: ast.AST) -> None:
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ExprError(f"expression nested too deeply (more than {MAX_DEPTH} levels)")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


class _Builder:
    def __init__(self, names, functions, noun):
        self.names, self.functions, self.noun = names, functions, noun

    def build(self, node: ast.AST):
        if isinstance(node, ast.Constant):
            return self._number(node.value)
        if isinstance(node, ast.Name):
            if node.id in self.names:
                return self.names[node.id]
            if node.id in self.functions:
                raise ExprError(f"{node.id} is a function: call it, {node.id}(...)")
            raise ExprError(f"unknown {self.noun} {shorten(node.id)!r}")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            inner = self.build(node.operand)
            return -inner if isinstance(node.op, ast.USub) else inner
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](self.build(node.left), self.build(node.right))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            base, exp = self.build(node.left), self.build(node.right)
            if exp.is_number and not (exp.is_real and abs(float(exp)) <= MAX_EXPONENT):
                raise ExprError(f"exponent {shorten(str(exp))} out of range (at most {MAX_EXPONENT} in size)")
            return sp.Pow(base, exp)
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.BinOp):
            raise ExprError(f"the operator {_OPERATORS.get(type(node.op), type(node.op).__name__)} is not allowed "
                            "(only + - * / **)")
        raise ExprError(f"{_what(node)} is not allowed in an expression "
                        "(only numbers, quantity names, + - * / **, parentheses and "
                        f"{', '.join(sorted(self.functions))})")

    def _call(self, node: ast.Call):
        f = node.func
        if not isinstance(f, ast.Name):
            raise ExprError(f"{_what(f)} cannot be called; only {', '.join(sorted(self.functions))}")
        spec = self.functions.get(f.id)
        if spec is None:
            raise ExprError(f"unknown function {shorten(f.id)!r} (allowed: {', '.join(sorted(self.functions))})")
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise ExprError(f"{f.id}() takes plain arguments only")
        lo, hi = spec.arity
        if not lo <= len(node.args) <= hi:
            want = str(lo) if lo == hi else f"{lo} to {hi}"
            raise ExprError(f"{f.id}() takes {want} argument{'s' if hi > 1 else ''}, got {len(node.args)}")
        args = [a.id if spec.names_as_text and isinstance(a, ast.Name) else self.build(a) for a in node.args]
        try:
            return spec.fn(*args)
        except ExprError:
            raise
        except (TypeError, ValueError, AttributeError, sp.SympifyError) as e:
            raise ExprError(f"{f.id}(): {shorten(str(e), 120)}") from None

    @staticmethod
    def _number(v):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ExprError(f"{type(v).__name__} constant {shorten(repr(v))} is not allowed; only numbers")
        if isinstance(v, int):
            if len(str(abs(v))) > MAX_DIGITS:
                raise ExprError(f"integer with more than {MAX_DIGITS} digits; write it with an exponent (1e40)")
            return sp.Integer(v)
        if not math.isfinite(v):
            raise ExprError("number out of range")
        return sp.Float(v)


_OPERATORS = {ast.Mod: "%", ast.FloorDiv: "//", ast.MatMult: "@", ast.BitXor: "^", ast.BitOr: "|",
              ast.BitAnd: "&", ast.LShift: "<<", ast.RShift: ">>"}


def _what(node: ast.AST) -> str:
    return {ast.Attribute: "attribute access (.)", ast.Subscript: "indexing ([])", ast.Lambda: "a lambda",
            ast.ListComp: "a comprehension", ast.GeneratorExp: "a comprehension", ast.SetComp: "a comprehension",
            ast.DictComp: "a comprehension", ast.Compare: "a comparison", ast.BoolOp: "and/or",
            ast.IfExp: "if/else", ast.NamedExpr: "an assignment (:=)", ast.JoinedStr: "a string",
            ast.List: "a list", ast.Tuple: "a tuple", ast.Dict: "a dict", ast.Set: "a set",
            ast.Await: "await", ast.Yield: "yield", ast.Starred: "*"}.get(type(node), type(node).__name__)
