"""Gather everything the report shows into one plain structure for the templates.

Templates receive only what is built here: typeset expressions (MathML for the HTML page,
Typst math for the PDF) printed from the SymPy expressions, and numbers evaluated through
the one checked path. No formula or number is typed into a template.
"""
from __future__ import annotations

import re

import string

from derivations import (ATTENTION_FLOPS_BY_ATTENTION, ATTENTION_PARAMS_BY_ATTENTION, KV_BYTES_BY_ATTENTION,
                         REGISTRY)
from derivations.core import CHAPTERS

from ..typeset import printers
from . import explorer
from ..typeset.linebreak import formula, kept_formula
from ..errors import MissingInput, NotApplicable, NotGiven
from ..evaluation.evaluate import Scenario
from ..evaluation.settings import EVIDENCE
from ..evaluation.walk import DimensionMismatch
from ..typeset.fmt import fmt, fmt_named, sig, split
from ..data.featured import DENSE_REFERENCE_MODEL
from .figures import FIGURES
from .terms import by_terms
from .lecture import placeholders, shape



# name, layout and the values substituted -> the formula set: a rebuild in the same process (the
# edit loop) sets again only the formulas whose values changed (setting them is a fifth of a build)
_SET: dict = {}


def substituted(sc: Scenario, name: str, phone: bool = True):
    """The definition of ``name`` with each symbol replaced by its value: (text, mathml, typst);
    ``phone``: with a phone's layout of a wide one (linebreak.formula)."""
    from ..cache.figcache import plain

    q = REGISTRY[name]
    values = {}
    for s in q.expr.free_symbols:
        values[s] = sc.value(REGISTRY.q(s).name)
    key = (name, phone, repr(plain(sorted((s.name, v) for s, v in values.items()))))
    got = _SET.get(key)
    if got is None:
        if len(_SET) > 20_000:   # (a loop through many edits: the oldest half forgotten)
            for k in list(_SET)[:10_000]:
                del _SET[k]
        got = _SET[key] = formula(q.expr, values=values, phone=phone)
    return got


class _Takeaway(string.Formatter):
    def __init__(self, sc):
        self.sc = sc

    def get_value(self, key, args, kwargs):
        if key in kwargs:
            return kwargs[key]
        return fmt_named(key, self.sc.value(key))


def takeaway(sc: Scenario, template: str) -> str:
    """The section's takeaway with its numbers filled, its formats named, and a warning when
    a number in it describes a set-up that does not fit in HBM."""
    names = {"hardware": sc.hw.name, "model": sc.model.name, "bound": sc.bound()}
    try:
        text = _Takeaway(sc).format(template, **names)
    except NotGiven as e:   # a section that starts from the user's own measurement or assumption
        return (f"(Evaluated once {e.name} is given: it is {REGISTRY[e.name].meaning}, and has no default; "
                f"`eval` takes it. The formulas above are what it goes through.)")
    except MissingInput as e:
        return f"(not evaluated for this chip and model: {e})"
    text += f" (Formats: {sc.formats_text()}.)"
    flags = {sc.flag(n) for n in placeholders(template) if n in REGISTRY}
    flags.discard(None)
    if flags:
        text += " Caution: " + "; ".join(sorted(flags)) + "."
    return text


def _step(sc: Scenario, q) -> dict:
    closed = REGISTRY.closed_form(q.name)
    board = REGISTRY.board_form(q.name)
    _, def_mathml, def_typst = kept_formula("definition", q.name)
    d = {
        "name": q.name, "meaning": q.meaning, "how": q.how, "unit": q.unit,
        "symbol_text": printers.text_symbol(q),
        "def_mathml": def_mathml, "def_typst": def_typst,
        "def_text": printers.text(q.expr),
        "closed_mathml": None, "closed_typst": None, "board_mathml": None, "board_typst": None,
    }
    if closed != q.expr:
        _, d["closed_mathml"], d["closed_typst"] = kept_formula("closed form", q.name)
    if board != closed:
        _, d["board_mathml"], d["board_typst"] = kept_formula("board form", q.name)
    # a form longer than a page is shown by its named terms (report/terms.py)
    d["closed_terms"] = by_terms(q.name, "closed form") if d["closed_mathml"] else None
    d["board_terms"] = by_terms(q.name, "board form") if d["board_mathml"] else None
    d["aside"] = None
    attention = sc.model.tags.get("attention")
    for table, what in ((KV_BYTES_BY_ATTENTION, "cache"), (ATTENTION_FLOPS_BY_ATTENTION, "compute"),
                        (ATTENTION_PARAMS_BY_ATTENTION, "hold as attention weights")):
        used = table.get(attention)
        if q.name in table.values() and q.name != used:
            d["aside"] = (f"{sc.model.name} uses {attention.upper()} attention, so its numbers use "
                          f"{used}; this is what its layer and head counts would {what} without it.")
    try:
        val = sc.value(q.name)
        text, ml, ty = substituted(sc, q.name)
        d.update(result=fmt_named(q.name, val), subst_text=text, subst_mathml=ml, subst_typst=ty, na=None,
                 flag=sc.flag(q.name))
    except NotGiven as e:   # the page names what is missing; the command line is where it is given
        d.update(result=None, subst_mathml=None, subst_typst=None, subst_text=None, flag=None,
                 na=f"{e.name} ({REGISTRY[e.name].meaning}) has no default: a measurement or choice `eval` takes")
    except MissingInput as e:
        d.update(result=None, subst_mathml=None, subst_typst=None, subst_text=None, na=str(e), flag=None)
    return d


