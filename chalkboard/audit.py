"""The claim audit: every checkable statement of the lecture, tested against the derivations.

claims.yaml says what was claimed, where, and which quantity tests it; the verdict is
computed here, never typed: holds / holds roughly / does not hold / not derivable.
A rule of thumb is evaluated on every chip and judged on the median, with min, median, max
and the chips outside the band reported. Each verdict says what the number is sensitive to
(decimal vs binary GB, dense vs sparse FLOP/s, number format, per chip vs per rack), by
recomputing it with that one thing changed.
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
from .evaluate import InputError, MissingInput, Scenario
from .fmt import fmt, sig

KINDS = ("derivable", "rule_of_thumb", "empirical", "qualitative", "consistency")
HOLDS, ROUGHLY, FAILS, ND = "holds", "holds roughly", "does not hold", "not derivable"
VERDICTS = (HOLDS, ROUGHLY, FAILS, ND)
CSS = {HOLDS: "v-holds", ROUGHLY: "v-roughly", FAILS: "v-fails", ND: "v-nd"}
from . import FEATURED_HARDWARE as DEFAULT_HARDWARE, FEATURED_MODEL as DEFAULT_MODEL  # noqa: E402
GIB_PER_GB = (parse("1 GiB") / parse("1 GB")).to("").magnitude
SPARSE_HEADLINE_FACTOR = 2         # 2:4 structured sparsity: the headline FLOP/s is twice the dense rate


@dataclass
class Claim:
    id: str
    where: list[str]
    quote: str
    claim: str
    kind: str
    quantity: str | None = None
    hardware: list[str] | str | None = None
    model: list[str] | str | None = None
    relative_to: dict | None = None       # {"hardware": id, "model": id}: the value is a ratio to that
    set: dict = field(default_factory=dict)
    given: dict = field(default_factory=dict)
    claimed: tuple | None = None          # (low, high) Pint quantities; equal for a single value
    claimed_text: str = ""
    compare: str | None = None            # ">" or "<": the claim is a bound, not a value
    identity: tuple | None = None         # two quantities claimed to be the same expression
    tolerance: float = 0.3
    band: float | None = None
    sensitive_to: list[str] = field(default_factory=list)
    source: str | None = None
    why: str | None = None
    note: str | None = None


@dataclass
class Verdict:
    claim: Claim
    verdict: str
    computed: dict | None = None          # {"value", "unit"} or {"min","median","max","unit","outside"}
    computed_text: str = "–"
    detail: str = ""
    sensitivity: str = ""
    note: str | None = None               # the claim's note with {quantity} placeholders filled
    why: str | None = None


# -- comparing ---------------------------------------------------------------------------------
_EDGE = 1e-9  # a value exactly on a band edge counts as inside it, whatever the float rounding


def judge(value: float, low: float, high: float, tolerance: float, band: float, compare: str | None = None) -> str:
    """holds within ±tolerance of the claim (or its range), holds roughly within ±band, else not.

    For a bound (compare '>' or '<') the claim holds when the value is on the claimed side,
    holds roughly when it misses by no more than the band, and fails otherwise.
    """
    if compare == ">":
        return HOLDS if value > low else ROUGHLY if value >= low * (1 - band) * (1 - _EDGE) else FAILS
    if compare == "<":
        return HOLDS if value < low else ROUGHLY if value <= low * (1 + band) * (1 + _EDGE) else FAILS
    lo, hi = low * (1 - tolerance) * (1 - _EDGE), high * (1 + tolerance) * (1 + _EDGE)
    if lo <= value <= hi:
        return HOLDS
    if low * (1 - band) * (1 - _EDGE) <= value <= high * (1 + band) * (1 + _EDGE):
        return ROUGHLY
    return FAILS


# -- loading -----------------------------------------------------------------------------------
def _parse_claimed(label, cid, raw):
    try:
        if isinstance(raw, list):
            if len(raw) != 2:
                raise DataError(label, cid, "claimed", "a range is [low, high]")
            lo, hi = parse(str(raw[0])), parse(str(raw[1]))
            if lo.dimensionality != hi.dimensionality:
                raise DataError(label, cid, "claimed", "the two ends of the range differ in dimension")
            hi = hi.to(lo.units)
            return (lo, hi), f"{fmt(lo)} – {fmt(hi)}", None
        text = str(raw).strip()
        compare = None
        if text[:1] in "<>":
            compare, text = text[0], text[1:].strip()
        q = parse(text)
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


def _number(label, cid, c, key, default):
    v = c.get(key, default)
    try:
        v = float(v)
    except (TypeError, ValueError):
        raise DataError(label, cid, key, f"expected a number, got {v!r}") from None
    if not v >= 0:
        raise DataError(label, cid, key, "must not be negative")
    return v


_PLACEHOLDER = re.compile(r"\{([a-z0-9_]+)\}")


def load_claims(path: Path, label: str, data: Data, seed_places: dict | None = None) -> list[Claim]:
    try:
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=UniqueKeyLoader)
    except FileNotFoundError:
        raise DataError(label, None, None, "file not found") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        raise DataError(label, None, None, f"YAML syntax error at {where}{getattr(e, 'problem', e)}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("claims"), list):
        raise DataError(label, None, "claims", "expected a list under 'claims'")
    out, seen = [], set()
    for i, c in enumerate(doc["claims"]):
        if not isinstance(c, dict) or "id" not in c:
            raise DataError(label, f"claims[{i}]", "id", "missing")
        cid = str(c["id"])
        if cid in seen:
            raise DataError(label, cid, "id", "duplicate id")
        seen.add(cid)
        for f in ("where", "quote", "claim", "kind"):
            if not c.get(f):
                raise DataError(label, cid, f, "missing")
        kind = c["kind"]
        if kind not in KINDS:
            raise DataError(label, cid, "kind", f"{kind!r} is not one of {', '.join(KINDS)}")
        where = c["where"] if isinstance(c["where"], list) else [c["where"]]
        for w in where:
            if not seeds.WHERE.match(str(w)):
                raise DataError(label, cid, "where", f"{w!r} is not 'FILE.txt:LINE' or 'FILE.txt@M:SS'")
            if seed_places is not None and str(w) not in seed_places:
                raise DataError(label, cid, "where", f"{w!r} is not a line or speaker turn of the seeds")
        q = c.get("quantity")
        if q is not None and q not in REGISTRY:
            raise DataError(label, cid, "quantity", f"unknown quantity {q!r}")
        identity = c.get("identity")
        if identity is not None:
            if not (isinstance(identity, list) and len(identity) == 2 and all(x in REGISTRY for x in identity)):
                raise DataError(label, cid, "identity", "expected [quantity, quantity], both declared")
            identity = tuple(identity)
        app = _mapping(label, cid, c, "applies_to")
        hw = app.get("hardware")
        for h in ([] if hw in (None, "all") else hw if isinstance(hw, list) else [hw]):
            if h not in data.hardware:
                raise DataError(label, cid, "applies_to.hardware", f"unknown hardware id {h!r}")
        model = app.get("model")
        for m in ([] if model is None else model if isinstance(model, list) else [model]):
            if m not in data.models:
                raise DataError(label, cid, "applies_to.model", f"unknown model id {m!r}")
        rel = app.get("relative_to")
        if rel is not None:
            if not isinstance(rel, dict) or not (set(rel) <= {"hardware", "model"}):
                raise DataError(label, cid, "applies_to.relative_to", "expected {hardware: ID, model: ID}")
            if rel.get("hardware") is not None and rel["hardware"] not in data.hardware:
                raise DataError(label, cid, "applies_to.relative_to", f"unknown hardware id {rel['hardware']!r}")
            if rel.get("model") is not None and rel["model"] not in data.models:
                raise DataError(label, cid, "applies_to.relative_to", f"unknown model id {rel['model']!r}")
        claimed, claimed_text, compare = (None, "", None)
        if c.get("claimed") is not None:
            claimed, claimed_text, compare = _parse_claimed(label, cid, c["claimed"])
            if q is not None:
                want = Quantity(1, "") if rel is not None else Quantity(1, REGISTRY[q].unit)
                if claimed[0].dimensionality != want.dimensionality:
                    what = "a ratio (bare number)" if rel is not None else f"{q} ({REGISTRY[q].unit or 'a bare number'})"
                    raise DataError(label, cid, "claimed", f"{c['claimed']!r} does not have the dimension of {what}")
        if kind in ("derivable", "rule_of_thumb", "consistency") and identity is None and (q is None or claimed is None):
            raise DataError(label, cid, "quantity" if q is None else "claimed", f"needed for a {kind} claim")
        if kind == "empirical" and not c.get("source"):
            raise DataError(label, cid, "source", "an empirical claim names its source")
        if kind == "qualitative" and not c.get("why"):
            raise DataError(label, cid, "why", "a qualitative claim says why it cannot be computed")
        for f in ("note", "why"):
            for name in _PLACEHOLDER.findall(str(c.get(f) or "")):
                if name not in REGISTRY:
                    raise DataError(label, cid, f, f"placeholder {{{name}}} is not a quantity")
        tol = _number(label, cid, c, "tolerance", 0.3)
        sens = c.get("sensitive_to") or []
        claim = Claim(
            id=cid, where=[str(w) for w in where], quote=str(c["quote"]), claim=str(c["claim"]), kind=kind,
            quantity=q, hardware=hw, model=model, relative_to=rel,
            set={k: str(v) for k, v in _mapping(label, cid, c, "set").items()},
            given={k: str(v) for k, v in _mapping(label, cid, c, "given").items()}, claimed=claimed,
            claimed_text=claimed_text, compare=compare, identity=identity, tolerance=tol,
            band=_number(label, cid, c, "band", 2 * tol),
            sensitive_to=[str(s) for s in (sens if isinstance(sens, list) else [sens])],
            source=c.get("source"), why=c.get("why"), note=c.get("note"))
        _check_scenario(data, claim, label)
        out.append(claim)
    return out


def _check_scenario(data, claim: Claim, label: str) -> None:
    """Build the claim's first scenario now, so a bad `set` or `given` names claims.yaml."""
    hid, mid = _hardware_ids(data, claim)[0], _models(claim)[0]
    try:
        sc = Scenario(data, hid, mid, dict(claim.set))
    except (InputError, UnitParseError) as e:
        raise DataError(label, claim.id, "set", str(e)) from None
    for name, text in claim.given.items():
        try:
            sc.fix(name, text)
        except (InputError, UnitParseError) as e:
            raise DataError(label, claim.id, "given", str(e)) from None


