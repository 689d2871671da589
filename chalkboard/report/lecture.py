"""The main report's shape: each question read as the lecture reads it (question, equation, the
featured number, a table by generation, takeaway) with the audit's verdicts as one line each where
the lecture makes the claim; everything else is in the reference (templates/reference.*.j2).

What a question features is what its takeaway names: the derived quantities of the section that
the takeaway's placeholders fill (chalkboard/report/context.py, takeaway).
"""
from __future__ import annotations

import re
import string

from derivations import REGISTRY
from derivations.core import CHAPTERS

from ..errors import MissingInput, NotApplicable

from ..evaluation.evaluate import Scenario
from ..evaluation.walk import DimensionMismatch
from ..typeset import printers
from ..typeset.fmt import sig, split_named

FEATURED_STEPS = 2      # numbers a question features: the first with its formula, the others as a line
GENERATION_COLUMNS = 2  # quantities by generation, a question: two columns of numbers fit a phone


def placeholders(template: str) -> list[str]:
    """The names a takeaway's template fills, in order."""
    return [f for _, f, _, _ in string.Formatter().parse(template) if f]


def chip_order(data) -> list[str]:
    """Every chip, oldest first (launch year, then id), as the report's summary table orders them."""
    return sorted(data.hardware, key=lambda h: (data.hardware[h].values["launch_year"].quantity.magnitude, h))


def featured_names(section_id: str) -> list[str]:
    """The derived quantities of a section its takeaway names, in the takeaway's order; the
    section's first derived quantity when it names none."""
    s = REGISTRY.sections[section_id]
    own = [n for n in s.quantities if not REGISTRY[n].is_input]
    named = [n for n in dict.fromkeys(placeholders(s.takeaway)) if n in own]
    return named or own[:1]


def _number(sc: Scenario, name: str, unit: str | None) -> dict:
    """One cell of a table by generation: the number in the column's unit, † where the set-up
    does not fit (the reason its title), a dash where an input is not published."""
    try:
        v = sc.value(name)
    except NotApplicable as e:
        return {"text": "n/a", "title": str(e), "value": None}
    except (MissingInput, DimensionMismatch) as e:
        return {"text": "–", "title": f"not published: {e}", "value": None}
    mag, _ = split_named(name, v, unit)
    why = sc.flag(name)
    return {"text": sig(mag) + (" †" if why else ""), "title": why, "value": sig(mag)}


def chip_scenarios(data, sc: Scenario) -> list[Scenario]:
    """The featured model and workload on every chip, oldest first (as the summary orders them)."""
    out = []
    for h in chip_order(data):
        c = sc if h == sc.hw.id else Scenario(data, h, sc.model.id, sc.raw_overrides, sc.defaults)
        c.evidence = sc.evidence   # the engine model's fit, for the expected numbers
        out.append(c)
    return out


def generations(section_id: str, sc: Scenario, chips: list[Scenario], shown: set) -> dict | None:
    """The section's featured quantities on every chip: at most GENERATION_COLUMNS of them, those
    whose numbers differ from chip to chip and that no question before showed (``shown``, updated);
    None when none is left (the featured number says it all)."""
    columns = []
    for name in featured_names(section_id):
        if name in shown:
            continue
        try:
            unit = split_named(name, sc.value(name))[1]
        except MissingInput:
            continue
        cells = [_number(c, name, unit) for c in chips]
        if len({c["value"] for c in cells if c["value"] is not None}) < 2:
            continue
        q = REGISTRY[name]
        shown.add(name)
        columns.append({"name": name, "unit": unit, "meaning": q.meaning, "cells": cells,
                        "mathml": printers.mathml(q.sym, display=False), "typst": printers.typst(q.sym)})
        if len(columns) == GENERATION_COLUMNS:
            break
    if not columns:
        return None
    rows = [{"id": c.hw.id, "featured": c.hw.id == sc.hw.id, "cells": [col["cells"][i] for col in columns]}
            for i, c in enumerate(chips)]
    return {"columns": columns, "rows": rows}


# -- where the lecture makes each claim --------------------------------------------------------
_TRANSCRIPT = re.compile(r"^transcript@(\d+):(\d\d):\d\d")
_SEED_LINE = re.compile(r"^(\d{3}):(\d+)$")
_SEED_TIME = re.compile(r"^(\d{3})@(\d+):(\d\d)$")


