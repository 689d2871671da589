"""The claim audit: every checkable statement of the lecture, judged by stated rules.

claims.yaml says what was claimed, where, which quantity (or expression) tests it, and on
which chips; the verdict is computed here, never typed. Each claim has a kind, saying what
its verdict tested:

* derived     -- the lecture against hardware and model data, through the derivations;
* arithmetic  -- the lecture's own numbers recomputed (values the lecture states are fixed);
* identity    -- a relation between derivations, verified symbolically by SymPy;
* input       -- one datum read back from hardware.yaml or models.yaml (said so, not derived);
* sourced     -- judged against a figure cited from an external source;
* qualitative -- not judged, with the reason.

Judging rules. "About X" holds within a factor (×/÷ tolerance, 1.3 unless the claim says
otherwise) and holds roughly within a wider factor (the band, ×/÷ 2 by default), so no band
ever reaches 0. A bound ("> X", "< X") holds on the claimed side only; otherwise it does not
hold, by the stated percentage. A claim over several chips (a rule of thumb) holds when the
median is within the tolerance and at least two thirds of the distinct chips in its scope
are too; holds roughly when the median is but fewer chips are, or when the median is only
within the band; does not hold when the median is outside the band.

Scope. A claim names its chips: a declared scope (all, GPUs, NVIDIA) or a list. Chips that
share their silicon (claims.yaml `chips.same_silicon`) count once; announced parts are
marked. Each chip is evaluated at its serving format: of the formats the model can be served
in, the one the chip has the highest dense rate for.

Every row carries its evidence: the formula with numbers substituted, the inputs with their
sources, the band, the scope, every chip's value, and a sweep over what can flip the verdict
(context, batch, number formats, activation bytes, chip set, spec-sheet conventions).
"""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

import sympy as sp
import yaml

from derivations import REGISTRY
from units import Quantity, UnitParseError, parse

from . import printers, seeds
from .data import Data, DataError, UniqueKeyLoader
from .evaluate import PIPELINE_CHAPTERS, InputError, MissingInput, Scenario, placeholders, walk
from .fmt import fmt, sig, unit_words
from . import FEATURED_HARDWARE as DEFAULT_HARDWARE, FEATURED_MODEL as DEFAULT_MODEL

KINDS = ("derived", "arithmetic", "identity", "input", "sourced", "qualitative")
KIND_TEXT = {
    "derived": "tested against hardware and model data",
    "arithmetic": "the lecture's own numbers recomputed",
    "identity": "verified symbolically by SymPy",
    "input": "a datum read back from the data files",
    "sourced": "judged against a cited external figure",
    "qualitative": "not judged, with the reason",
}
HOLDS, ROUGHLY, FAILS, ND = "holds", "holds roughly", "does not hold", "not judged"
VERDICTS = (HOLDS, ROUGHLY, FAILS, ND)
CSS = {HOLDS: "v-holds", ROUGHLY: "v-roughly", FAILS: "v-fails", ND: "v-nd"}
DEFAULT_TOLERANCE = 1.3      # "about X": within ×/÷ 1.3
DEFAULT_BAND = 2.0           # "roughly": within ×/÷ 2 (for tolerances of 1.3 or more)
TWO_THIRDS = 2 / 3
GIB_PER_GB = (parse("1 GiB") / parse("1 GB")).to("").magnitude
SPARSE_HEADLINE_FACTOR = 2   # 2:4 structured sparsity: the headline FLOP/s is twice the dense rate
FORMATS = ("fp4", "fp8", "int8", "bf16")
CONTEXTS = (1024, 8192, 32768, 131072)
BATCHES = (1, 64, 512, 2000, 16384)
_EDGE = 1e-9                 # a value exactly on a band edge counts as inside it
_PLACEHOLDER = re.compile(r"\{([a-z0-9_]+)\}")


# -- judging ------------------------------------------------------------------------------------
def judge(value: float, low: float, high: float, tolerance: float = DEFAULT_TOLERANCE,
          band: float = DEFAULT_BAND, compare: str | None = None) -> str:
    """One number against a claim. ``tolerance`` and ``band`` are factors (×/÷), both > 1.

    A value claim (low = high) or a range [low, high] holds within [low/tolerance,
    high·tolerance] and holds roughly within [low/band, high·band]; a non-positive value
    never holds. A bound ('>' or '<' low) holds on the claimed side and otherwise does not.
    """
    if compare == ">":
        return HOLDS if value > low else FAILS
    if compare == "<":
        return HOLDS if value < low else FAILS
    if not value > 0:
        return FAILS
    if low / tolerance * (1 - _EDGE) <= value <= high * tolerance * (1 + _EDGE):
        return HOLDS
    if low / band * (1 - _EDGE) <= value <= high * band * (1 + _EDGE):
        return ROUGHLY
    return FAILS


def judge_rule(values: list[float], low: float, high: float, tolerance: float = DEFAULT_TOLERANCE,
               band: float = DEFAULT_BAND, compare: str | None = None) -> tuple[str, float, int]:
    """A rule of thumb over several distinct chips: (verdict, median, number within tolerance).

    Holds when the median holds and at least two thirds of the values do; holds roughly when
    the median holds but fewer values do, or when the median is only within the band; does not
    hold when the median is outside the band.
    """
    med = statistics.median(values)
    inside = sum(1 for v in values if judge(v, low, high, tolerance, band, compare) == HOLDS)
    on_median = judge(med, low, high, tolerance, band, compare)
    if on_median != HOLDS:
        return on_median, med, inside
    return (HOLDS if inside >= TWO_THIRDS * len(values) - _EDGE else ROUGHLY), med, inside


def miss_text(value: float, low: float, high: float, compare: str | None) -> str:
    """How far a value that does not hold is from the claim."""
    if compare in (">", "<"):
        if low == 0:
            return f"on the wrong side of {sig(low)}"
        return f"does not hold by {abs(value / low - 1) * 100:.0f}%"
    if not value > 0:
        return "not a positive number"
    factor = value / high if value > high else low / value
    return f"off by ×{sig(factor)}"


def band_text(part) -> str:
    lo, hi = part.low, part.high
    if part.compare:
        return f"{part.compare} {sig(lo)} (the claimed side only)"
    t, b = part.tolerance, part.band
    return (f"×/÷{sig(t)}: {sig(lo / t)}–{sig(hi * t)}; roughly ×/÷{sig(b)}: "
            f"{sig(lo / b)}–{sig(hi * b)}")


# -- chips: scopes, same silicon, announced parts, serving formats -----------------------------
@dataclass
class Chips:
    same_silicon: dict[str, list[str]] = field(default_factory=dict)   # counted chip -> same-silicon others
    announced: list[str] = field(default_factory=list)
    scopes: dict[str, dict] = field(default_factory=dict)             # name -> {"vendor": [...], "text": ...}
    serving_formats: dict[str, list[str]] = field(default_factory=dict)  # model id or "default" -> formats

    def group_of(self, hid: str) -> str | None:
        """The same-silicon group ``hid`` belongs to, named by its representative, or None."""
        for rep, members in self.same_silicon.items():
            if hid == rep or hid in members:
                return rep
        return None

    def resolve(self, data: Data, scope) -> tuple[str, list[str]]:
        """(scope name, hardware ids in file order) for a scope name, a list or one id."""
        if isinstance(scope, list):
            return "named chips", list(scope)
        if scope in self.scopes:
            want = self.scopes[scope].get("vendor")
            ids = [h for h, e in data.hardware.items() if want is None or e.tags.get("vendor") in want]
            return scope, ids
        return "one chip", [scope]

    def serving_format(self, hw, model_id: str) -> str | None:
        usable = self.serving_formats.get(model_id) or self.serving_formats.get("default") or []
        rated = [(hw.values[f"flops_{f}"].quantity.magnitude, f) for f in usable if f"flops_{f}" in hw.values]
        return max(rated)[1] if rated else None