# -- evaluating --------------------------------------------------------------------------------
def _models(claim: Claim) -> list[str]:
    if claim.model is None:
        return [DEFAULT_MODEL]
    return list(claim.model) if isinstance(claim.model, list) else [claim.model]


def _hardware_ids(data, claim: Claim) -> list[str]:
    if claim.hardware in (None, "all"):
        return list(data.hardware) if claim.kind == "rule_of_thumb" else [DEFAULT_HARDWARE]
    return list(claim.hardware) if isinstance(claim.hardware, list) else [claim.hardware]


def _scenario(data, claim: Claim, hid: str, extra: dict | None = None, mid: str | None = None) -> Scenario:
    sc = Scenario(data, hid, mid or _models(claim)[0], {**claim.set, **(extra or {})})
    for name, text in claim.given.items():
        sc.fix(name, text)
    return sc


def _value(data, claim: Claim, hid: str, mid: str, extra: dict | None = None, tweak=None) -> float:
    """The claim's number on one chip and model: the quantity, or its ratio to the reference."""
    def one(h, m):
        sc = _scenario(data, claim, h, extra, m)
        if tweak is not None:
            tweak(sc, h)
        return sc.value(claim.quantity)
    q = one(hid, mid)
    if claim.relative_to is not None:
        q = q / one(claim.relative_to.get("hardware", hid), claim.relative_to.get("model", mid))
    return q.to(claim.claimed[0].units).magnitude


