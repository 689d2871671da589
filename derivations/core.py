"""The machinery every lecture module uses: declare a quantity once, define it in SymPy.

A quantity is declared exactly once, with its symbol, unit, meaning, typeset name and
where its value comes from:

* ``hardware`` / ``model`` -- a field of an entry in hardware.yaml / models.yaml;
* ``price`` -- a field of the selected price snapshot in prices.yaml (``--set price=ID``);
* ``tier`` -- a field of a memory tier in prices.yaml (field ``"<tier>.<field>"``);
* ``workload`` -- a parameter of the serving set-up (batch, context, chips), with a default;
* ``constant`` -- a named constant such as 2 FLOP per multiply-accumulate;
* ``derived`` -- a SymPy expression in other quantities (``expr``).

A quantity's form under another model of the step (the deployed layout, the expected
efficiencies) is made from its declaration by ``Registry.variant`` where it is the same
definition with such forms in place of the quantities it reads (``Variant``).

Nothing here touches the filesystem or knows about rendering.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field, fields

import sympy as sp

ORIGINS = ("hardware", "model", "price", "tier", "workload", "constant", "derived")

# SymPy results of an earlier run from the same derivation sources, handed in by the caller
# before the lecture modules are imported (build.py keys them by a hash of the sources).
PRELOADED: dict = {}


@dataclass(frozen=True)
class Rules:
    """The values an input may take, declared with it; the data files' loader, --set, the library,
    --sweep, the explorer's boxes and check all read them. Limits are in the declared unit."""
    whole: bool = False             # a count: whole numbers only
    zero: bool = False              # may be 0 (else positive: it divides, or counts something)
    most: tuple | None = None       # (the largest value, why)
    below: tuple | None = None      # (a value it stays below, why)
    within: tuple | None = None     # (an input it may not exceed, why)
    divides: tuple | None = None    # (an input it must divide, why)

    def problem(self, q, unit: str) -> str | None:
        """Why the Pint quantity ``q`` is not a value of the input, or None: the range every
        input keeps (units.magnitude_problem), then the declared rules, in ``unit``."""
        from units import magnitude_problem
        p = magnitude_problem(q, allow_zero=self.zero)
        if p:
            return p + " (it divides, or counts something)" if p == "must be positive" else p
        x = q.to(unit or "").magnitude
        if self.whole and abs(x - round(x)) > 1e-9:
            return "must be a whole number (it counts something)"
        if self.most and x > self.most[0]:
            return f"at most {self.most[0]:,} ({self.most[1]})"
        if self.below and x >= self.below[0]:
            return f"must be below {self.below[0]:g} ({self.below[1]})"
        return None

    def against(self, name: str, x: float, given) -> tuple[str, str] | None:
        """(the other input, why) where ``name`` at ``x`` exceeds or does not divide the input its
        rules name; ``given(other)``: that input's value (in its unit), or None where unknown."""
        if self.within and (y := given(self.within[0])) is not None and x > y * (1 + 1e-12):
            return self.within[0], f"{name} ({x:g}) exceeds {self.within[0]} ({y:g}): {self.within[1]}"
        if self.divides and (y := given(self.divides[0])) is not None and x >= 1 and not divides(x, y):
            return self.divides[0], f"{name} ({x:g}) does not divide {self.divides[0]} ({y:g}): {self.divides[1]}"
        return None


def divides(a: float, b: float) -> bool:
    """Whether ``a`` divides ``b``: exactly for whole numbers (b / a rounds 64 / 10^12 to 0, a multiple)."""
    whole = abs(a - round(a)) <= 1e-9 and abs(b - round(b)) <= 1e-9
    return round(b) % round(a) == 0 if whole else abs(b / a - round(b / a)) <= 1e-9


RULES = tuple(f.name for f in fields(Rules))