def _load_chips(label: str, data: Data, doc: dict) -> Chips:
    raw = doc.get("chips") or {}
    if not isinstance(raw, dict):
        raise DataError(label, "chips", None, "expected a mapping")
    ch = Chips()
    for rep, members in (raw.get("same_silicon") or {}).items():
        members = members if isinstance(members, list) else [members]
        for h in [rep, *members]:
            if h not in data.hardware:
                raise DataError(label, "chips", "same_silicon", f"unknown hardware id {h!r}")
        ch.same_silicon[rep] = list(members)
    for h in raw.get("announced") or []:
        if h not in data.hardware:
            raise DataError(label, "chips", "announced", f"unknown hardware id {h!r}")
        ch.announced.append(h)
    for name, spec in (raw.get("scopes") or {}).items():
        if not isinstance(spec, dict):
            raise DataError(label, "chips", f"scopes.{name}", "expected {vendor: [...], text: ...}")
        ch.scopes[str(name)] = spec
    ch.scopes.setdefault("all", {"text": "every chip in hardware.yaml"})
    for mid, fmts in (raw.get("serving_formats") or {}).items():
        if mid != "default" and mid not in data.models:
            raise DataError(label, "chips", "serving_formats", f"unknown model id {mid!r}")
        for f in fmts:
            if f not in FORMATS:
                raise DataError(label, "chips", "serving_formats", f"{f!r} is not one of {', '.join(FORMATS)}")
        ch.serving_formats[mid] = list(fmts)
    return ch


# -- claims -------------------------------------------------------------------------------------
@dataclass
class Part:
    """One number a claim is judged on: an expression in quantities, and what was claimed."""
    expr: sp.Expr
    label: str                    # the quantity's name or the expression as written
    quantity: str | None          # set when the expression is one declared quantity
    claimed: tuple                # (low, high) Pint quantities
    claimed_text: str
    compare: str | None
    tolerance: float
    band: float

    @property
    def low(self):
        return self.claimed[0].magnitude

    @property
    def high(self):
        return self.claimed[1].magnitude

    @property
    def unit(self):
        return self.claimed[0].units


@dataclass
class Claim:
    id: str
    where: list[str]
    quote: str
    claim: str
    kind: str
    parts: list[Part] = field(default_factory=list)
    checks: list[tuple[str, sp.Expr, sp.Expr]] = field(default_factory=list)  # identity: (text, lhs, rhs)
    scope_name: str = "one chip"
    hardware: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    relative_to: dict | None = None
    set: dict = field(default_factory=dict)
    given: dict = field(default_factory=dict)
    cited: dict | None = None     # sourced: label -> Pint quantity
    also_on: list[str] = field(default_factory=list)
    inherits: str | None = None
    reading: str | None = None
    source: str | None = None
    why: str | None = None
    note: str | None = None

    @property
    def quantity(self):
        return self.parts[0].quantity if len(self.parts) == 1 else None

    @property
    def claimed_text(self):
        return "; ".join(p.claimed_text for p in self.parts)


def _locals():
    return {name: q.sym for name, q in REGISTRY.quantities.items()}


def _expand(e):
    return REGISTRY.expand(sp.sympify(e))


def _parse_expr(label, cid, fld, text: str, with_helpers: bool = False) -> sp.Expr:
    """A claim's expression in quantities. Identity checks may also use d(e, q) (the derivative
    of e, expanded to inputs, by the quantity q), at(e, q, v) (e with q replaced by v) and
    lhs(EQ) / rhs(EQ) (the sides of the declared equation EQ, whose own free symbols, such as
    the halves of a reversible map, are then allowed)."""
    loc = _locals()
    local_symbols = set()   # the free symbols of equations named by lhs()/rhs(): not quantities
    if with_helpers:
        loc["d"] = lambda e, x: sp.diff(_expand(e), x)
        loc["at"] = lambda e, x, v: _expand(e).xreplace({x: _expand(v)})

        def side(which):
            def get(name):
                eq = REGISTRY.equations.get(str(name))
                if eq is None:
                    raise DataError(label, cid, fld, f"{text!r}: {which}({name}) names no declared equation")
                local_symbols.update(eq.free)
                return getattr(eq, which)
            return get
        loc["lhs"], loc["rhs"] = side("lhs"), side("rhs")
    def read():
        try:
            return sp.sympify(text, locals=loc), frozenset(local_symbols)
        except (sp.SympifyError, SyntaxError, TypeError, AttributeError) as e:
            raise DataError(label, cid, fld, f"cannot read {text!r}: {e}") from None
    # SymPy's parse (and the derivatives d() takes) kept between runs, like the derivations' solves
    expr, local_symbols = REGISTRY.kept(("claim expression", text, with_helpers), read)
    unknown = [str(s) for s in expr.free_symbols if s not in REGISTRY.by_symbol and s not in local_symbols]
    if unknown:
        raise DataError(label, cid, fld, f"{text!r}: unknown quantity {', '.join(sorted(unknown))}")
    return expr


def _resolve_name(label, cid, fld, name: str) -> str:
    """A quantity name, or 'a|b': the first of them that is declared."""
    for n in str(name).split("|"):
        if n.strip() in REGISTRY:
            return n.strip()
    raise DataError(label, cid, fld, f"unknown quantity {name!r}")


def _positive_factor(label, cid, c, key, default):
    v = c.get(key, default)
    try:
        v = float(v)
    except (TypeError, ValueError):
        raise DataError(label, cid, key, f"expected a factor such as 1.3, got {v!r}") from None
    if not v > 1:
        raise DataError(label, cid, key, f"a factor ×/÷ above 1 (e.g. 1.3 for 'about'), got {v:g}")
    return v


def _parse_claimed(label, cid, raw):
    try:
        if isinstance(raw, list):
            if len(raw) != 2:
                raise DataError(label, cid, "claimed", "a range is [low, high]")
            lo, hi = parse(str(raw[0])), parse(str(raw[1]))
            if lo.dimensionality != hi.dimensionality:
                raise DataError(label, cid, "claimed", "the two ends of the range differ in dimension")
            hi = hi.to(lo.units)
            if not 0 < lo.magnitude <= hi.magnitude:
                raise DataError(label, cid, "claimed", "a range needs 0 < low <= high")
            return (lo, hi), f"{fmt(lo)} – {fmt(hi)}", None
        text = str(raw).strip()
        compare = None
        if text[:1] in "<>":
            compare, text = text[0], text[1:].strip()
        q = parse(text)
        if compare is None and not q.magnitude > 0:
            raise DataError(label, cid, "claimed", "a value claim is judged by ratio: it must be positive")
        shown = fmt(q, f"{q.units:~P}" if not q.dimensionless else None)
        return (q, q), (f"{compare} {shown}" if compare else shown), compare
    except UnitParseError as e:
        raise DataError(label, cid, "claimed", str(e)) from None


def _mapping(label, cid, c, key):
    v = c.get(key)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise DataError(label, cid, key, "expected a mapping (name: value)")
    return v


def _dimension_of(expr):
    return walk(expr, placeholders(), where="claim").dimensionality