def _gib_flip(sc, hid):
    """Read the chip's HBM capacity in the other binary/decimal unit than its source wrote."""
    text = sc.data.hardware[hid].values["hbm_capacity"].text
    cap = sc.input("hbm_capacity")
    sc.fix("hbm_capacity", cap / GIB_PER_GB if "GiB" in text else cap * GIB_PER_GB)


def _sparse(sc, hid):
    sc.fix("peak_flops", sc.input("peak_flops") * SPARSE_HEADLINE_FACTOR)


def _sensitivity(data, claim: Claim, hid: str, base: float, mid: str) -> str:
    """Recompute with one convention changed at a time; say how much the number moves."""
    names = {claim.quantity} | set(claim.given)
    leaves = set()
    for n in names:
        leaves |= {q.name for q in REGISTRY.leaves(n)}
    variants = []
    if "hbm_capacity" in leaves:
        variants.append(("GB and GiB swapped", {}, _gib_flip))
    if "peak_flops" in leaves:
        variants.append(("2:4-sparse FLOP/s instead of dense", {}, _sparse))
        for fmt_ in ("bf16", "fp8", "fp4"):
            variants.append((f"format {fmt_}", {"format": fmt_}, None))
    if "chips" in leaves:
        variants.append(("one chip instead of the whole domain", {"chips": "1 chip"}, None))
    out = []
    for label, extra, tweak in variants:
        try:
            v = _value(data, claim, hid, mid, extra, tweak)
        except (MissingInput, InputError):
            continue
        if base and abs(v - base) / abs(base) > 1e-9:
            out.append(f"{label}: {sig(v)} ({(v / base - 1) * 100:+.0f}%)")
        elif label.startswith("format"):
            out.append(f"{label}: unchanged")
    return "; ".join(out)