def _equation(eq) -> dict:
    return {"name": eq.name, "meaning": eq.meaning, "identity": eq.identity,
            **dict(zip(("text", "mathml", "typst"), kept_formula("equation", eq.name)))}


def chapters(sections_: list[dict]) -> list[dict]:
    """The lecture's seven chapters as the report's parts, each with its questions (numbered
    part.question, as the headings, the contents and the PDF outline number them)."""
    out = []
    for i, (cid, (title, start)) in enumerate(CHAPTERS.items(), start=1):
        own = [s for s in sections_ if s["chapter"] == cid]
        if own:
            out.append({"id": cid, "number": str(i), "title": title, "start": _clock(start), "sections": own})
    return out


APPENDICES = ("summary", "validation", "audit", "sources")   # lettered A, B, ... after the parts


def sections(sc: Scenario, figures: dict[str, str]) -> list[dict]:
    out = []
    order = list(CHAPTERS)
    within: dict[str, int] = {}
    # the lecture's chapter order; within a chapter, the order the modules declare their sections
    for s in sorted(REGISTRY.sections.values(), key=lambda s: order.index(s.chapter)):
        derived = [REGISTRY[n] for n in s.quantities if not REGISTRY[n].is_input]
        inputs = [REGISTRY[n] for n in s.quantities if REGISTRY[n].is_input]
        within[s.chapter] = within.get(s.chapter, 0) + 1
        out.append({
            "id": s.id, "title": s.title, "chapter": s.chapter,
            "number": f"{order.index(s.chapter) + 1}.{within[s.chapter]}",
            "start": "chapter “{}” (from {} into the lecture){}".format(
                CHAPTERS[s.chapter][0], _clock(CHAPTERS[s.chapter][1]),
                "; seeds " + ", ".join(s.seeds) if s.seeds else ""),
            "question": s.question, "takeaway": takeaway(sc, s.takeaway),
            "equations": [_equation(REGISTRY.equations[e]) for e in s.equations],
            "steps": [_step(sc, q) for q in derived],
            "new_inputs": [notation_row(q) for q in inputs],
            "figures": _figures_for(s.id, figures, sc),
        })
    return out


def _clock(hmm: str) -> str:
    """'0:32' (hours:minutes into the lecture) as '0 h 32 min', which cannot be read as seconds."""
    h, m = hmm.split(":")
    return f"{int(h)} h {int(m):02d} min"


def _figures_for(section_id: str, figures: dict, sc: Scenario) -> list[dict]:
    figs = []
    for n, (caption, _, sec) in FIGURES.items():
        if sec != section_id or n not in figures:
            continue
        svg, chip = figures[n]
        if chip != sc.hw.id:
            caption += (f" (drawn for {chip}: {sc.hw.id} has no public rental price; "
                        f"add one with --set rental_price=...)")
        figs.append({"name": n, "caption": caption, "svg": svg})
    return figs


def attach_figures(ctx: dict, figures: dict, sc: Scenario) -> dict:
    """Put the drawn figures into a context built before they were ready."""
    for s in ctx["sections"]:
        s["figures"] = _figures_for(s["id"], figures, sc)
    return ctx


def default_text(q) -> str | None:
    """How a workload default reads to a person."""
    d = q.default
    if not d:
        return None
    if d.startswith("=rule:"):
        return REGISTRY.rules[d[6:]][2]
    if d == EVIDENCE:
        return "the engine model fitted to the published measurements (measurements.yaml; `validate`)"
    if d.startswith("="):
        whose = {"hardware": "chip", "model": "model"}.get(REGISTRY[d[1:]].origin, REGISTRY[d[1:]].origin)
        return f"the {whose}'s {d[1:]}"
    from units import UnitParseError, parse
    try:
        return fmt(parse(d))  # "200e12 token" reads "2 × 10¹⁴ tokens"
    except (UnitParseError, ValueError, TypeError):
        return d