def _part(label, cid, c, relative: bool, fld_prefix="") -> Part:
    if c.get("quantity") is not None and c.get("expr") is not None:
        raise DataError(label, cid, fld_prefix + "quantity", "give a quantity or an expr, not both")
    if c.get("quantity") is not None:
        name = _resolve_name(label, cid, fld_prefix + "quantity", c["quantity"])
        expr, shown, qname = REGISTRY[name].sym, name, name
    elif c.get("expr") is not None:
        expr = _parse_expr(label, cid, fld_prefix + "expr", str(c["expr"]))
        shown, qname = str(c["expr"]), None
    else:
        raise DataError(label, cid, fld_prefix + "quantity", "needed: the quantity (or expr) that tests the claim")
    if c.get("claimed") is None:
        raise DataError(label, cid, fld_prefix + "claimed", "needed: what the lecture claimed")
    claimed, claimed_text, compare = _parse_claimed(label, cid, c["claimed"])
    try:
        dim = _dimension_of(expr)
    except Exception as e:  # a dimension error in an expression
        raise DataError(label, cid, fld_prefix + "expr", f"{shown}: {e}") from None
    want = Quantity(1, "").dimensionality if relative else dim
    if claimed[0].dimensionality != want:
        what = "a ratio (bare number)" if relative else f"{shown} ({dim or 'a bare number'})"
        raise DataError(label, cid, fld_prefix + "claimed", f"{c['claimed']!r} does not have the dimension of {what}")
    tol = _positive_factor(label, cid, c, "tolerance", DEFAULT_TOLERANCE)
    band = _positive_factor(label, cid, c, "band", DEFAULT_BAND if tol >= DEFAULT_TOLERANCE else tol ** 2)
    if band < tol:
        raise DataError(label, cid, fld_prefix + "band", "the 'roughly' band must be at least the tolerance")
    return Part(expr, shown, qname, claimed, claimed_text, compare, tol, band)


def load_claims(path: Path, label: str, data: Data, seed_places: dict | None = None,
                chips: Chips | None = None, doc: dict | None = None) -> list[Claim]:
    doc = _read(path, label) if doc is None else doc   # ``doc``: the file already read
    chips = chips or _load_chips(label, data, doc)
    out, seen = [], set()
    for i, c in enumerate(doc["claims"]):
        if not isinstance(c, dict) or "id" not in c:
            raise DataError(label, f"claims[{i}]", "id", "missing")
        cid = str(c["id"])
        if cid in seen:
            raise DataError(label, cid, "id", "duplicate id")
        seen.add(cid)
        claim = _load_claim(label, data, chips, c, cid, seed_places)
        out.append(claim)
    ids = {c.id for c in out}
    for c in out:
        if c.inherits is not None and c.inherits not in ids:
            raise DataError(label, c.id, "inherits", f"unknown claim id {c.inherits!r}")
    for c in out:
        _check_scenario(data, chips, c, label)
    return out


def _read(path: Path, label: str) -> dict:
    try:
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=UniqueKeyLoader)
    except FileNotFoundError:
        raise DataError(label, None, None, "file not found") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        raise DataError(label, None, None, f"YAML syntax error at {where}{getattr(e, 'problem', e)}") from None
    return _claims_document(doc, label)


def _claims_document(doc, label: str) -> dict:
    if not isinstance(doc, dict) or not isinstance(doc.get("claims"), list):
        raise DataError(label, None, "claims", "expected a list under 'claims'")
    return doc


def _load_claim(label, data, chips: Chips, c: dict, cid: str, seed_places) -> Claim:
    for f in ("where", "quote", "claim", "kind"):
        if not c.get(f):
            raise DataError(label, cid, f, "missing")
    kind = c["kind"]
    if kind not in KINDS:
        raise DataError(label, cid, "kind", f"{kind!r} is not one of {', '.join(KINDS)}")
    where = c["where"] if isinstance(c["where"], list) else [c["where"]]
    for f in ("quote", "claim"):
        if not isinstance(c[f], str):
            raise DataError(label, cid, f, f"expected text, got a {type(c[f]).__name__}")
    for w in where:
        if not seeds.WHERE.match(str(w)):
            raise DataError(label, cid, "where", f"{w!r} is not 'FILE.txt:LINE', 'FILE.txt@M:SS' or "
                                                 "'chapters-3-7.md#ID'")
        if seed_places is not None and str(w) not in seed_places:
            raise DataError(label, cid, "where", f"{w!r} is not a line or speaker turn of the seeds")
    if seed_places is not None and not any(seeds.normalise(c["quote"]) in seeds.normalise(seed_places[str(w)])
                                           for w in where):
        raise DataError(label, cid, "quote", f"not found in the cited seed text ({', '.join(map(str, where))})")
    scope = c.get("scope", DEFAULT_HARDWARE)
    if not isinstance(scope, (str, list)):
        raise DataError(label, cid, "scope", "expected a scope name, a hardware id or a list of ids")
    if isinstance(scope, str) and scope not in chips.scopes and scope not in data.hardware:
        raise DataError(label, cid, "scope", f"{scope!r} is neither a declared scope "
                        f"({', '.join(chips.scopes)}) nor a hardware id")
    scope_name, hw = chips.resolve(data, scope)
    for h in hw:
        if h not in data.hardware:
            raise DataError(label, cid, "scope", f"unknown hardware id {h!r}")
    model = c.get("model", DEFAULT_MODEL)
    models = list(model) if isinstance(model, list) else [model]
    for m in models:
        if m not in data.models:
            raise DataError(label, cid, "model", f"unknown model id {m!r}")
    rel = c.get("relative_to")
    if rel is not None:
        if not isinstance(rel, dict) or not set(rel) <= {"hardware", "model", "set"}:
            raise DataError(label, cid, "relative_to", "expected {hardware: ID|previous, model: ID, set: {...}}")
        h = rel.get("hardware")
        if h is not None and h != "previous" and h not in data.hardware:
            raise DataError(label, cid, "relative_to", f"unknown hardware id {h!r}")
        if rel.get("model") is not None and rel["model"] not in data.models:
            raise DataError(label, cid, "relative_to", f"unknown model id {rel['model']!r}")
        rel = {**rel, "set": {k: str(v) for k, v in (rel.get("set") or {}).items()}}
    for f in ("note", "why", "reading"):
        for name in _PLACEHOLDER.findall(str(c.get(f) or "")):
            if name not in REGISTRY:
                raise DataError(label, cid, f, f"placeholder {{{name}}} is not a quantity")
    claim = Claim(
        id=cid, where=[str(w) for w in where], quote=str(c["quote"]), claim=str(c["claim"]), kind=kind,
        scope_name=scope_name, hardware=hw, models=models, relative_to=rel,
        set={k: str(v) for k, v in _mapping(label, cid, c, "set").items()},
        given={k: str(v) for k, v in _mapping(label, cid, c, "given").items()},
        also_on=[str(h) for h in (c.get("also_on") or [])], inherits=c.get("inherits"),
        reading=c.get("reading"), source=c.get("source"), why=c.get("why"), note=c.get("note"))
    for h in claim.also_on:
        if h not in data.hardware:
            raise DataError(label, cid, "also_on", f"unknown hardware id {h!r}")
    if kind == "identity":
        checks = c.get("checks")
        if not isinstance(checks, list) or not checks:
            raise DataError(label, cid, "checks", "an identity lists the relations SymPy verifies ('a == b')")
        for text in checks:
            if not isinstance(text, str) or text.count("==") != 1:
                raise DataError(label, cid, "checks", f"{text!r}: expected 'expression == expression'")
            lhs, rhs = (s.strip() for s in text.split("=="))
            claim.checks.append((text, _parse_expr(label, cid, "checks", lhs, True),
                                 _parse_expr(label, cid, "checks", rhs, True)))
    elif kind == "qualitative":
        if not c.get("why"):
            raise DataError(label, cid, "why", "a qualitative claim says why it is not judged")
    elif kind == "sourced":
        if not c.get("source"):
            raise DataError(label, cid, "source", "a sourced claim names its source")
        cited = c.get("cited")
        if cited is None:
            raise DataError(label, cid, "cited", "a sourced claim gives the cited figure(s) it is judged against")
        cited = cited if isinstance(cited, dict) else {"cited": cited}
        claimed, claimed_text, compare = _parse_claimed(label, cid, c.get("claimed"))
        vals = {}
        for k, v in cited.items():
            try:
                q = parse(str(v))
            except UnitParseError as e:
                raise DataError(label, cid, "cited", f"{k}: {e}") from None
            if q.dimensionality != claimed[0].dimensionality:
                raise DataError(label, cid, "cited", f"{k}: {v!r} does not have the dimension of the claim")
            vals[str(k)] = q.to(claimed[0].units)
        claim.cited = vals
        claim.parts = [Part(sp.Integer(1), "cited figure", None, claimed, claimed_text, compare,
                            _positive_factor(label, cid, c, "tolerance", DEFAULT_TOLERANCE),
                            _positive_factor(label, cid, c, "band", DEFAULT_BAND))]
    else:
        specs = c.get("parts") or [c]
        for j, spec in enumerate(specs):
            if not isinstance(spec, dict):
                raise DataError(label, cid, "parts", "each part is {quantity|expr, claimed, tolerance?}")
            merged = {**{k: c[k] for k in ("tolerance", "band") if k in c}, **spec}
            claim.parts.append(_part(label, cid, merged, rel is not None,
                                     f"parts[{j}]." if "parts" in c else ""))
    return claim