def _fill(data, claim: Claim, text: str | None) -> str | None:
    """Fill {quantity} placeholders in a note with values from the claim's first scenario."""
    if not text or "{" not in text:
        return text
    sc = _scenario(data, claim, _hardware_ids(data, claim)[0], mid=_models(claim)[0])

    def rep(m):
        try:
            return fmt(sc.value(m.group(1)))
        except MissingInput as e:
            return f"(n/a: {e})"
    return _PLACEHOLDER.sub(rep, text)


def evaluate_claim(data, claim: Claim) -> Verdict:
    v = _evaluate(data, claim)
    v.note, v.why = _fill(data, claim, claim.note), _fill(data, claim, claim.why)
    return v


def _evaluate(data, claim: Claim) -> Verdict:
    if claim.identity is not None:
        a, b = claim.identity
        same = sp.simplify(REGISTRY.closed_form(a) - REGISTRY.closed_form(b)) == 0
        text = f"{printers.text_symbol(REGISTRY[a])} {'≡' if same else '≢'} {printers.text_symbol(REGISTRY[b])}"
        return Verdict(claim, HOLDS if same else FAILS, {"identity": [a, b], "equal": same}, text,
                       f"SymPy compares the closed forms of {a} and {b}")
    if claim.quantity is None or claim.claimed is None:
        why = claim.why or (f"empirical: {claim.source}" if claim.source else "")
        return Verdict(claim, ND, detail=why)
    lo, hi = (_q.magnitude for _q in claim.claimed)
    shown = fmt(claim.claimed[0])
    unit_text = shown.split(" ", 1)[1] if " " in shown else ""
    ids = _hardware_ids(data, claim)
    values, skipped = {}, []
    for hid in ids:
        for mid in _models(claim):
            key = hid if len(_models(claim)) == 1 else (mid if len(ids) == 1 else f"{hid} × {mid}")
            try:
                values[key] = (_value(data, claim, hid, mid), hid, mid)
            except MissingInput as e:
                skipped.append(f"{key} ({e})")
    unit = f"{claim.claimed[0].units:~P}"
    if not values:
        return Verdict(claim, ND, detail="no chip has the inputs: " + "; ".join(skipped))
    rel = ""
    if claim.relative_to:
        rel = " relative to " + " × ".join(str(v) for v in claim.relative_to.values())
    judge_ = lambda v: judge(v, lo, hi, claim.tolerance, claim.band, claim.compare)  # noqa: E731
    if len(values) == 1:
        (key, (v, hid, mid)), = values.items()
        verdict = judge_(v)
        sens = _sensitivity(data, claim, hid, v, mid)
        detail = f"{claim.quantity} on {hid} with {mid}{rel}"
        if skipped:
            detail += f"; not evaluated: {', '.join(skipped)}"
        return Verdict(claim, verdict, {"value": v, "unit": unit, "hardware": hid, "model": mid},
                       f"{sig(v)} {unit_text}".strip(), _band_detail(detail, verdict, claim), sens)
    vals = sorted(v for v, _, _ in values.values())
    med = statistics.median(vals)
    verdict = judge_(med)
    outside = sorted(k for k, (v, _, _) in values.items() if judge_(v) != HOLDS)
    mkey = min(values, key=lambda k: abs(values[k][0] - med))
    sens = _sensitivity(data, claim, values[mkey][1], values[mkey][0], values[mkey][2])
    what = "chips" if len(_models(claim)) == 1 else "models" if len(ids) == 1 else "chip × model pairs"
    band = "the claimed side" if claim.compare else f"±{claim.tolerance:.0%}"
    detail = (f"{claim.quantity}{rel} over {len(values)} {what}: min {sig(vals[0])}, median {sig(med)}, "
              f"max {sig(vals[-1])} {unit_text}; outside {band}: {', '.join(outside) if outside else 'none'}")
    if skipped:
        detail += f"; not evaluated: {', '.join(s.split(' (')[0] for s in skipped)}"
    return Verdict(claim, verdict,
                   {"min": vals[0], "median": med, "max": vals[-1], "unit": unit, "outside": outside,
                    "values": {k: v for k, (v, _, _) in sorted(values.items())}},
                   f"median {sig(med)} ({sig(vals[0])}–{sig(vals[-1])}) {unit_text}".strip(),
                   _band_detail(detail, verdict, claim), sens)


