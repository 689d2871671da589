"""The audit as a whole: counts by kind, the headline, the list of lecture errors; as text, JSON and the report's rows."""
from __future__ import annotations

from dataclasses import dataclass

from ..typeset.fmt import counted, sig, unit_words

from .rules import (LISTED, CSS, DEFINITION, DEPENDS, FAILS, HOLDS, INCONCLUSIVE, KIND_TEXT, KINDS, ND, RECOMPUTED, ROUGHLY,
                    rule_of_thumb, Verdict, VERDICTS)
from .evidence import CONSTANT, DUPLICATE, ECHO, EVIDENCE, IDENTITY, INDEPENDENT

EVIDENCE_KINDS = ("derived", "spec", "input", "sourced")   # judged against data the lecture did not supply
_APART = {ECHO: ("echo", "echoes"), IDENTITY: ("identity (x/x)", "identities (x/x)"),
          CONSTANT: ("constant no context or batch moves", "constants no context or batch moves"),
          DUPLICATE: ("duplicate", "duplicates")}


def _short(where: list[str]) -> str:
    """Seed places as the report prints them: 004:57 for 004_<hash>.txt:57."""
    return ", ".join(w.split("_", 1)[0] + w[w.index(".txt") + 4:] if ".txt" in w else w for w in where)


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
            out.append({"id": v.claim.id, "kind": v.claim.kind, "miss": v.miss, "where": v.claim.where,
                        "evidence": _error_evidence(v), "size": v.size or None,
                        "claimed": v.claim.claimed_text or "–", "computed": v.computed_text,
                        "inherited_by": [i for i in v.inherited_by if i in by_id and by_id[i].verdict == FAILS]})
        return out

    def headline(self) -> str:
        """The audit in one sentence, every number counted from the verdicts: what independent evidence
        decided, apart from the lecture's own arithmetic redone and the encoding's definitions."""
        count = {k: sum(1 for v in self.verdicts if v.verdict == k and v.claim.kind in EVIDENCE_KINDS
                        and v.evidence in ("", INDEPENDENT)) for k in VERDICTS}
        apart = {e: sum(1 for v in self.verdicts if v.evidence == e) for e in EVIDENCE if e != INDEPENDENT}
        judged = sum(count[k] for k in (HOLDS, ROUGHLY, DEPENDS, FAILS))
        recomputed = sum(1 for v in self.verdicts if v.verdict == RECOMPUTED)
        definitions = sum(1 for v in self.verdicts if v.verdict == DEFINITION)
        errs = self.errors()
        inherited = sum(len(e["inherited_by"]) for e in errs)

        def many(k, one, more):
            return f"{k} {one if k == 1 else more}"
        return (f"{many(judged, 'verdict', 'verdicts')} on independent evidence (hardware, model and cited data): "
                f"{many(count[HOLDS], 'holds', 'hold')}, {many(count[ROUGHLY], 'holds roughly', 'hold roughly')}, "
                f"{count[DEPENDS]} {'depends' if count[DEPENDS] == 1 else 'depend'} on a reasonable choice, "
                f"{many(count[FAILS], 'does not hold', 'do not hold')}"
                + (f" ({count[INCONCLUSIVE]} more inconclusive)" if count[INCONCLUSIVE] else "") + "; "
                f"{many(len(errs), 'distinct lecture error', 'distinct lecture errors')} over all kinds"
                + (" (" + ", ".join(f"{n} {e}" for e, n in _tally(x["evidence"] for x in errs)) + ")" if errs else "")
                + (f" ({many(inherited, 'further claim inherits', 'further claims inherit')} one)" if inherited else "")
                + f"; not evidence: {recomputed} recomputed (the lecture's own numbers and algebra redone), "
                f"{many(definitions, 'definition', 'definitions')} (the encoding restated), "
                f"{sum(apart.values())} agreeing on evidence no sourced figure moves ("
                + ", ".join(f"{n} {_APART[e][n != 1]}" for e, n in apart.items()) + ")"
                + f"; {sum(1 for v in self.verdicts if v.verdict == ND)} not judged")

    def only(self, verdict: str | None = None, kind: str | None = None, chapter: str | None = None,
             text: str | None = None) -> "Audit":
        """The audit of the claims that match every filter given (a verdict, a kind, a lecture chapter,
        words in the id or the quote)."""
        def keep(v):
            c = v.claim
            return ((verdict is None or v.verdict == verdict) and (kind is None or c.kind == kind)
                    and (chapter is None or c.chapter == chapter)
                    and (text is None or text.lower() in f"{c.id} {c.quote} {c.claim}".lower()))
        return Audit([v for v in self.verdicts if keep(v)])

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
                "id": c.id, "where": c.where, "links": c.links or None, "decision": v.decision, "loose": v.loose or None,
                "chapter": c.chapter, "kind": c.kind, "quote": c.quote, "claim": c.claim,
                "quantity": c.quantity, "claimed": claimed, "computed": v.computed, "verdict": v.verdict,
                "evidence": v.evidence or None, "evidence_why": v.evidence_why or None,
                "miss": v.miss or None, "band": v.band or None, "scope": v.scope or None,
                "values": v.values, "inputs": v.inputs, "flips_if": v.flips_if, "sensitivity": v.sensitivity,
                "formula": v.formula[0] if v.formula else None, "fit": v.fit or None, "detail": v.detail,
                "inherits": c.inherits, "inherited_by": v.inherited_by or None,
                "derivation": [{k: d[k] for k in ("name", "symbolic", "numbers", "value")} for d in v.derivation] or None,
                "swept": v.swept or None, "unswept": v.unswept or None, "context": c.context or None,
                **({"also": c.also} if c.also else {}),
                **({"reading": v.reading} if v.reading else {}),
                **({"source": c.source} if c.source else {}), **({"note": v.note} if v.note else {})})
        return out

    def as_text(self) -> str:
        n = len(self.verdicts)
        lines = [f"chalkboard audit: {n} claim{'' if n == 1 else 's'}"]
        w = max(len(k) for k in KINDS)
        lines.append(f"  {'kind':<{w}}  " + "  ".join(f"{k:>13}" for k in VERDICTS))
        for kind, row in self.counts_by_kind():
            lines.append(f"  {kind:<{w}}  " + "  ".join(f"{n:>13}" for _, n in row))
        lines.append(f"  {'all':<{w}}  " + "  ".join(f"{n:>13}" for _, n in self.counts()))
        lines.append("headline: " + self.headline())
        for e in self.errors():
            inh = f" (inherited by {', '.join(e['inherited_by'])})" if e["inherited_by"] else ""
            lines.append(f"  error  {e['id']} [{e['kind']}, {e['evidence']}]{': ' + e['miss'] if e['miss'] else ''}{inh}")
            lines.append(f"           claimed {e['claimed']}, computed {e['computed']}  ({', '.join(e['where'])})")
            if e["size"]:
                lines.append(f"           {e['size']}")
        lines.append("")
        idw = max(len(v.claim.id) for v in self.verdicts)
        for v in self.verdicts:
            c = v.claim
            lines.append(f"{v.verdict:<13} {c.kind:<11} {c.id:<{idw}}  claimed {c.claimed_text or '–'}  "
                         f"computed {v.computed_text}  {c.where[0]}")
            pad = " " * 26
            if v.decision:
                lines.append(f"{pad}decision: {v.decision}")
            if c.links:
                lines.append(f"{pad}source: {', '.join(c.links)}")
            if v.verdict == ND:
                lines.append(f"{pad}why: {v.detail}")
                continue
            if v.miss and not v.decision:
                lines.append(f"{pad}{v.miss}")
            if v.verdict == INCONCLUSIVE and not v.decision:
                lines.append(f"{pad}{v.detail}")
            lines.append(f"{pad}band: {v.band}   scope: {v.scope}")
            if len(v.values) > 1:
                lines.append(f"{pad}values: " + ", ".join(
                    f"{k} {_vshow(x)}" + (f" ({x['mark']})" if x.get("mark") else "") for k, x in v.values.items()))
            if c.also:
                lines.append(f"{pad}also said at " + "; ".join(f"{', '.join(a['where'])} ({a['id']}: \"{a['quote']}\")"
                                                          for a in c.also))
            if c.inherits:
                lines.append(f"{pad}inherits the error of {c.inherits}")
            if v.fit:
                lines.append(f"{pad}set-up does not fit: " + "; ".join(v.fit))
            if v.flips_if:
                lines.append(f"{pad}flips if " + "; ".join(v.flips_if))
            if v.verdict == FAILS and not v.inherited_from:   # an error: what it survived
                lines.append(f"{pad}{survived(v)}")
        return "\n".join(lines)

    def for_report(self) -> dict:
        claims = []
        for v in self.verdicts:
            c = v.claim
            short = _short(c.where)
            claims.append({
                "id": c.id, "where": short, "quote": c.quote, "claim": c.claim, "kind": c.kind,
                "claimed_text": c.claimed_text or "–", "computed_text": v.computed_text, "verdict": v.verdict,
                "detail": v.detail, "band": v.band, "scope": v.scope, "miss": v.miss,
                "per_chip": [{"key": k, "value": _vshow(x), "verdict": x["verdict"], "mark": x.get("mark") or "",
                            "format": x.get("format") or ""} for k, x in v.values.items()],
                "per_chip_more": max(0, len(v.values) - LISTED),   # the PDF lists the first LISTED
                "inputs": v.inputs, "flips_if": v.flips_if, "sensitivity": v.sensitivity, "fit": v.fit,
                "formula_text": v.formula[0] if v.formula else None,
                "mathml": v.formula[1] if v.formula else None, "typst": v.formula[2] if v.formula else None,
                "inherits": c.inherits, "inherited_by": v.inherited_by, "reading": v.reading,
                "also": [{"id": a["id"], "quote": a["quote"],
                          "where": _short(a["where"])} for a in c.also],
                "source": c.source, "note": v.note, "why": v.why if c.kind != "qualitative" else None,
                "decision": v.decision, "loose": v.loose, "links": c.links,
                "section": c.section, "section_title": _section_title(c.section),
                "inputs_that_matter": _that_matter(v), "context": c.context,
                "derivation": v.derivation, "survived": survived(v) if v.verdict == FAILS and not v.inherited_from else None})
        return {"intro": f"{len(self.verdicts)} checkable statements from the two seed transcripts "
                         "(places as 004:LINE and 000@M:SS in lecture/seeds/) and the public cleaned transcript "
                         "(transcript@H:MM:SS, linked to the lecture at that second), each with its corrected reading, "
                         "the lecture's sentences around it (its slips read as meant beside the verbatim words), "
                         "its deciding derivation with the numbers and its decision as one sentence. Each verdict says "
                         "what it tested (its kind) and what its evidence is: \"holds\" only on data independent of the "
                         "lecture; \"recomputed\" when the lecture's own numbers or algebra are redone; \"definition\" "
                         "when the check restates the derivations' own definition; \"depends\" when a reasonable choice "
                         "(a context, a batch, a format, another chip) turns a miss into a hold or a hold into a miss, "
                         "with the choices on each side shown on the card. A hold that no sourced figure moves (an "
                         "echo, x/x, a constant, a duplicate) says so and is counted apart; an error is sized as a "
                         "range over the choices that keep it one. A set-up that does not fit in HBM never decides a verdict, and a claim that reads a "
                         "number another card rejects inherits that rejection. \"About X\" holds within a "
                         "factor (×/÷1.3 unless stated) and holds roughly within a wider factor (×/÷2 unless "
                         "stated); a bound holds on the claimed side, and roughly when it misses by no more than the "
                         "tolerance. A claim over several chips holds "
                         "when the median and at least two thirds of its distinct chips are within the band and "
                         "none is outside the wider band; holds roughly when only the median is, or a chip is "
                         "outside the wider band; a sentence about models in general is judged over the catalogue's "
                         "models the same way, and its decision ends with the share it holds on. An error lists every "
                         "sweep it survived. Each chip is evaluated at its serving format.",
                "kinds": [{"kind": k, "text": KIND_TEXT[k], "counts": row} for k, row in self.counts_by_kind()],
                "verdict_names": list(VERDICTS), "headline": self.headline(), "errors": self.errors(),
                "counts": self.counts(), "css": CSS, "claims": claims}