def _check_scenario(data, chips, claim: Claim, label: str) -> None:
    """Build the claim's first scenario now, so a bad `set` or `given` names claims.yaml."""
    if claim.kind in ("identity", "sourced", "qualitative"):
        return
    hid, mid = claim.hardware[0], claim.models[0]
    try:
        sc = Scenario(data, hid, mid, {**_serving(chips, data, hid, mid, claim), **claim.set})
    except (InputError, UnitParseError, MissingInput) as e:
        raise DataError(label, claim.id, "set", str(e)) from None
    for name, text in claim.given.items():
        try:
            sc.fix(name, text)
        except (InputError, UnitParseError) as e:
            raise DataError(label, claim.id, "given", str(e)) from None


# -- evaluating ---------------------------------------------------------------------------------
def _serving(chips: Chips, data, hid: str, mid: str, claim: Claim, extra: dict | None = None) -> dict:
    """The chip's serving format as an override, unless the claim or a variant sets a format."""
    keys = set(claim.set) | set(extra or {})
    if keys & {"format", "weight_format", "compute_format"}:
        return {}
    f = chips.serving_format(data.hardware[hid], mid)
    return {"format": f} if f else {}


def _scenario(ctx, claim: Claim, hid: str, mid: str, extra: dict | None = None, tweak=None) -> Scenario:
    data = ctx.data
    sc = Scenario(data, hid, mid, {**_serving(ctx.chips, data, hid, mid, claim, extra), **claim.set, **(extra or {})})
    for name, text in claim.given.items():
        sc.fix(name, text)
    if tweak is not None:
        tweak(sc, hid)
    return sc


def _eval(sc: Scenario, expr) -> object:
    return walk(expr, lambda s: sc.value(REGISTRY.q(s).name), where="claim")


@dataclass
class Entry:
    key: str
    hardware: str
    model: str
    reference: tuple | None = None     # (hardware, model) of a ratio's denominator
    counted: bool = True
    mark: str | None = None            # "announced", "same silicon as X, counted once"
    group: str | None = None           # the same-silicon group's counted chip, if any


def _entries(ctx, claim: Claim, hardware: list[str] | None = None) -> list[Entry]:
    hw = list(hardware if hardware is not None else claim.hardware)
    models = claim.models
    rel = claim.relative_to or {}
    out = []
    pairs = []
    if rel.get("hardware") == "previous":
        for prev, h in zip(hw, hw[1:]):
            for m in models:
                pairs.append((f"{h} / {prev}", h, m, (prev, rel.get("model", m))))
    else:
        for h in hw:
            for m in models:
                key = h if len(models) == 1 else (m if len(hw) == 1 else f"{h} × {m}")
                ref = (rel.get("hardware", h), rel.get("model", m)) if rel else None
                pairs.append((key, h, m, ref))
    for key, h, m, ref in pairs:
        e = Entry(key, h, m, ref)
        if rel.get("hardware") != "previous":
            e.group = ctx.chips.group_of(h)
        out.append(e)
    _mark(ctx, out, {e.key: 1.0 for e in out})
    return out


def _mark(ctx, entries: list[Entry], vals: dict) -> None:
    """Count one entry per distinct chip among those evaluated: of a same-silicon group, its
    representative if it has a value, else the first member that does."""
    chosen = {}
    for e in entries:
        if e.group is not None and e.key in vals:
            if e.group not in chosen or e.hardware == e.group:
                chosen[e.group] = e
    for e in entries:
        e.counted, e.mark = True, None
        if e.group is not None and e.key in vals and chosen.get(e.group) is not e:
            other = chosen[e.group]
            e.counted, e.mark = False, f"same silicon as {other.hardware}, counted once"
        elif e.hardware in ctx.chips.announced:
            e.mark = "announced"


def _value(ctx, claim: Claim, part: Part, e: Entry, extra=None, tweak=None) -> float:
    sc = _scenario(ctx, claim, e.hardware, e.model, extra, tweak)
    q = _eval(sc, part.expr)
    if e.reference is not None:
        rh, rm = e.reference
        rel_set = (claim.relative_to or {}).get("set") or {}
        rsc = _scenario(ctx, claim, rh, rm, {**(extra or {}), **rel_set}, tweak)
        q = q / _eval(rsc, part.expr)
    return float(q.to(part.unit).magnitude)


@dataclass
class Verdict:
    claim: Claim
    verdict: str
    computed: dict | None = None
    computed_text: str = "–"
    detail: str = ""
    band: str = ""
    scope: str = ""
    values: dict = field(default_factory=dict)      # key -> {"value", "verdict", "counted", "mark", ...}
    inputs: list = field(default_factory=list)      # [{"name","value","source"}]
    formula: tuple | None = None                    # (text, mathml, typst), numbers substituted
    flips_if: list = field(default_factory=list)
    sensitivity: list = field(default_factory=list)
    fit: list = field(default_factory=list)         # set-ups that do not fit in HBM
    miss: str = ""
    inherited_by: list = field(default_factory=list)
    note: str | None = None
    why: str | None = None
    reading: str | None = None


class _Ctx:
    def __init__(self, data, chips):
        self.data, self.chips = data, chips


def _judge_entries(claim: Claim, part: Part, vals: dict, entries: list[Entry]):
    """(verdict, summary) for one part over its evaluated entries."""
    counted = [vals[e.key] for e in entries if e.key in vals and e.counted]
    if not counted:
        return None, None
    args = (part.low, part.high, part.tolerance, part.band, part.compare)
    if len(counted) == 1:
        return judge(counted[0], *args), counted[0]
    verdict, med, _ = judge_rule(counted, *args)
    return verdict, med


def _evaluate_part(ctx, claim, part, entries, extra=None, tweak=None):
    vals, skipped = {}, {}
    for e in entries:
        try:
            vals[e.key] = _value(ctx, claim, part, e, extra, tweak)
        except (MissingInput, InputError) as err:
            skipped[e.key] = str(err)
    _mark(ctx, entries, vals)
    return vals, skipped


def _worst(verdicts):
    order = {HOLDS: 0, ROUGHLY: 1, FAILS: 2}
    vs = [v for v in verdicts if v is not None]
    return max(vs, key=order.get) if vs else None


def _overall(ctx, claim, entries, extra=None, tweak=None):
    """The claim's verdict (all parts) for a variant, or None when nothing evaluates."""
    out = []
    for part in claim.parts:
        vals, _ = _evaluate_part(ctx, claim, part, entries, extra, tweak)
        v, _ = _judge_entries(claim, part, vals, entries)
        if v is None:
            return None, None
        out.append((v, vals))
    return _worst([v for v, _ in out]), out