def _minutes(hmm: str) -> int:
    h, m = hmm.split(":")
    return int(h) * 60 + int(m)


def _chapter_at(minute: int) -> str:
    """The lecture's chapter running at ``minute`` into it."""
    at = [c for c, (_, start) in CHAPTERS.items() if _minutes(start) <= minute]
    return at[-1] if at else next(iter(CHAPTERS))


def _nearest_seed(where: str) -> str | None:
    """The section whose seed places are nearest ``where`` in the same seed file (a line or a
    time in it), or None."""
    for pattern, pos in ((_SEED_LINE, lambda m: int(m.group(2))),
                         (_SEED_TIME, lambda m: int(m.group(2)) * 60 + int(m.group(3)))):
        m = pattern.match(where)
        if not m:
            continue
        best = None
        for s in REGISTRY.sections.values():
            for seed in s.seeds:
                k = pattern.match(seed)
                if k and k.group(1) == m.group(1):
                    d = abs(pos(k) - pos(m))
                    if best is None or d < best[0]:
                        best = (d, s.id)
        return best[1] if best else None
    return None


def place(claim: dict) -> tuple[str, str | None]:
    """("section", id) where the report derives what a claim is judged on, or where the lecture's
    seed places put it; ("chapter", id) by its time in the lecture; ("end", None) otherwise."""
    if claim.get("section"):
        return "section", claim["section"]
    where = (claim.get("where") or "").split(", ")[0]
    seed = _nearest_seed(where)
    if seed:
        return "section", seed
    m = _TRANSCRIPT.match(where)
    if m:
        return "chapter", _chapter_at(int(m.group(1)) * 60 + int(m.group(2)))
    return "end", None


QUOTE_CHARS = 70   # of a quote on the PDF's one line (the page cuts it with an ellipsis at its width)


def short_quote(quote: str) -> str:
    """``quote`` cut at a word to at most QUOTE_CHARS characters, "…" where it was cut."""
    if len(quote) <= QUOTE_CHARS:
        return quote
    cut = quote[:QUOTE_CHARS].rsplit(" ", 1)[0]
    return cut.rstrip(",;:.") + "…"


def verdict_line(c: dict) -> dict:
    """A claim as the main report's one line: its verdict, its words, its place, the numbers."""
    return {"id": c["id"], "verdict": c["verdict"], "quote": c["quote"], "quote_short": short_quote(c["quote"]),
            "where": c["where"].split(", ")[0], "claimed": c["claimed_text"], "computed": c["computed_text"]}


def place_claims(ctx: dict) -> None:
    """Attach to each section and chapter of ``ctx`` the verdicts the lecture makes there (as one
    line each), and to ``ctx`` those with no place ("claims_elsewhere")."""
    by_section, by_chapter, rest = {}, {}, []
    for c in (ctx.get("audit") or {}).get("claims", []):
        kind, where = place(c)
        line = verdict_line(c)
        if kind == "section" and where in REGISTRY.sections:
            by_section.setdefault(where, []).append(line)
        elif kind == "chapter":
            by_chapter.setdefault(where, []).append(line)
        else:
            rest.append(line)
    for s in ctx["sections"]:
        s["claims"] = by_section.get(s["id"], [])
    for c in ctx["chapters"]:
        c["claims"] = by_chapter.get(c["id"], [])
    ctx["claims_elsewhere"] = rest


def shape(ctx: dict, data, sc: Scenario, chips: list | None = None) -> dict:
    """The main report's parts of ``ctx``: each section's featured steps, the rest as one line
    each, its table by generation, its verdicts. ``chips``: chip_scenarios(data, sc) where it was
    made before (--all-hardware: one list for every chip's report, each number computed once)."""
    chips = chip_scenarios(data, sc) if chips is None else chips
    shown: set = set()
    for s in ctx["sections"]:
        names = featured_names(s["id"])[:FEATURED_STEPS]
        s["featured_steps"] = [st for n in names for st in s["steps"] if st["name"] == n]
        s["other_steps"] = [st for st in s["steps"] if st["name"] not in names]
        s["generations"] = generations(s["id"], sc, chips, shown)
        s["seeds"] = REGISTRY.sections[s["id"]].seeds
    place_claims(ctx)
    return ctx


__all__ = ["featured_names", "generations", "place", "place_claims", "shape"]