def _error_evidence(v: Verdict) -> str:
    """What an error rests on: data a source gives, the lecture's own arithmetic redone, or the form of a
    cited source's formula as the derivations encode it (an identity SymPy finds false)."""
    if v.claim.kind in EVIDENCE_KINDS:
        return "on independent evidence"
    if v.claim.kind == "identity":
        return "in the form of a cited source's formula" if v.claim.source else "in the encoding's algebra"
    return "in the lecture's own arithmetic"


def _tally(items) -> list[tuple[str, int]]:
    out = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return list(out.items())


def survived(v: Verdict) -> str:
    """What an error survived, as its card says it: every sweep tried (none turns it), or why none applies."""
    if v.swept:
        return f"survives {len(v.swept)} sweep{'' if len(v.swept) == 1 else 's'}: " + "; ".join(v.swept)
    return f"no sweep applies: {v.unswept}" if v.unswept else "no sweep applies"


def _section_title(section: str | None) -> str | None:
    from derivations import REGISTRY
    return REGISTRY.sections[section].title if section in REGISTRY.sections else None


def _that_matter(v: Verdict) -> list[dict]:
    """The inputs a reader needs: those the sweeps move, those the claim fixes, and the chip's and
    model's own figures; workload defaults no sweep touched are left to the full list."""
    moved = " ".join(v.flips_if + v.sensitivity)
    out = []
    for i in v.inputs:
        src = i.get("source") or ""
        if (i["name"] in moved or "fixed by the claim" in src or src.startswith(("hardware", "model"))
                or i["name"].split("_")[0] in moved):
            out.append(i)
    return out or v.inputs[:6]


def _vshow(x) -> str:
    val = x["value"]
    if isinstance(val, bool):
        return "holds" if val else "fails"
    return _num(val, x.get("unit") or "")


def _num(val: float, unit: str) -> str:
    """A value in the claim's unit, plural where a count reads that way ('72 chips')."""
    text = sig(val)
    if not unit or unit == "dimensionless":
        return text
    return f"{text} {unit_words(counted(text, unit))}"