def _inputs_used(sc: Scenario, claim: Claim, expr) -> list[dict]:
    """The inputs an expression read, stopping at values the claim fixes."""
    seen, out = set(), []

    def visit(name):
        if name in seen:
            return
        seen.add(name)
        q = REGISTRY[name]
        if name in claim.given:
            src = f"fixed by the claim (the lecture's {claim.given[name]})"
            out.append({"name": name, "value": fmt(sc.value(name)), "source": src, "short": src})
            return
        if q.is_input:
            sc.input(name)
            r = sc.records.get(name)
            out.append({"name": name, "value": fmt(sc.value(name)) if not sc.value(name).dimensionless else sig(sc.value(name).magnitude),
                        "source": r.source if r else "", "url": getattr(r, "url", None),
                        "short": ": ".join((r.source if r else "").split(": ")[:2])})
            return
        for s in sorted(q.expr.free_symbols, key=str):
            visit(REGISTRY.q(s).name)
    for s in sorted(sp.sympify(expr).free_symbols, key=str):
        visit(REGISTRY.q(s).name)
    return out


def _formula(sc: Scenario, part: Part):
    """The part's definition with each symbol's value substituted: (text, mathml, typst)."""
    expr = REGISTRY[part.quantity].expr if part.quantity and not REGISTRY[part.quantity].is_input else part.expr
    if part.quantity and REGISTRY[part.quantity].is_input:
        return None
    values = {s: sc.value(REGISTRY.q(s).name) for s in expr.free_symbols}
    lhs = REGISTRY[part.quantity] if part.quantity else None
    text, ml, ty = printers.with_values(expr, values)
    if lhs is not None:
        sym = printers.text_symbol(lhs)
        text = f"{sym} = {text}"
    return text, ml, ty


def _leaves(claim: Claim) -> set[str]:
    names = set()
    for part in claim.parts:
        for s in part.expr.free_symbols:
            names.add(REGISTRY.q(s).name)
    leaves = set()
    for n in names - set(claim.given):
        leaves |= {q.name for q in REGISTRY.leaves(n)} if not REGISTRY[n].is_input else {n}
    return leaves


def _depends_on(claim: Claim, names) -> bool:
    """Whether a part's value still depends on any of ``names`` once common factors cancel
    (a ratio of two KV reads does not depend on the batch)."""
    for part in claim.parts:
        free = REGISTRY.kept(("claim part inputs", str(part.expr), tuple(sorted(claim.given))),
                             lambda: _free_names(part.expr, claim.given))
        if set(names) & free:
            return True
    return False


def _free_names(expr, given) -> frozenset:
    """The quantities an expression still depends on once common factors cancel."""
    e = _expand(expr).xreplace({REGISTRY[k].sym: sp.Symbol(k + "_given", positive=True) for k in given})
    try:
        free = e.free_symbols if e.has(sp.Max, sp.Min, sp.floor) else sp.cancel(e).free_symbols
    except Exception:
        free = e.free_symbols
    return frozenset(REGISTRY.q(s).name for s in free if s in REGISTRY.by_symbol)


def _gib_flip(sc, hid):
    """Read the chip's HBM capacity in the other binary/decimal unit than its source wrote."""
    text = sc.data.hardware[hid].values["hbm_capacity"].text
    cap = sc.input("hbm_capacity")
    sc.fix("hbm_capacity", cap / GIB_PER_GB if "GiB" in text else cap * GIB_PER_GB)


def _sparse(sc, hid):
    sc.fix("peak_flops", sc.input("peak_flops") * SPARSE_HEADLINE_FACTOR)


def _variants(ctx, claim: Claim, entries: list[Entry]):
    """(label, extra overrides, tweak, hardware list or None) that may move the verdict."""
    leaves = _leaves(claim)
    base = _scenario(ctx, claim, entries[0].hardware, entries[0].model)
    out = []

    def current(name):
        try:
            return base.value(name).magnitude
        except (MissingInput, InputError):
            return None
    if "context" in leaves and "context" not in claim.given:
        now = current("context")
        for L in CONTEXTS:
            if now is None or abs(L - now) > 0.5:
                out.append((f"context {L:,} tokens", {"context": f"{L} token/sequence"}, None, None))
    if "batch" in leaves and "batch" not in claim.given:
        now = current("batch")
        for b in BATCHES:
            if now is None or abs(b - now) > 0.5:
                out.append((f"batch {b:,}", {"batch": f"{b} sequence"}, None, None))
    if {"peak_flops", "bytes_per_weight"} & leaves and "format" not in claim.set:
        have = set()
        for e in entries:
            have |= {f for f in FORMATS if f"flops_{f}" in ctx.data.hardware[e.hardware].values}
        for f in FORMATS:
            if f in have:
                out.append((f"format {f}" + (" (chips with that rate)" if len(entries) > 1 else ""), {"format": f}, None, None))
    if "bytes_per_kv_number" in leaves or "kv_bytes_per_token" in leaves:
        out.append(("KV cache in fp8", {"kv_format": "fp8"}, None, None))
    if "bytes_per_activation" in leaves:
        out.append(("fp8 activations in the all-to-all (1 byte)", {"bytes_per_activation": "1 byte"}, None, None))
    if "hbm_capacity" in leaves:
        out.append(("HBM capacity read as GiB for GB (or back)", {}, _gib_flip, None))
    if "peak_flops" in leaves:
        out.append(("2:4-sparse headline FLOP/s instead of dense", {}, _sparse, None))
    multi = sum(1 for e in entries if e.counted) > 1
    if multi and claim.relative_to is None or (multi and (claim.relative_to or {}).get("hardware") != "previous"):
        present = set(claim.hardware)
        if claim.scope_name != "nvidia" and any(ctx.data.hardware[h].tags.get("vendor") != "NVIDIA" for h in present):
            out.append(("NVIDIA chips only", {}, None,
                        [h for h in claim.hardware if ctx.data.hardware[h].tags.get("vendor") == "NVIDIA"]))
        if claim.scope_name not in ("all", "named chips"):
            out.append(("every chip in hardware.yaml", {}, None, list(ctx.data.hardware)))
        if any(h in ctx.chips.announced for h in present):
            out.append(("without announced parts", {}, None, [h for h in claim.hardware if h not in ctx.chips.announced]))
    for h in claim.also_on:
        out.append((f"on {h}", {}, None, [h]))
    return out


def _sweep(ctx, claim: Claim, entries: list[Entry], verdict: str, base_vals: list[dict]):
    flips, moves = [], []
    part0 = claim.parts[0]
    base_key = next((e.key for e in entries if e.counted and e.key in base_vals[0]), None)
    for label, extra, tweak, hw in _variants(ctx, claim, entries):
        ents = entries if hw is None else _entries(ctx, claim, hw)
        try:
            v, per_part = _overall(ctx, claim, ents, extra, tweak)
        except (MissingInput, InputError):
            continue
        if v is None:
            continue
        vals = per_part[0][1]
        counted = [vals[e.key] for e in ents if e.counted and e.key in vals]
        shown = (sig(counted[0]) if len(counted) == 1 else f"median {sig(statistics.median(counted))}") + _unit_suffix(part0)
        if v != verdict:
            flips.append(f"{label}: {v} ({shown})")
        elif hw is None and base_key is not None and base_key in vals and base_vals[0][base_key]:
            change = vals[base_key] / base_vals[0][base_key] - 1
            if abs(change) >= 0.01:
                moves.append(f"{label}: {sig(vals[base_key])}{_unit_suffix(part0)} ({change * 100:+.0f}%)")
    return flips, moves


def _unit_suffix(part: Part) -> str:
    u = f"{part.unit:~P}"
    return f" {unit_words(_PLURAL.get(u, u))}" if u and u != "dimensionless" else ""


