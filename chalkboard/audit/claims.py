"""claims.yaml read and checked: each claim's place, quote, kind, expression and claimed value (one-line errors)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import sympy as sp
import yaml

from derivations import REGISTRY
from units import Quantity, UnitParseError, parse

from ..data import seeds
from ..data.featured import FEATURED_HARDWARE as DEFAULT_HARDWARE, FEATURED_MODEL as DEFAULT_MODEL
from ..data.loader import Data, DataError
from ..data.safety import UniqueKeyLoader
from ..errors import InputError, MissingInput
from ..evaluation.evaluate import Scenario
from ..evaluation.settings import SELECT_KEYS
from ..evaluation.walk import placeholders, walk
from ..typeset.fmt import fmt

from . import exprtext
from .kinds import check_kind, check_thresholds, fold
from .rules import PLACEHOLDER, DEFAULT_BAND, DEFAULT_TOLERANCE, KINDS
from .scope import load_chips, serving_scope, Chips

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
    choices: list = field(default_factory=list)   # named reasonable choices: [{"label", "set"}], swept and sizing
    inherits: str | None = None
    reading: str | None = None
    source: str | None = None
    why: str | None = None
    note: str | None = None
    also: list = field(default_factory=list)   # the same test claimed elsewhere: [{"id", "where", "quote"}]
    links: list = field(default_factory=list)  # a transcript place's link: the lecture's video at that second
    inconclusive: str | None = None   # why the evidence cannot judge the sentence (computed, not counted)
    threshold: str | None = None      # where a bound's threshold comes from, when the lecture gives none
    lecture_input: str | None = None  # the input that carries the lecture's number this card tests
    covers: list[str] = field(default_factory=list)   # paraphrase places the claim answers (not its quote)
    context: list[str] = field(default_factory=list)  # two lines of the lecture around the quote (context.py)

    @property
    def quantity(self):
        return self.parts[0].quantity if len(self.parts) == 1 else None

    @property
    def claimed_text(self):
        return "; ".join(p.claimed_text for p in self.parts)

    @property
    def section(self) -> str | None:
        """The report section that derives what the claim is judged on (its quantity's, or the first
        derived quantity's its expression or identity names), or None."""
        exprs = [p.expr for p in self.parts] + [e for _, lhs, rhs in self.checks for e in (lhs, rhs)]
        for e in exprs:
            for s in sorted(getattr(e, "free_symbols", ()), key=str):
                q = REGISTRY.by_symbol.get(s)
                if q is not None and q.section:
                    return q.section
        return None

    @property
    def chapter(self) -> str | None:
        """The lecture chapter of what the claim is judged on: the section of its quantity, or of the
        first derived quantity its expression or identity names (None for a sourced or qualitative one)."""
        exprs = [p.expr for p in self.parts] + [e for _, lhs, rhs in self.checks for e in (lhs, rhs)]
        for e in exprs:
            for s in sorted(getattr(e, "free_symbols", ()), key=str):
                q = REGISTRY.by_symbol.get(s)
                if q is not None and q.section:
                    return REGISTRY.sections[q.section].chapter
        return None


def _locals():
    return {name: q.sym for name, q in REGISTRY.quantities.items()}


def expand(e):
    return REGISTRY.expand(sp.sympify(e, strict=True))


def _parse_expr(label, cid, fld, text: str, with_helpers: bool = False) -> sp.Expr:
    """A claim's expression in quantities, read by the restricted parser (exprtext: nothing in the
    text runs). Identity checks may also use d(e, q) (the derivative of e, expanded to inputs, by
    the quantity q), at(e, q, v) (e with q replaced by v) and lhs(EQ) / rhs(EQ) (the sides of the
    declared equation EQ, whose own free symbols, such as the halves of a reversible map, are then
    allowed)."""
    functions = dict(exprtext.MATH)
    local_symbols = set()   # the free symbols of equations named by lhs()/rhs(): not quantities
    if with_helpers:
        def d(e, x):
            if not isinstance(x, sp.Symbol):
                raise exprtext.ExprError(f"d(e, q): q must be a quantity, not {x}")
            return sp.diff(expand(e), x)

        def at(e, x, v):
            if not isinstance(x, sp.Symbol):
                raise exprtext.ExprError(f"at(e, q, v): q must be a quantity, not {x}")
            return expand(e).xreplace({x: expand(v)})

        def side(which):
            def get(name):
                eq = REGISTRY.equations.get(str(name))
                if eq is None:
                    raise exprtext.ExprError(f"{which}({name}) names no declared equation")
                local_symbols.update(eq.free)
                return getattr(eq, which)
            return get
        functions.update(d=exprtext.Function(d, 2), at=exprtext.Function(at, 3),
                         lhs=exprtext.Function(side("lhs"), 1, names_as_text=True),
                         rhs=exprtext.Function(side("rhs"), 1, names_as_text=True))

    def read():
        try:
            return exprtext.parse(text, _locals(), functions), frozenset(local_symbols)
        except exprtext.ExprError as e:
            raise DataError(label, cid, fld, f"cannot read {exprtext.shorten(text)!r}: {e}") from None
    # the parse (and the derivatives d() takes) kept between runs, like the derivations' solves
    expr, local_symbols = REGISTRY.kept(("claim expression", text, with_helpers), read)
    unknown = [str(s) for s in expr.free_symbols if s not in REGISTRY.by_symbol and s not in local_symbols]
    if unknown:
        raise DataError(label, cid, fld, f"{exprtext.shorten(text)!r}: unknown quantity {', '.join(sorted(unknown))}")
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
    doc = read_claims_file(path, label) if doc is None else doc   # ``doc``: the file already read
    chips = chips or load_chips(label, data, doc)
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
    link = _transcript_link(label, doc)
    for c in out:
        c.links = [link(t) for t in map(seeds.transcript_seconds, c.where) if t is not None]
    for c in out:
        if c.inherits is not None and c.inherits not in ids:
            raise DataError(label, c.id, "inherits", f"unknown claim id {c.inherits!r}")
    out = fold(out)
    for c in out:
        _check_scenario(data, chips, c, label)
    return out


def _transcript_link(label: str, doc: dict):
    """The link a transcript place gives (the lecture's video at that second), from the claims file's
    ``transcript`` entry: {page: where the cleaned transcript is published, video: the lecture's video}."""
    t = doc.get("transcript") or {}
    if not isinstance(t, dict):
        raise DataError(label, "transcript", None, "expected {page: URL, video: URL}")
    video = str(t.get("video") or "")

    def link(seconds: int) -> str:
        if not video:
            raise DataError(label, "transcript", "video", "a claim cites the transcript: give the lecture's video URL")
        return f"{video}{'&' if '?' in video else '?'}t={seconds}s"
    return link


def read_claims_file(path: Path, label: str) -> dict:
    try:
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=UniqueKeyLoader)
    except FileNotFoundError:
        raise DataError(label, None, None, "file not found") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        raise DataError(label, None, None, f"YAML syntax error at {where}{getattr(e, 'problem', e)}") from None
    return claims_document(doc, label)