def notation_row(q) -> dict:
    return {"name": q.name, "unit": q.unit or "1", "meaning": q.meaning, "origin": q.origin,
            "field": q.field, "default": q.default, "default_text": default_text(q), "source": q.source,
            "mathml": printers.mathml(q.sym, display=False), "typst": printers.typst(q.sym)}


def notation() -> list[dict]:
    return [notation_row(q) for q in REGISTRY.inputs()]


def _cell(sc, name, unit=None, href=None):
    """A computed cell; with ``unit`` the number alone (the column header names the unit).
    A number for a set-up that does not fit in HBM is marked † with the reason as its title."""
    try:
        v = sc.value(name)
    except NotApplicable as e:
        return {"text": "n/a", "href": None, "title": str(e)}
    except (MissingInput, DimensionMismatch) as e:
        return {"text": "–", "href": None, "title": f"not published: {e}"}
    text = sig(split(v, unit)[0]) if unit else fmt(v)
    why = sc.flag(name)
    if why:
        return {"text": text + " †", "href": href, "title": why}
    return {"text": text, "href": href, "title": None}


def _data_cell(entry, fld, unit):
    v = entry.get(fld)
    if v is None:
        return {"text": "–", "href": None, "title": "no sourced figure"}
    from units import Quantity

    from ..data.loader import fields
    q = v.quantity * Quantity(1, "chip") if fields("hardware")[fld].unit.endswith("/chip") else v.quantity
    text = f"{sig(q.to(unit).magnitude)}" if unit else f"{int(q.magnitude)}"
    title = f"{v.source.title} (as of {v.as_of})"
    if v.source.secondary:      # a secondary source, kept where no primary one was found: low confidence
        text, title = text + " " + SECONDARY_MARK, f"{title}; secondary source, low confidence: {v.source.secondary}"
    return {"text": text, "href": v.source.url or None, "title": title}


SECONDARY_MARK = "◊"   # a figure from a secondary source (no primary one found), shown and marked


SUMMARY_COLUMNS = [
    ("Chip", None), ("Launch", None), ("bf16 TFLOP/s", None), ("fp8 TFLOP/s", None), ("fp4 TFLOP/s", None),
    ("HBM GB", None), ("HBM TB/s", None), ("Drain time ms", "schedule"), ("R = dense B* at bf16", "balance"),
    ("MoE formats w/KV/c", None), ("B* MoE sequences", "balance"),
    ("Latency floor", "latency_cost"),
]


def summary(data, model_id: str) -> dict:
    rows = []
    dense = DENSE_REFERENCE_MODEL if DENSE_REFERENCE_MODEL in data.models else next(iter(data.models))
    for hid, h in sorted(data.hardware.items(), key=lambda kv: (kv[1].values["launch_year"].quantity.magnitude, kv[0])):
        s_bf16 = Scenario(data, hid, dense, {"format": "bf16"})
        s_moe = Scenario(data, hid, model_id)
        floor = _cell(s_moe, "latency_floor", href="#sec-latency_cost")
        f = s_moe.formats
        fmts = {"text": f"{f['weights']}/{f['kv']}/{f['compute'] or '–'}" + (" ‡" if s_moe.compute_note else ""),
                "href": None, "title": s_moe.compute_note}
        b_moe = _cell(s_moe, "balance_batch", "sequence", "#sec-balance")
        try:
            cap = s_moe.value("max_batch_capacity").to("sequence").magnitude
            if s_moe.value("balance_batch").to("sequence").magnitude > cap:
                b_moe["text"] += " †"
                b_moe["title"] = (f"does not fit: at a context of {fmt(s_moe.value('context'))} at most "
                                  f"{cap:,.0f} sequences fit beside the weights")
        except MissingInput as e:
            if isinstance(e, NotApplicable) and b_moe["text"] not in ("–", "n/a"):
                b_moe["text"] += " †"
                b_moe["title"] = f"does not fit: {e}"
        rows.append({"id": hid, "name": h.name, "cells": [
            _data_cell(h, "launch_year", None),
            _data_cell(h, "flops_bf16", "TFLOP/s"), _data_cell(h, "flops_fp8", "TFLOP/s"),
            _data_cell(h, "flops_fp4", "TFLOP/s"),
            _data_cell(h, "hbm_capacity", "GB"), _data_cell(h, "hbm_bandwidth", "TB/s"),
            _cell(s_bf16, "drain_time", "ms", "#sec-schedule"),
            # the dense model's balance batch at bf16 equals R in every row: one column (the tests check it)
            _cell(s_bf16, "hardware_ratio", "token", "#sec-balance"),
            fmts, b_moe, floor,
        ]})
    return {"columns": [c for c, _ in SUMMARY_COLUMNS], "rows": rows, "dense_model": dense,
            "moe_model": model_id}