def _band_detail(detail: str, verdict: str, claim: Claim) -> str:
    if verdict == ROUGHLY:
        if claim.compare:
            return f"{detail}; on the wrong side of the bound, but within {claim.band:.0%} of it"
        return f"{detail}; within ±{claim.band:.0%} but not ±{claim.tolerance:.0%}"
    return detail


@dataclass
class Audit:
    verdicts: list[Verdict]

    def rule_of_thumb(self, quantity: str):
        """The claimed value of the rule of thumb about ``quantity`` (for reference lines), or None."""
        for v in self.verdicts:
            c = v.claim
            if c.kind == "rule_of_thumb" and c.quantity == quantity and c.claimed and not c.relative_to:
                return c.claimed[0]
        return None

    def counts(self):
        return [(v, sum(1 for x in self.verdicts if x.verdict == v)) for v in VERDICTS]

    def as_json(self) -> list[dict]:
        out = []
        for v in self.verdicts:
            c = v.claim
            claimed = None
            if c.claimed is not None:
                lo, hi = c.claimed
                unit = f"{lo.units:~P}"
                claimed = ({"value": lo.magnitude, "unit": unit} if lo.magnitude == hi.magnitude
                           else {"min": lo.magnitude, "max": hi.magnitude, "unit": unit})
                claimed["tolerance"] = c.tolerance
            out.append({"id": c.id, "where": c.where, "kind": c.kind, "quote": c.quote, "claim": c.claim,
                        "quantity": c.quantity, "claimed": claimed, "computed": v.computed,
                        "verdict": v.verdict, "detail": v.detail, "sensitive_to": v.sensitivity or None,
                        **({"source": c.source} if c.source else {}), **({"note": v.note} if v.note else {})})
        return out

    def as_text(self) -> str:
        lines = [f"chalkboard audit: {len(self.verdicts)} claims  "
                 + "  ".join(f"{k}: {n}" for k, n in self.counts())]
        w = max(len(v.claim.id) for v in self.verdicts)
        for v in self.verdicts:
            c = v.claim
            lines.append(f"{v.verdict:<14} {c.id:<{w}}  claimed {c.claimed_text or '–':<16} "
                         f"computed {v.computed_text:<28} {c.where[0]}")
            if v.detail and v.verdict != ND:
                lines.append(f"{'':<15}{'':<{w}}  {v.detail}")
        return "\n".join(lines)

    def for_report(self) -> dict:
        claims = []
        for v in self.verdicts:
            c = v.claim
            ml = None
            if c.quantity and not REGISTRY[c.quantity].is_input:
                ml = printers.mathml(REGISTRY.closed_form(c.quantity), lhs=REGISTRY[c.quantity])
            short = ", ".join(w.split("_", 1)[0] + w[w.index(".txt") + 4:] for w in c.where)
            claims.append({"id": c.id, "where": short, "quote": c.quote, "claim": c.claim,
                           "claimed_text": c.claimed_text or "–", "computed_text": v.computed_text,
                           "verdict": v.verdict, "detail": v.detail, "sensitivity": v.sensitivity,
                           "note": v.note or v.why, "mathml": ml})
        return {"intro": f"{len(self.verdicts)} checkable statements from the two seed transcripts "
                         "(places as 004:LINE and 000@M:SS in lecture/seeds/), "
                         "each with its corrected reading, tested against the derivations and data. "
                         "Verdicts are computed at build time; a rule of thumb is judged on the median "
                         "over every chip.",
                "counts": self.counts(), "css": CSS, "claims": claims}


def seed_dir(root: Path) -> Path:
    return root / "lecture" / "seeds"


def run_audit(data: Data, path: Path, label: str) -> Audit:
    root = path.resolve().parent
    places = seeds.places(seed_dir(root)) if seed_dir(root).is_dir() else None
    claims = load_claims(path, label, data, places)
    return Audit([evaluate_claim(data, c) for c in claims])