def evaluate_claim(data, claim: Claim, chips: Chips | None = None) -> Verdict:
    ctx = _Ctx(data, chips or _default_chips(data))
    if claim.kind == "qualitative":
        why = claim.why + (f" Source: {claim.source}" if claim.source else "")
        v = Verdict(claim, ND, detail=why, scope=_scope_text(ctx, claim, _entries(ctx, claim)) if claim.parts else "")
    elif claim.kind == "identity":
        v = _identity(claim)
    elif claim.kind == "sourced":
        v = _sourced(claim)
    else:
        v = _numeric(ctx, claim)
    v.note = _fill(ctx, claim, claim.note, "note")
    v.why = _fill(ctx, claim, claim.why, "why")
    v.reading = _fill(ctx, claim, claim.reading, "reading")
    if claim.kind == "qualitative":
        v.detail = v.why + (f" Source: {claim.source}" if claim.source else "")
    return v


def _symbolic_check(text: str, lhs, rhs) -> tuple[bool, str | None]:
    """Whether lhs = rhs once both are expanded to inputs; if not, what the difference is."""
    a, b = _expand(lhs), _expand(rhs)
    diff = sp.simplify(a - b)
    ok = diff == 0
    if not ok and not diff.has(sp.Max, sp.Min):
        ok = sp.simplify(sp.expand(a) - sp.expand(b)) == 0
    if ok:
        return True, None
    try:
        return False, f"{text}: the difference is {printers.text(diff)}, not 0"
    except Exception:
        return False, f"{text}: the difference does not simplify to 0"


def _identity(claim: Claim) -> Verdict:
    results, failed = [], []
    for text, lhs, rhs in claim.checks:
        ok, why = REGISTRY.kept(("claim identity", text), lambda: _symbolic_check(text, lhs, rhs))
        results.append({"check": text, "holds": ok})
        if not ok:
            failed.append(why)
    verdict = HOLDS if not failed else FAILS
    detail = "SymPy expands both sides to inputs and simplifies the difference: " + (
        "0 for every relation" if not failed else "; ".join(failed))
    text = "; ".join(("✓ " if r["holds"] else "✗ ") + r["check"] for r in results)
    return Verdict(claim, verdict, {"checks": results}, text, detail, band="exact (symbolic)",
                   scope="every chip and model (symbolic)",
                   values={r["check"]: {"value": r["holds"], "verdict": HOLDS if r["holds"] else FAILS,
                                        "counted": True, "mark": None} for r in results},
                   miss="" if not failed else f"{len(failed)} of {len(results)} relations fail")


def _sourced(claim: Claim) -> Verdict:
    part = claim.parts[0]
    vals = {k: float(q.magnitude) for k, q in claim.cited.items()}
    args = (part.low, part.high, part.tolerance, part.band, part.compare)
    if len(vals) == 1:
        val = next(iter(vals.values()))
        verdict, summary = judge(val, *args), {"value": val}
        text = f"{sig(val)}{_unit_suffix(part)} (cited)"
    else:
        verdict, med, inside = judge_rule(list(vals.values()), *args)
        lo_, hi_ = min(vals.values()), max(vals.values())
        summary = {"median": med, "min": lo_, "max": hi_}
        text = (f"{sig(med)}{_unit_suffix(part)} ({len(vals)} cited figures)" if lo_ == hi_ else
                f"median {sig(med)} ({sig(lo_)}–{sig(hi_)}){_unit_suffix(part)}, {len(vals)} cited figures")
    summary["unit"] = f"{part.unit:~P}"
    values = {k: {"value": v, "verdict": judge(v, *args), "counted": True, "mark": None} for k, v in vals.items()}
    miss = ""
    if verdict == FAILS:
        miss = miss_text(summary.get("median", summary.get("value")), part.low, part.high, part.compare)
    return Verdict(claim, verdict, summary, text, f"claimed {part.claimed_text} against the cited "
                   f"{'figure' if len(vals) == 1 else 'figures'}: {claim.source}", band=band_text(part),
                   scope="the cited source", values=values, miss=miss)


def _scope_text(ctx, claim: Claim, entries: list[Entry], evaluated: int | None = None) -> str:
    counted = [e for e in entries if e.counted]
    names = {"all": "all chips", "gpus": "GPUs", "nvidia": "NVIDIA chips", "named chips": "named chips",
             "one chip": "one chip"}
    desc = ctx.chips.scopes.get(claim.scope_name, {}).get("text")
    head = names.get(claim.scope_name, claim.scope_name) + (f" ({desc})" if desc else "")
    what = "distinct chips" if len(claim.models) == 1 else "chip × model pairs" if len(claim.hardware) > 1 else "models"
    if len(entries) == 1 and not claim.relative_to:
        bits = [f"{entries[0].hardware}" + (f" × {entries[0].model}" if entries[0].model != DEFAULT_MODEL else "")]
    else:
        bits = [f"{head}: {len(counted)} {what}" + (f", {evaluated} evaluated" if evaluated is not None and evaluated != len(counted) else "")]
    grouped = [f"{e.key} ({e.mark})" for e in entries if not e.counted and e.mark]
    if grouped:
        bits.append("not counted again: " + ", ".join(grouped))
    ann = [e.key for e in entries if e.mark == "announced"]
    if ann:
        bits.append("announced, not shipping: " + ", ".join(ann))
    if claim.relative_to:
        r = claim.relative_to
        ref = "the previous chip in the list" if r.get("hardware") == "previous" else " × ".join(
            str(r[k]) for k in ("hardware", "model") if r.get(k))
        if r.get("set"):
            ref = (ref + " " if ref else "the same chip ") + "with " + ", ".join(f"{k}={v}" for k, v in r["set"].items())
        bits.append(f"each value relative to {ref}")
    fmts = sorted({ctx.chips.serving_format(ctx.data.hardware[e.hardware], e.model) or "?" for e in entries})
    if "format" in claim.set:
        bits.append(f"format {claim.set['format']} (set by the claim)")
    elif fmts:
        bits.append("serving format " + "/".join(fmts))
    return "; ".join(bits)