@dataclass(eq=False)
class Quantity:
    name: str                 # identifier used on the command line: "hbm_bandwidth"
    sym: sp.Symbol            # the SymPy symbol that stands for it in every expression
    unit: str                 # Pint unit expression in chalkboard's registry: "byte/s/chip"
    meaning: str              # one line of plain English
    origin: str               # one of ORIGINS
    base: str                 # typeset base: "N", "β", "t"
    sub: str | None = None    # typeset subscript: "active", "w", "compute"
    field: str | None = None  # hardware/model field it is read from
    default: str | None = None  # workload default or constant value, as '<number> <unit>'
    source: str | None = None   # where a constant's value comes from
    expr: sp.Expr | None = None  # definition, for derived quantities
    how: str = "defined"      # "defined", or how SymPy obtained it ("solved ...", "limit ...")
    section: str | None = None
    note: str | None = None
    valid: str | None = None  # derived: the value must be positive; else "not applicable: <valid>"
    moe_only: bool = False    # meaningful only for a mixture-of-experts model (n/a for a dense one)
    fit_measure: bool = False  # measures the memory fit itself (never flagged as "does not fit")
    share: bool = False       # a fraction of a whole (MFU, HBM fill): shown as a percentage
    rules: Rules = Rules()    # an input's values: whole, may be zero, limits, order, divisibility

    @property
    def is_input(self) -> bool:
        return self.origin != "derived"

    def __repr__(self) -> str:  # keeps SymPy and error messages short
        return f"<{self.origin} {self.name} [{self.unit}]>"


@dataclass(eq=False)
class Equation:
    """A relation the lecture writes on the board (lhs = rhs), dimension-checked like a definition."""
    name: str
    lhs: sp.Expr
    rhs: sp.Expr
    meaning: str
    section: str | None = None
    identity: bool = False    # True: both sides must also agree symbolically (a derivation step)
    free: tuple = ()          # symbols local to the relation (not quantities): dimensionless placeholders


# The lecture's chapters (shared/lecture README's chapter map): title and start time.
CHAPTERS = {
    "batch": ("How batch size affects token cost and speed", "0:00"),
    "moe": ("How MoE models are laid out across GPU racks", "0:32"),
    "pipeline": ("Pipeline parallelism across racks", "0:47"),
    "memory": ("Pipelining is not wise: memory capacity, latency, scale-up", "1:03"),
    "training": ("RL and over-training beyond Chinchilla", "1:19"),
    "prices": ("Deducing long-context memory costs from API prices", "1:33"),
    "crypto": ("Neural nets and cryptography", "2:04"),
}


@dataclass
class Section:
    id: str
    title: str
    seeds: tuple              # places in the seeds it rests on: "004:93", "000@1:49"
    question: str
    takeaway: str             # may hold {quantity} placeholders, filled with computed values
    chapter: str = "batch"
    quantities: list[str] = field(default_factory=list)
    equations: list[str] = field(default_factory=list)
    featured: list[str] = field(default_factory=list)  # quantities shown substituted in the report


@dataclass
class Variant:
    """A kind of variant: the same quantity under another model of the step (the deployed layout, the
    engine model's expected efficiencies). ``table`` names each quantity's variant of this kind: those
    written by hand, and each one ``Registry.variant`` makes, so that variants of variants follow."""
    suffix: str               # added to the name: "layout" makes "throughput_layout"
    sub: str                  # added to the typeset subscript: "layout", "exp"
    says: str = ""            # what the meaning adds before its first colon: "under the layout"
    prefix: str = ""          # what the meaning starts with: "expected "
    explained: bool = True    # whether the base's explanation (after its colon) still holds
    table: dict = field(default_factory=dict)   # base name -> variant name: the substitution made

    def meaning(self, base: str) -> str:
        """The base's meaning as the kind changes it: "tokens per second each sequence gets: one a
        step" under the layout is "tokens per second each sequence gets under the layout: one a step"."""
        head, colon, tail = base.partition(":")
        says = f" {self.says}" if self.says else ""
        return self.prefix + head + says + (colon + tail if self.explained else "")


