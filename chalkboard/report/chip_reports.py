"""One report per chip (--all-hardware): the featured model and workload on every chip, the
figures that differ drawn beside the build, and an index with each chip's headline numbers."""
from __future__ import annotations

import sys


from ..cache.forked import Forked
from .lecture import chip_order


# -- one report per chip (--all-hardware) --------------------------------------------------------
INDEX_QUANTITIES = ("balance_batch", "latency_floor", "cost_floor")
CHIP_INDEPENDENT_FIGURES = ("hardware_by_year", "validation", "lifecycle_compute_vs_tokens")   # drawn once, shared by every chip


def index_cell(sc, name: str) -> dict:
    """One headline number of a chip as the index shows it: the text `build.py eval` prints
    (display), the value and unit it prints with --json, and † with the reason where the set-up
    does not fit; a dash with the reason where an input is not published."""
    from ..errors import MissingInput, NotApplicable
    from ..typeset.fmt import fmt_named, split

    try:
        v = sc.value(name)
    except NotApplicable as e:
        return {"display": "n/a", "value": None, "unit": None, "why": str(e), "flag": None}
    except MissingInput as e:
        return {"display": "–", "value": None, "unit": None, "why": f"not published: {e}", "flag": None}
    mag, unit = split(v)
    return {"display": fmt_named(name, v), "value": mag, "unit": unit, "why": None, "flag": sc.flag(name)}


def _draw_chip_figures(data, chips, model, overrides, refs) -> dict:
    """chip -> {figure name: (SVG, chip drawn)} for ``chips``, leaving out the figures that are
    the same for every chip."""
    import warnings

    from .figures import FIGURES, draw_all
    out = {}
    for hw in chips:
        out[hw] = {}
        for name in FIGURES:
            if name in CHIP_INDEPENDENT_FIGURES:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                try:
                    out[hw].update(draw_all(data, hw, model, overrides, refs, {name}))
                except (RuntimeWarning, UserWarning) as w:  # values the figure cannot show: left out, said
                    print(f"  note: {hw}: figure {name} left out ({type(w).__name__}: {w})", file=sys.stderr)
    return out


def _draw_chips_background(data, chips, model, overrides, refs):
    """Draw the figures of ``chips`` in two forked processes (half the chips each) while the
    caller renders; returns a function that waits for them."""
    from ..cache.forked import results
    jobs = [Forked("drawing the chips' figures", _draw_chip_figures, data, group, model, overrides, refs)
            for group in (chips[0::2], chips[1::2])]

    def wait() -> dict:
        out = {}
        for part in results(jobs):
            out.update(part)
        return out
    return wait


def chip_reports(data, featured_sc, overrides, refs, featured_figures, featured_pages, html_env, typ_env,
                 make_context) -> dict:
    """A report for every chip with the featured model and workload, and the index page.

    Everything that does not depend on the chip (data, derivations, the evaluation of every
    pair, the audit, the validation, the summary tables, the figures by launch year and of the
    measurements) comes from the featured build; per chip only its scenario, its sections and its
    figures are made. Returns {"pages": [{id, html, typ, figures}], "index": html}."""
    from ..evaluation.evaluate import Scenario
    from .context import attach_figures

    model = featured_sc.model.id
    order = chip_order(data)
    others = [h for h in order if h != featured_sc.hw.id]
    figures_ready = _draw_chips_background(data, others, model, overrides, refs)
    common = {n: f for n, f in featured_figures.items() if n in CHIP_INDEPENDENT_FIGURES}
    contexts, rows = {}, []
    for hid in order:
        if hid == featured_sc.hw.id:
            sc = featured_sc   # its report is the featured one, already rendered
        else:
            sc = Scenario(data, hid, model, dict(overrides))
            contexts[hid] = (sc, make_context(sc))
        h = data.hardware[hid]
        price = h.values.get("rental_price")
        rows.append({
            "id": hid, "name": h.name, "vendor": h.tags.get("vendor", ""),
            "launch_year": int(h.values["launch_year"].quantity.magnitude),
            "formats": sc.formats_text(), "fit": sc.fit(),
            "price": None if price is None else {"text": price.text, "as_of": price.as_of,
                                                  "source": price.source.title, "note": price.note},
            "cells": {q: index_cell(sc, q) for q in INDEX_QUANTITIES},
        })
    drawn = figures_ready()
    pages = []
    for hid in order:
        if hid == featured_sc.hw.id:
            pages.append({"id": hid, "html": featured_pages[0], "typ": featured_pages[1],
                          "figures": {n: svg for n, (svg, _) in featured_figures.items()}})
            continue
        sc, ctx = contexts[hid]
        figs = {**drawn[hid], **{n: (svg, hid) for n, (svg, _) in common.items()}}  # the same for every chip
        figs = {n: figs[n] for n in featured_figures if n in figs}  # the featured report's order
        attach_figures(ctx, figs, sc)
        pages.append({"id": hid, "html": html_env.get_template("report.html.j2").render(**ctx),
                      "typ": typ_env.get_template("report.typ.j2").render(**ctx),
                      "figures": {n: svg for n, (svg, _) in figs.items()}})
    from derivations import REGISTRY
    index = html_env.get_template("hardware_index.html.j2").render(
        title=f"chalkboard: {featured_sc.model.name} on every chip",
        model=featured_sc.model.name, model_id=model, featured=featured_sc.hw.id,
        workload=[(n, fmt_value(featured_sc, n)) for n in ("batch", "context")],
        overrides=sorted(overrides.items()),
        columns=[{"name": q, "meaning": REGISTRY[q].meaning} for q in INDEX_QUANTITIES], rows=rows,
        priced=sum(r["price"] is not None for r in rows))
    return {"pages": pages, "index": index}


def fmt_value(sc, name: str) -> str:
    from ..typeset.fmt import fmt_named
    return fmt_named(name, sc.value(name))