def _numeric(ctx, claim: Claim) -> Verdict:
    entries = _entries(ctx, claim)
    part_results = []
    all_skipped = {}
    for part in claim.parts:
        vals, skipped = _evaluate_part(ctx, claim, part, entries)
        all_skipped.update(skipped)
        v, summ = _judge_entries(claim, part, vals, entries)
        part_results.append((part, vals, v, summ))
    vals0 = part_results[0][1]
    _mark(ctx, entries, vals0)
    n_all = len({e.group or e.hardware for e in entries}) if len(claim.models) == 1 else len(entries)
    scope = _scope_text(ctx, claim, entries, sum(1 for e in entries if e.counted and e.key in vals0))
    if n_all != sum(1 for e in entries if e.counted):
        scope = scope.replace(f": {sum(1 for e in entries if e.counted)} ", f": {n_all} ", 1)
    if any(v is None for _, _, v, _ in part_results):
        why = "; ".join(f"{k}: {m}" for k, m in all_skipped.items())
        return Verdict(claim, ND, detail=f"no chip in scope has the inputs: {why}", scope=scope)
    verdict = _worst([v for _, _, v, _ in part_results])
    e0 = next(e for e in entries if e.key in part_results[0][1])
    sc0 = _scenario(ctx, claim, e0.hardware, e0.model)
    values, texts, details, misses, inputs, fit = {}, [], [], [], [], []
    for part, vals, v, summ in part_results:
        args = (part.low, part.high, part.tolerance, part.band, part.compare)
        multi = sum(1 for e in entries if e.counted and e.key in vals) > 1
        for e in entries:
            if e.key not in vals:
                continue
            key = e.key if len(claim.parts) == 1 else f"{part.label} · {e.key}"
            values[key] = {"value": vals[e.key], "unit": f"{part.unit:~P}", "verdict": judge(vals[e.key], *args),
                           "counted": e.counted, "mark": e.mark, "hardware": e.hardware, "model": e.model,
                           "format": _format_of(ctx, claim, e)}
        u = _unit_suffix(part)
        if multi:
            counted = sorted(vals[e.key] for e in entries if e.counted and e.key in vals)
            inside = sum(1 for x in counted if judge(x, *args) == HOLDS)
            texts.append(f"median {sig(summ)} ({sig(counted[0])}–{sig(counted[-1])}){u}")
            details.append(f"{part.label}: median {sig(summ)}{u} over {len(counted)} distinct chips; "
                           f"{inside} of {len(counted)} within the band "
                           f"({'at least' if inside >= TWO_THIRDS * len(counted) - _EDGE else 'fewer than'} two thirds)")
        else:
            texts.append(f"{sig(summ)}{u}")
            details.append(f"{part.label} on {e0.hardware} with {e0.model}" + (
                f" relative to {' × '.join(str(x) for x in e0.reference)}" if e0.reference else ""))
        if v == FAILS:
            misses.append(miss_text(summ, part.low, part.high, part.compare))
        for rec in _inputs_used(sc0, claim, part.expr):
            if rec["name"] not in {r["name"] for r in inputs}:
                inputs.append(rec)
    if all_skipped:
        details.append("not evaluated: " + "; ".join(f"{k} ({m})" for k, m in all_skipped.items()))
    if _depends_on(claim, ("batch", "context")):
        for e in entries:
            if e.key not in part_results[0][1]:
                continue
            reason = _fit(ctx, claim, e)
            if reason:
                fit.append(f"{e.key}: {reason}")
    formula = None
    try:
        formula = _formula(sc0, claim.parts[0])
    except (MissingInput, InputError):
        pass
    flips, moves = _sweep(ctx, claim, entries, verdict, [r[1] for r in part_results])
    p0 = part_results[0][0]
    _mark(ctx, entries, vals0)
    summary = {"unit": f"{p0.unit:~P}"}
    counted0 = [vals0[e.key] for e in entries if e.counted and e.key in vals0]
    if len(counted0) == 1 and len(claim.parts) == 1:
        summary.update(value=counted0[0], hardware=e0.hardware, model=e0.model)
    elif len(claim.parts) == 1:
        summary.update(min=min(counted0), median=statistics.median(counted0), max=max(counted0),
                       outside=sorted(k for k, x in values.items() if x["counted"] and x["verdict"] != HOLDS),
                       values={k: x["value"] for k, x in sorted(values.items())})
    else:
        summary["parts"] = [{"label": p.label, "value": s, "unit": f"{p.unit:~P}", "verdict": v}
                            for p, _, v, s in part_results]
    return Verdict(claim, verdict, summary, "; ".join(texts), "; ".join(details),
                   band="; ".join((f"{p.label}: " if len(claim.parts) > 1 else "") + band_text(p) for p in claim.parts),
                   scope=scope, values=values, inputs=inputs, formula=formula, flips_if=flips, sensitivity=moves,
                   fit=fit, miss="; ".join(misses))


def _format_of(ctx, claim, e: Entry) -> str | None:
    if "format" in claim.set:
        return claim.set["format"]
    return ctx.chips.serving_format(ctx.data.hardware[e.hardware], e.model)


def _fit(ctx, claim, e: Entry) -> str | None:
    try:
        sc = _scenario(ctx, claim, e.hardware, e.model)
        q = REGISTRY[claim.quantity] if claim.quantity is not None else None
        if q is not None and q.section and REGISTRY.sections[q.section].chapter in PIPELINE_CHAPTERS:
            return sc.flag(q.name)  # a pipelined set-up: its own fit, or none for a non-set-up
        return sc.fit()
    except (MissingInput, InputError):
        return None
    return None


def _fill(ctx, claim: Claim, text: str | None, fld: str) -> str | None:
    """Fill {quantity} placeholders with values from the claim's first scenario; a placeholder
    that cannot be filled is an error naming the claim, never printed as a brace."""
    if not text or "{" not in text:
        return text
    hid = claim.hardware[0] if claim.hardware else DEFAULT_HARDWARE
    mid = claim.models[0] if claim.models else DEFAULT_MODEL
    try:
        sc = _scenario(ctx, claim, hid, mid)
    except (MissingInput, InputError) as e:
        raise DataError("claims.yaml", claim.id, fld, f"cannot fill its placeholders on {hid} × {mid}: {e}") from None

    def rep(m):
        try:
            return fmt(sc.value(m.group(1)))
        except (MissingInput, InputError) as e:
            raise DataError("claims.yaml", claim.id, fld,
                            f"placeholder {{{m.group(1)}}} cannot be filled on {hid} × {mid}: {e}") from None
    out = _PLACEHOLDER.sub(rep, text)
    if _PLACEHOLDER.search(out):
        raise DataError("claims.yaml", claim.id, fld, "a placeholder is left unfilled")
    return out


def _default_chips(data) -> Chips:
    return Chips(scopes={"all": {}}, serving_formats={"default": ["fp8", "bf16"]})