def claims_document(doc, label: str) -> dict:
    if not isinstance(doc, dict) or not isinstance(doc.get("claims"), list):
        raise DataError(label, None, "claims", "expected a list under 'claims'")
    return doc


def _places(label, cid, c: dict, seed_places) -> list:
    """The claim's places (where), checked: each a seed line, a paraphrase place or a transcript time within
    the lecture; a quote that cites only seeds is in the seed text it cites; its covers are places too."""
    where = c["where"] if isinstance(c["where"], list) else [c["where"]]
    for f in ("quote", "claim"):
        if not isinstance(c[f], str):
            raise DataError(label, cid, f, f"expected text, got a {type(c[f]).__name__}")
    for w in where:
        if not seeds.WHERE.match(str(w)):
            raise DataError(label, cid, "where", f"{w!r} is not 'FILE.txt:LINE', 'FILE.txt@M:SS', "
                                                 "'chapters-3-7.md#ID' or 'transcript@H:MM:SS'")
        t = seeds.transcript_seconds(str(w))
        if t is not None:
            if t > seeds.LECTURE_SECONDS:
                raise DataError(label, cid, "where", f"{w!r} is past the lecture's end (2:13:50)")
            continue
        if seed_places is not None and str(w) not in seed_places:
            raise DataError(label, cid, "where", f"{w!r} is not a line or speaker turn of the seeds")
    in_seeds = [str(w) for w in where if seeds.transcript_seconds(str(w)) is None]
    # a quote from the public transcript is checked by its link (the transcript is not copied here);
    # a quote from the seeds must be in the seed text it cites
    if seed_places is not None and len(in_seeds) == len(where) and not any(
            seeds.normalise(c["quote"]) in seeds.normalise(seed_places[w]) for w in in_seeds):
        raise DataError(label, cid, "quote", f"not found in the cited seed text ({', '.join(map(str, where))})")
    for w in c.get("covers") or []:
        if not seeds.WHERE.match(str(w)) or (seed_places is not None and str(w) not in seed_places):
            raise DataError(label, cid, "covers", f"{w!r} is not a place of the seeds or the paraphrase")
    return where