def network_table(data) -> list[dict]:
    """Scale-up vs scale-out by generation (the MoE chapter's per-generation numbers)."""
    rows = []
    for hid, h in sorted(data.hardware.items(), key=lambda kv: (kv[1].values["launch_year"].quantity.magnitude, kv[0])):
        sc = Scenario(data, hid, next(iter(data.models)))
        rows.append({"id": hid, "cells": [
            _data_cell(h, "scaleup_domain", "chip"),
            _cell(sc, "domain_dies", "die", "#sec-moe_rack"),  # header: "Domain (dies)"
            _data_cell(h, "scaleup_bandwidth", "GB/s"),
            _data_cell(h, "scaleout_bandwidth", "GB/s"),
            _cell(sc, "scaleup_scaleout_ratio", "", "#sec-moe_rack"),
        ]})
    return rows


def sources(data) -> list[dict]:
    return [{"id": s.id, "title": s.title, "url": s.url, "as_of": s.as_of, "secondary": s.secondary}
            for s in sorted(data.sources.values(), key=lambda s: s.id)]


def featured(sc: Scenario) -> dict:
    rows = []
    for n in ("batch", "context", "chips"):
        rows.append({"name": n, "symbol_typst": printers.typst(REGISTRY[n].sym),
                     "symbol_mathml": printers.mathml(REGISTRY[n].sym, display=False),
                     "value": fmt(sc.value(n)), "source": sc.records[n].source})
    return {"hardware": sc.hw.name, "hardware_id": sc.hw.id, "model": sc.model.name,
            "model_id": sc.model.id, "format": sc.format, "formats": sc.formats_text(),
            "workload": rows, "fit": sc.fit(), "fill": f"{sc.value('hbm_fill').to('').magnitude:.0%}"}


def shared_tables(data, model_id: str, kept=None) -> dict:
    """The parts of the report that do not depend on the featured chip: computed once when
    one build renders a report for every chip. ``kept``: the edit loop's parts of earlier builds
    (chalkboard/cache/incremental.py), each table made again only if what it read changed."""
    if kept is None:
        return {"notation": notation(), "summary": summary(data, model_id), "network": network_table(data),
                "sources": sources(data)}
    return {"notation": kept.traced("table", "notation", lambda _: notation()),
            "summary": kept.traced("table", ("summary", model_id), summary, model_id),
            "network": kept.traced("table", "network", network_table),
            "sources": kept.traced("table", "sources", sources)}


def ids_pattern(data) -> str:
    """A regular expression matching every chip's and model's id that has a hyphen, the longest
    first: the PDF keeps each on one line ("gb200-" / "nvl72" read as two words)."""
    ids = sorted((i for i in (*data.hardware, *data.models) if "-" in i), key=lambda i: (-len(i), i))
    return r"\b(?:" + "|".join(re.sub(r"([.+])", r"\\\1", i) for i in ids) + r")\b"


def context(data, sc: Scenario, figures: dict[str, str], audit=None, check=None, validation=None,
            shared: dict | None = None) -> dict:
    shared = shared if shared is not None else shared_tables(data, sc.model.id)
    secs = sections(sc, figures)
    shown = [a for a in APPENDICES if a not in ("validation", "audit") or {"validation": validation, "audit": audit}[a]]
    ctx = {
        "title": "chalkboard: the math behind how LLMs are trained and served",
        # the two documents' names, as each links to the other (a chip's report: --all-hardware)
        "ref": "reference.html", "main": "report.html", "ref_pdf": "reference.pdf", "main_pdf": "report.pdf",
        "featured": featured(sc),
        "notation": shared["notation"],
        "sections": secs,
        "chapters": chapters(secs),
        "appendix": {a: chr(ord("A") + i) for i, a in enumerate(shown)},   # summary -> "A", ...
        "summary": shared["summary"],
        "network": shared["network"],
        "network_columns": ["Domain (chips)", "Domain (dies)", "Scale-up GB/s per direction",
                            "Scale-out GB/s per direction", "Scale-up / scale-out"],
        "audit": audit,
        "validation": validation,
        "check": check,
        "sources": shared["sources"],
        "hardware_count": len(data.hardware), "model_count": len(data.models),
        "ids_pattern": ids_pattern(data),
        "rack_chips": fmt(sc.value("rack_chips")),
        "explorer": explorer.context(data, sc, shared.get("pairs")),
        "sprite": "",   # the glyphs the page's figures share, once they are drawn (report/svgpage.py)
    }
    return shape(ctx, data, sc, shared.get("chips"))


__all__ = ["attach_figures", "context", "shared_tables", "substituted"]