# -- the audit ------------------------------------------------------------------------------------
@dataclass
class Audit:
    verdicts: list[Verdict]

    def __post_init__(self):
        by_id = {v.claim.id: v for v in self.verdicts}
        for v in self.verdicts:
            if v.claim.inherits and v.claim.inherits in by_id:
                by_id[v.claim.inherits].inherited_by.append(v.claim.id)

    def rule_of_thumb(self, quantity: str):
        """The claimed value of the rule of thumb about ``quantity`` (for reference lines), or None."""
        return rule_of_thumb([v.claim for v in self.verdicts], quantity)

    def counts(self):
        return [(k, sum(1 for x in self.verdicts if x.verdict == k)) for k in VERDICTS]

    def counts_by_kind(self) -> list[tuple[str, list[tuple[str, int]]]]:
        return [(kind, [(k, sum(1 for x in self.verdicts if x.claim.kind == kind and x.verdict == k))
                        for k in VERDICTS]) for kind in KINDS]

    def errors(self) -> list[dict]:
        """Distinct lecture errors: claims that do not hold and inherit no failed claim's error."""
        by_id = {v.claim.id: v for v in self.verdicts}
        out = []
        for v in self.verdicts:
            if v.verdict != FAILS:
                continue
            parent = by_id.get(v.claim.inherits) if v.claim.inherits else None
            if parent is not None and parent.verdict == FAILS:
                continue
            out.append({"id": v.claim.id, "kind": v.claim.kind, "miss": v.miss,
                        "inherited_by": [i for i in v.inherited_by if by_id[i].verdict == FAILS]})
        return out

    def headline(self) -> str:
        d = dict((k, n) for k, n in dict(self.counts_by_kind())["derived"])
        n = sum(d[k] for k in (HOLDS, ROUGHLY, FAILS))
        errs = self.errors()
        inherited = sum(len(e["inherited_by"]) for e in errs)
        return (f"{n} derived verdicts (tested against hardware and model data): {d[HOLDS]} hold, "
                f"{d[ROUGHLY]} hold roughly, {d[FAILS]} do not hold; {len(errs)} distinct lecture errors "
                f"over all kinds" + (f" ({inherited} further claims inherit one)" if inherited else ""))

    def as_json(self) -> list[dict]:
        out = []
        for v in self.verdicts:
            c = v.claim
            claimed = None
            if c.parts:
                claimed = []
                for p in c.parts:
                    lo, hi = p.claimed
                    unit = f"{lo.units:~P}"
                    d = ({"value": lo.magnitude, "unit": unit} if lo.magnitude == hi.magnitude
                         else {"min": lo.magnitude, "max": hi.magnitude, "unit": unit})
                    d.update(expression=p.label, compare=p.compare, tolerance=p.tolerance, band=p.band)
                    claimed.append(d)
                claimed = claimed[0] if len(claimed) == 1 else claimed
            out.append({
                "id": c.id, "where": c.where, "kind": c.kind, "quote": c.quote, "claim": c.claim,
                "quantity": c.quantity, "claimed": claimed, "computed": v.computed, "verdict": v.verdict,
                "miss": v.miss or None, "band": v.band or None, "scope": v.scope or None,
                "values": v.values, "inputs": v.inputs, "flips_if": v.flips_if, "sensitivity": v.sensitivity,
                "formula": v.formula[0] if v.formula else None, "fit": v.fit or None, "detail": v.detail,
                "inherits": c.inherits, "inherited_by": v.inherited_by or None,
                **({"reading": v.reading} if v.reading else {}),
                **({"source": c.source} if c.source else {}), **({"note": v.note} if v.note else {})})
        return out

    def as_text(self) -> str:
        lines = [f"chalkboard audit: {len(self.verdicts)} claims"]
        w = max(len(k) for k in KINDS)
        lines.append(f"  {'kind':<{w}}  " + "  ".join(f"{k:>13}" for k in VERDICTS))
        for kind, row in self.counts_by_kind():
            lines.append(f"  {kind:<{w}}  " + "  ".join(f"{n:>13}" for _, n in row))
        lines.append(f"  {'all':<{w}}  " + "  ".join(f"{n:>13}" for _, n in self.counts()))
        lines.append("headline: " + self.headline())
        for e in self.errors():
            inh = f" (inherited by {', '.join(e['inherited_by'])})" if e["inherited_by"] else ""
            lines.append(f"  error  {e['id']} [{e['kind']}]{': ' + e['miss'] if e['miss'] else ''}{inh}")
        lines.append("")
        idw = max(len(v.claim.id) for v in self.verdicts)
        for v in self.verdicts:
            c = v.claim
            lines.append(f"{v.verdict:<13} {c.kind:<11} {c.id:<{idw}}  claimed {c.claimed_text or '–'}  "
                         f"computed {v.computed_text}  {c.where[0]}")
            pad = " " * 26
            if v.verdict == ND:
                lines.append(f"{pad}why: {v.detail}")
                continue
            if v.miss:
                lines.append(f"{pad}{v.miss}")
            lines.append(f"{pad}band: {v.band}   scope: {v.scope}")
            if len(v.values) > 1:
                lines.append(f"{pad}values: " + ", ".join(
                    f"{k} {_vshow(x)}" + (f" ({x['mark']})" if x.get("mark") else "") for k, x in v.values.items()))
            if c.inherits:
                lines.append(f"{pad}inherits the error of {c.inherits}")
            if v.fit:
                lines.append(f"{pad}set-up does not fit: " + "; ".join(v.fit))
            if v.flips_if:
                lines.append(f"{pad}flips if " + "; ".join(v.flips_if))
        return "\n".join(lines)

    def for_report(self) -> dict:
        claims = []
        for v in self.verdicts:
            c = v.claim
            short = ", ".join(w.split("_", 1)[0] + w[w.index(".txt") + 4:] if ".txt" in w else w
                              for w in c.where)
            claims.append({
                "id": c.id, "where": short, "quote": c.quote, "claim": c.claim, "kind": c.kind,
                "claimed_text": c.claimed_text or "–", "computed_text": v.computed_text, "verdict": v.verdict,
                "detail": v.detail, "band": v.band, "scope": v.scope, "miss": v.miss,
                "per_chip": [{"key": k, "value": _vshow(x), "verdict": x["verdict"], "mark": x.get("mark") or "",
                            "format": x.get("format") or ""} for k, x in v.values.items()],
                "inputs": v.inputs, "flips_if": v.flips_if, "sensitivity": v.sensitivity, "fit": v.fit,
                "formula_text": v.formula[0] if v.formula else None,
                "mathml": v.formula[1] if v.formula else None, "typst": v.formula[2] if v.formula else None,
                "inherits": c.inherits, "inherited_by": v.inherited_by, "reading": v.reading,
                "source": c.source, "note": v.note, "why": v.why if c.kind != "qualitative" else None})
        return {"intro": f"{len(self.verdicts)} checkable statements from the two seed transcripts "
                         "(places as 004:LINE and 000@M:SS in lecture/seeds/), each with its corrected "
                         "reading. Each verdict says what it tested (its kind). \"About X\" holds within a "
                         "factor (×/÷1.3 unless stated) and holds roughly within a wider factor (×/÷2 unless "
                         "stated); a bound holds on the claimed side only. A claim over several chips holds "
                         "when the median and at least two thirds of its distinct chips are within the band; "
                         "holds roughly when only the median is. Each chip is evaluated at its serving format.",
                "kinds": [{"kind": k, "text": KIND_TEXT[k], "counts": row} for k, row in self.counts_by_kind()],
                "verdict_names": list(VERDICTS), "headline": self.headline(), "errors": self.errors(),
                "counts": self.counts(), "css": CSS, "claims": claims}


def _vshow(x) -> str:
    val = x["value"]
    if isinstance(val, bool):
        return "holds" if val else "fails"
    return _num(val, x.get("unit") or "")


_PLURAL = {"chip": "chips", "sequence": "sequences", "token": "tokens", "die": "dies", "cable": "cables",
           "parameter": "parameters"}


def _num(val: float, unit: str) -> str:
    """A value in the claim's unit, plural where a count reads that way ('72 chips')."""
    text = sig(val)
    if not unit or unit == "dimensionless":
        return text
    if text != "1" and unit in _PLURAL:
        unit = _PLURAL[unit]
    return f"{text} {unit_words(unit)}"


def seed_dir(root: Path) -> Path:
    return root / "lecture" / "seeds"


@dataclass
class Claims:
    """A claims file read and checked, not yet evaluated: its claims and its chip settings."""
    claims: list[Claim]
    chips: Chips

    def rule_of_thumb(self, quantity: str):
        return rule_of_thumb(self.claims, quantity)


def rule_of_thumb(claims: list[Claim], quantity: str):
    """The claimed value of the rule of thumb about ``quantity`` (a claim about it over many chips,
    e.g. "a drain time of about 20 ms"), for reference lines; None if the claims make none. It
    needs the claims only, not their evaluation."""
    for c in claims:
        if (c.kind in ("derived", "input") and c.quantity == quantity and len(c.hardware) > 1
                and not c.relative_to and not c.parts[0].compare):
            return c.parts[0].claimed[0]
    return None


def read_claims(data: Data, path: Path, label: str, doc=None) -> Claims:
    """The claims file at ``path`` (``doc``: its YAML, if the caller has read it), read and checked:
    a bad claim fails here, before anything is evaluated."""
    root = path.resolve().parent
    if not seed_dir(root).is_dir():  # a claims file kept elsewhere cites the project's own seeds
        root = Path(__file__).resolve().parents[1]
    places = seeds.places(seed_dir(root)) if seed_dir(root).is_dir() else None
    if places is not None:  # the later chapters, cited by id: 'chapters-3-7.md#T-02'
        places = {**places, **seeds.chapter_places(seed_dir(root).parent)}
    doc = _read(path, label) if doc is None else _claims_document(doc, label)
    chips = _load_chips(label, data, doc)
    return Claims(load_claims(path, label, data, places, chips, doc), chips)


def run_audit(data: Data, path: Path, label: str, doc=None, claims: Claims | None = None) -> Audit:
    """The audit of the claims file at ``path`` (``claims``: already read by ``read_claims``)."""
    claims = claims if claims is not None else read_claims(data, path, label, doc)
    return Audit([evaluate_claim(data, c, claims.chips) for c in claims.claims])