class Registry:
    def __init__(self) -> None:
        self.quantities: dict[str, Quantity] = {}
        self.by_symbol: dict[sp.Symbol, Quantity] = {}
        self.equations: dict[str, Equation] = {}
        self.sections: dict[str, Section] = {}
        self.rules: dict[str, tuple] = {}   # name -> (function, input names, description)
        self.rule_optional: dict[str, tuple] = {}   # name -> the inputs it takes as None where missing
        self._current: Section | None = None
        self._memo: dict = {}                # closed forms and leaves; cleared on every declaration
        # SymPy's slow work (solves, limits, closed forms), kept between runs by the caller:
        # ``saved`` is what an earlier run computed from the same derivation sources (the
        # caller keys it by their hash), ``fresh`` what this run computed.
        self.saved: dict = PRELOADED
        self.fresh: dict = {}
        self._calls: dict[str, int] = {}

    # -- declaring ------------------------------------------------------------------------
    def section(self, id: str, title: str, seeds: tuple, question: str, takeaway: str,
                chapter: str = "batch", featured: tuple[str, ...] = ()) -> Section:
        if id in self.sections:
            raise ValueError(f"section {id!r} declared twice")
        if chapter not in CHAPTERS:
            raise ValueError(f"section {id!r}: unknown chapter {chapter!r}")
        s = Section(id, title, tuple(seeds), question, takeaway, chapter, featured=list(featured))
        self.sections[id] = s
        self._current = s
        return s

    def resume(self, id: str) -> Section:
        """Declare the next quantities into an earlier section (one topic split over two modules)."""
        self._current = self.sections[id]
        return self._current

    def _add(self, q: Quantity) -> sp.Symbol:
        self._memo.clear()
        if q.origin not in ORIGINS:
            raise ValueError(f"{q.name}: unknown origin {q.origin!r}")
        if q.name in self.quantities:
            raise ValueError(f"quantity {q.name!r} declared twice")
        if q.sym in self.by_symbol:
            raise ValueError(f"{q.name}: symbol {q.sym} already used by {self.by_symbol[q.sym].name}")
        if self._current is not None:
            q.section = self._current.id
            self._current.quantities.append(q.name)
        self.quantities[q.name] = q
        self.by_symbol[q.sym] = q
        return q.sym

    def declare(self, name: str, unit: str, meaning: str, origin: str, base: str,
                sub: str | None = None, **kw) -> sp.Symbol:
        sym = sp.Symbol(name, positive=True)
        rules = Rules(**{r: kw.pop(r) for r in RULES if r in kw})   # declared beside the rest: whole=True
        return self._add(Quantity(name, sym, unit, meaning, origin, base, sub, rules=rules, **kw))

    def hardware(self, name, unit, meaning, base, sub=None, field=None, **kw):
        return self.declare(name, unit, meaning, "hardware", base, sub, field=field or name, **kw)

    def model(self, name, unit, meaning, base, sub=None, field=None, **kw):
        return self.declare(name, unit, meaning, "model", base, sub, field=field or name, **kw)

    def price(self, name, unit, meaning, base, sub=None, field=None, **kw):
        return self.declare(name, unit, meaning, "price", base, sub, field=field or name, **kw)

    def tier(self, name, unit, meaning, base, sub=None, field=None, **kw):
        """A field of one memory tier of prices.yaml: ``field`` is '<tier>.<field>'."""
        return self.declare(name, unit, meaning, "tier", base, sub, field=field, **kw)

    def workload(self, name, unit, meaning, base, sub=None, default=None, **kw):
        return self.declare(name, unit, meaning, "workload", base, sub, default=default, **kw)

    def constant(self, name, value, meaning, base, sub=None, source=None, unit=None, **kw):
        from units import parse  # the value string is read by Pint, like every data value
        q = parse(value)
        return self.declare(name, unit or f"{q.units}", meaning, "constant", base, sub,
                            default=value, source=source, **kw)

    def derived(self, name, expr, unit, meaning, base, sub=None, how="defined", **kw):
        sym = self.declare(name, unit, meaning, "derived", base, sub, how=how, **kw)
        self.quantities[name].expr = sp.sympify(expr, strict=True)
        return sym

    def variant(self, base: str, kind: Variant, meaning: str | None = None, sub: str | None = None,
                name: str | None = None) -> sp.Symbol:
        """``base``'s variant of ``kind``, declared in the current section: its definition with every
        quantity that has a variant of that kind (``kind.table``) replaced by it, its unit and flags,
        named and typeset with the kind's suffix and subscript after the base's. ``meaning`` where it
        is said in words of its own, else the base's as the kind changes it; ``sub`` and ``name`` likewise."""
        b = self.quantities[base]
        names = {s: self.by_symbol[s].name for s in getattr(b.expr, "free_symbols", ()) if s in self.by_symbol}
        swap = {s: self.quantities[kind.table[n]].sym for s, n in names.items() if n in kind.table}
        if not swap:
            raise ValueError(f"{base}: nothing in its definition has a {kind.suffix} variant")
        name = name or f"{base}_{kind.suffix}"
        sym = self.derived(name, b.expr.xreplace(swap), b.unit, meaning or kind.meaning(b.meaning), b.base,
                           sub or ",".join(filter(None, (b.sub, kind.sub))), valid=b.valid,
                           moe_only=b.moe_only, fit_measure=b.fit_measure, share=b.share)
        kind.table[base] = name
        return sym

    def rule(self, name: str, inputs: tuple[str, ...], description: str, optional: tuple[str, ...] = ()):
        """A workload default that is not a formula (e.g. a divisibility trim): a decorator.

        A workload input declared with ``default="=rule:NAME"`` takes the function's value,
        called with the magnitudes of ``inputs`` in their declared units; an input named in
        ``optional`` is passed as None where the chip or model does not give it (the rule says
        when it needs it).
        """
        def deco(fn):
            self.rules[name] = (fn, inputs, description)
            self.rule_optional[name] = tuple(optional)
            return fn
        return deco

    def equation(self, name: str, lhs, rhs, meaning: str, identity: bool = False,
                 free: tuple = (), listed: bool = True) -> Equation:
        """A relation lhs = rhs. ``free``: symbols of the relation that are not quantities (the
        arguments of a map in undefined functions), checked as dimensionless placeholders.
        ``listed=False`` keeps it out of its section's list of board equations (a check only)."""
        if name in self.equations:
            raise ValueError(f"equation {name!r} declared twice")
        for s in free:
            if s in self.by_symbol:
                raise ValueError(f"equation {name!r}: free symbol {s} is a quantity's symbol")
        eq = Equation(name, sp.sympify(lhs, strict=True), sp.sympify(rhs, strict=True), meaning,
                      self._current.id if self._current else None, identity, tuple(free))
        self.equations[name] = eq
        if self._current is not None and listed:
            self._current.equations.append(name)
        return eq

    def kept(self, key, compute):
        """``compute()``, or its result from an earlier run of the same derivation sources, or from
        earlier in this one (a long-running process: `build.py watch`)."""
        if key in self.saved:
            return self.saved[key]
        if key in self.fresh:
            return self.fresh[key]
        value = compute()
        self.fresh[key] = value
        return value

    def _nth(self, kind: str) -> tuple:
        """A key for the n-th call of one kind in the lecture module that makes it (the caller of
        the method calling this): the module's source fixes the order of its calls, whatever the
        order the modules are imported in."""
        module = sys._getframe(2).f_globals.get("__name__", "?")
        self._calls[kind, module] = self._calls.get((kind, module), 0) + 1
        return (kind, module, self._calls[kind, module])

    # -- kept between runs, whole -----------------------------------------------------------
    _NOT_KEPT = ("saved", "fresh", "_calls", "_current")

    def snapshot(self, tables: dict) -> bytes:
        """The declared registry and the modules' ``tables`` as bytes, for ``restore`` in a later
        run of the same derivation sources (the caller keeps it with the SymPy results). Rules
        are kept as references to derivations/rules.py, so restoring runs no lecture module."""
        import pickle

        state = {k: v for k, v in self.__dict__.items() if k not in self._NOT_KEPT}
        return pickle.dumps((state, tables), protocol=pickle.HIGHEST_PROTOCOL)

    @classmethod
    def restore(cls, blob: bytes) -> tuple["Registry", dict]:
        """(registry, tables) from ``snapshot``: the same quantities, equations, sections and
        rules, without declaring anything again. The expressions were stored in SymPy's canonical
        form, so they are rebuilt without re-evaluating them (equal objects, fast)."""
        import pickle

        from sympy.core.parameters import evaluate

        with evaluate(False):
            state, tables = pickle.loads(blob)
        registry = cls()
        registry.__dict__.update(state)
        return registry, tables

    def solve(self, equation: Equation, for_sym: sp.Symbol) -> sp.Expr:
        """Solve a declared equation for one symbol; exactly one positive root is expected."""
        roots = self.roots(equation.lhs, equation.rhs, for_sym, key=("solve", equation.name, for_sym.name))
        if len(roots) != 1:
            raise ValueError(f"equation {equation.name}: expected one root for {for_sym}, got {roots}")
        return roots[0]

    def roots(self, lhs, rhs, for_sym: sp.Symbol, key=None) -> list:
        """SymPy's roots of lhs = rhs (derived symbols expanded to inputs), simplified.
        Either side may be a function returning the expression (built only when not kept)."""
        def compute():
            a, b = (side() if callable(side) else side for side in (lhs, rhs))
            found = sp.solve(sp.Eq(self.expand(a), self.expand(b)), for_sym, dict=False)
            return [sp.simplify(r) for r in found]
        return self.kept(key or self._nth("roots"), compute)

    def at(self, name: str, subs: dict, keep: tuple[str, ...] = ()) -> sp.Expr:
        """The closed form of ``name`` with symbols replaced (e.g. the batch by one sequence)."""
        key = ("at", name, keep, tuple(sorted((str(k), str(v)) for k, v in subs.items())))
        return self.kept(key, lambda: self.closed_form(name, keep).xreplace(subs))

    def limit(self, expr, sym: sp.Symbol, point, direction: str = "+") -> sp.Expr:
        """SymPy's limit, taken through Max/Min branch by branch (each branch is continuous).
        ``expr`` may be a function returning the expression (built only when not kept)."""
        return self.kept(self._nth("limit"),
                         lambda: self._limit(expr() if callable(expr) else expr, sym, point, direction))

    def _limit(self, expr, sym: sp.Symbol, point, direction: str = "+") -> sp.Expr:
        expr = sp.sympify(expr, strict=True)
        if isinstance(expr, (sp.Max, sp.Min)):
            return type(expr)(*[self._limit(a, sym, point, direction) for a in expr.args])
        if isinstance(expr, sp.Mul):
            parts = [a for a in expr.args if isinstance(a, (sp.Max, sp.Min))]
            if parts:  # c * Max(a, b) with c > 0 -> Max(c*a, c*b)
                m = parts[0]
                rest = expr / m
                return self._limit(type(m)(*[rest * a for a in m.args]), sym, point, direction)
        try:
            return sp.limit(expr, sym, point, direction)
        except NotImplementedError:   # gruntz takes no Max/Min: one without sym held as a symbol, a sum term by term
            held = {f: sp.Dummy() for f in expr.atoms(sp.Max, sp.Min) if sym not in f.free_symbols}
            back = {d: f for f, d in held.items()}
            rest = sp.expand_mul(expr.xreplace(held))
            if isinstance(rest, sp.Add) and any(sym in f.free_symbols for f in rest.atoms(sp.Max, sp.Min)):
                return sp.Add(*[self._limit(t, sym, point, direction) for t in rest.args]).xreplace(back)
            if not held:
                raise
            return sp.limit(rest, sym, point, direction).xreplace(back)

    # -- reading --------------------------------------------------------------------------
    def __getitem__(self, name: str) -> Quantity:
        return self.quantities[name]

    def __contains__(self, name: str) -> bool:
        return name in self.quantities

    def q(self, sym: sp.Symbol) -> Quantity:
        return self.by_symbol[sym]

    def inputs(self, origin: str | None = None) -> list[Quantity]:
        return [q for q in self.quantities.values() if q.is_input and (origin is None or q.origin == origin)]

    def derived_quantities(self) -> list[Quantity]:
        return [q for q in self.quantities.values() if not q.is_input]

    def closed_form(self, name: str, keep: tuple[str, ...] = ()) -> sp.Expr:
        """The definition of ``name`` with every derived quantity expanded down to inputs.

        Quantities named in ``keep`` stay as symbols. The result is what SymPy computes;
        it is simplified only where that does not change its shape much (cancel common
        factors), so the printed form stays recognisable.
        """
        key = ("closed", name, keep)
        if key not in self._memo:
            q = self.quantities[name]
            self._memo[key] = q.sym if q.is_input else self.kept(
                key, lambda: _tidy(self.expand(q.expr, keep)))
        return self._memo[key]

    def expand(self, expr: sp.Expr, keep: tuple[str, ...] = ()) -> sp.Expr:
        """Replace derived symbols in ``expr`` by their definitions until only inputs remain."""
        expr = sp.sympify(expr, strict=True)
        for _ in range(50):
            subs = {s: self.by_symbol[s].expr for s in expr.free_symbols
                    if s in self.by_symbol and not self.by_symbol[s].is_input
                    and self.by_symbol[s].name not in keep}
            if not subs:
                break
            expr = expr.xreplace(subs)
        else:  # pragma: no cover - a definition cycle
            raise ValueError(f"{expr}: definitions do not bottom out (a cycle?)")
        return expr

    def closed_text(self, name: str) -> str:
        """SymPy's text of the closed form of ``name`` (results.json's "sympy"), kept between runs:
        printing all of them costs about 0.3 s."""
        return self.kept(("closed form text", name), lambda: str(self.closed_form(name)))

    def leaves(self, name: str) -> list[Quantity]:
        """The input quantities the closed form of ``name`` depends on, in declaration order."""
        key = ("leaves", name)
        if key not in self._memo:
            syms = self.closed_form(name).free_symbols
            self._memo[key] = [q for q in self.quantities.values() if q.sym in syms]
        return self._memo[key]

    def board_form(self, name: str) -> sp.Expr:
        """The closed form of ``name`` with the named constants as numbers (kept between runs)."""
        return self.kept(("board", name), lambda: self.with_constants(self.closed_form(name)))

    def with_constants(self, expr: sp.Expr) -> sp.Expr:
        """Replace each named constant by its magnitude: the board's form, e.g. 2·B·N/(S·F)."""
        from units import parse
        subs = {}
        for s in expr.free_symbols:
            q = self.by_symbol.get(s)
            if q is not None and q.origin == "constant":
                subs[s] = sp.nsimplify(parse(q.default).magnitude)
        return _tidy(expr.xreplace(subs))


def _tidy(expr: sp.Expr) -> sp.Expr:
    if isinstance(expr, (sp.Max, sp.Min)):
        return type(expr)(*[_tidy(a) for a in expr.args], evaluate=False)
    if expr.has(sp.Max, sp.Min):
        return expr
    try:
        return sp.factor_terms(sp.cancel(expr)) if expr.is_rational_function() else expr
    except Exception:  # pragma: no cover - factor failures leave the expression as is
        return expr