def _load_claim(label, data, chips: Chips, c: dict, cid: str, seed_places) -> Claim:
    for f in ("where", "quote", "claim", "kind"):
        if not c.get(f):
            raise DataError(label, cid, f, "missing")
    kind = c["kind"]
    if kind not in KINDS:
        raise DataError(label, cid, "kind", f"{kind!r} is not one of {', '.join(KINDS)}")
    where = _places(label, cid, c, seed_places)
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
        for name in PLACEHOLDER.findall(str(c.get(f) or "")):
            if name not in REGISTRY:
                raise DataError(label, cid, f, f"placeholder {{{name}}} is not a quantity")
    claim = Claim(
        id=cid, where=[str(w) for w in where], quote=str(c["quote"]), claim=str(c["claim"]), kind=kind,
        scope_name=scope_name, hardware=hw, models=models, relative_to=rel,
        set={k: str(v) for k, v in _mapping(label, cid, c, "set").items()},
        given={k: str(v) for k, v in _mapping(label, cid, c, "given").items()},
        also_on=[str(h) for h in (c.get("also_on") or [])], choices=_choices(label, cid, c), inherits=c.get("inherits"),
        reading=c.get("reading"), source=c.get("source"), why=c.get("why"), note=c.get("note"),
        inconclusive=c.get("inconclusive"), threshold=c.get("threshold"),
        lecture_input=c.get("lecture_input"), covers=[str(x) for x in (c.get("covers") or [])])
    if claim.lecture_input is not None:
        li = str(claim.lecture_input)
        if li not in REGISTRY or not REGISTRY[li].is_input:
            raise DataError(label, cid, "lecture_input", f"{li!r} is not an input quantity")
        if kind in ("identity", "qualitative", "sourced"):
            raise DataError(label, cid, "lecture_input", f"a {kind} claim tests no input")
    for f in ("inconclusive", "threshold"):
        if f in c and not (isinstance(c[f], str) and c[f].strip()):
            raise DataError(label, cid, f, "expected a sentence saying why" if f == "inconclusive"
                            else "expected a sentence naming the threshold's source or derivation")
    if claim.inconclusive and kind in ("identity", "qualitative"):
        raise DataError(label, cid, "inconclusive", f"a {kind} claim is not judged on evidence")
    for h in claim.also_on:
        if h not in data.hardware:
            raise DataError(label, cid, "also_on", f"unknown hardware id {h!r}")
    _what_is_judged(label, cid, c, claim, rel is not None)
    if kind not in ("identity", "qualitative"):
        check_thresholds(label, cid, claim, c)
    return claim


def _what_is_judged(label, cid, c: dict, claim: Claim, relative: bool) -> None:
    """What the claim's kind judges it on, read into ``claim``: an identity's relations (and the number that
    sizes one that fails), a qualitative claim's why, a sourced claim's cited figures, else its parts."""
    kind = claim.kind
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
        if c.get("quantity") is not None or c.get("expr") is not None:   # a number that sizes the error
            claim.parts.append(_part(label, cid, c, relative))
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
            claim.parts.append(_part(label, cid, merged, relative,
                                     f"parts[{j}]." if "parts" in c else ""))
        check_kind(label, cid, claim)


def _choices(label, cid, c: dict) -> list[dict]:
    """A claim's named reasonable choices (another value the sentence allows, e.g. the other end of a
    range it states): each {label, set}, swept like a context or a format and sizing an error."""
    out = []
    for ch in c.get("choices") or []:
        if not (isinstance(ch, dict) and isinstance(ch.get("label"), str) and isinstance(ch.get("set"), dict)):
            raise DataError(label, cid, "choices", "each choice is {label: text, set: {quantity: value}}")
        for name in ch["set"]:
            if name not in REGISTRY and name not in SELECT_KEYS:   # a quantity, or a price snapshot picked
                raise DataError(label, cid, "choices", f"{ch['label']}: unknown quantity {name!r}")
        if ": " in ch["label"]:   # a card lists each sweep as "label: verdict (value)"
            raise DataError(label, cid, "choices", f"{ch['label']}: a label without ': '")
        out.append({"label": ch["label"], "set": {k: str(v) for k, v in ch["set"].items()}})
    return out


def _check_scenario(data, chips, claim: Claim, label: str) -> None:
    """Build the claim's first scenario now, so a bad `set` or `given` names claims.yaml."""
    if claim.kind in ("identity", "sourced", "qualitative"):
        return
    hid, mid = claim.hardware[0], claim.models[0]
    try:
        sc = Scenario(data, hid, mid, {**serving_scope(chips, data, hid, mid, claim), **claim.set})
    except (InputError, UnitParseError, MissingInput) as e:
        raise DataError(label, claim.id, "set", str(e)) from None
    for name, text in claim.given.items():
        try:
            sc.fix(name, text)
        except (InputError, UnitParseError) as e:
            raise DataError(label, claim.id, "given", str(e)) from None
