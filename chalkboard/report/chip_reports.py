"""One report per chip (--all-hardware): the featured model and workload on every chip, the
figures that differ drawn beside the build, and an index with each chip's headline numbers."""
from __future__ import annotations

import sys


from ..cache.forked import Forked
from .lecture import chip_order


# -- one report per chip (--all-hardware) --------------------------------------------------------
INDEX_QUANTITIES = ("balance_batch", "latency_floor", "cost_floor")
CHIP_INDEPENDENT_FIGURES = ("hardware_by_year", "validation", "validation_held_out", "lifecycle_compute_vs_tokens")   # drawn once, shared by every chip


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


def chip_figures(data, chips, model, overrides, refs, kept=None):
    """The figures of ``chips``' reports, drawn beside the caller on two processes; returns a
    function that waits for them: chip -> {figure name: (SVG, chip drawn)}.

    Less is drawn than for the featured report: the figures that are the same for every chip
    (CHIP_INDEPENDENT_FIGURES) are not drawn at all, a figure drawn for another chip (the cost
    figure of a chip without a price, drawn for its priced stand-in) once for all the chips that
    show it, and each for paper alone (the page scales it to a phone's column: drawing.for_paper).
    ``kept`` (a FigureCache): a figure kept under what it reads now is taken, not drawn."""
    from .figures import FIGURES, priced_stand_in
    from .figure_process import order_of_work

    jobs: dict = {}    # (chip drawn, name) -> the chips that show it
    for hw in chips:
        for name in FIGURES:
            if name not in CHIP_INDEPENDENT_FIGURES:
                drawn = priced_stand_in(data, hw) if name == "cost_vs_batch" else hw
                if drawn is not None:
                    jobs.setdefault((drawn, name), []).append(hw)
    keys, ready = {}, {}
    if kept is not None:
        from ..cache.figcache import MISS

        for hw, name in jobs:
            keys[hw, name] = kept.figure_key(name, data, hw, model, sorted(overrides.items()),
                                             sorted((k, str(v)) for k, v in refs.items()), PAPER_ONLY)
            figure = kept.lookup(keys[hw, name], data)
            if figure is not MISS:
                ready[hw, name] = figure
    names = order_of_work(sorted({n for _, n in jobs}), len(data.hardware))
    todo = sorted((j for j in jobs if j not in ready), key=lambda j: (names.index(j[1]), j[0]))
    parts = [Forked("drawing the chips' figures", _draw_chip_figures, data, todo[i::2], model, overrides, refs,
                    kept is not None) for i in range(min(2, len(todo)))]

    def wait() -> dict:
        """chip -> {name: figure}; wait.drawn and wait.kept say how many were drawn and kept."""
        from ..cache.forked import results

        got = dict(ready)
        for part in results(parts):
            for job, (figure, reads) in part.items():
                got[job] = figure
                if kept is not None:   # (None, a figure that lacks inputs, is kept too)
                    kept.put(keys[job], reads, figure)
        wait.drawn, wait.kept = len(todo), len(ready)
        out: dict = {hw: {} for hw in chips}
        for job, shown in jobs.items():
            if got.get(job) is not None:
                for hw in shown:
                    out[hw][job[1]] = got[job]
        return out
    wait.drawing = bool(todo)
    return wait


# part of a chip figure's key in the figure cache: drawn for paper alone, unlike the featured ones
PAPER_ONLY = "paper only"


def _draw_chip_figures(data, todo, model, overrides, refs, trace) -> dict:
    """(chip, figure name) -> ((SVG, chip drawn) or None, what it read) for each of ``todo``,
    each drawn for paper alone; a figure whose values it cannot show is left out and said."""
    import warnings

    from .drawing import for_paper
    from .figure_process import Order, draw_named

    out = {}
    for hw, name in todo:
        with warnings.catch_warnings(), for_paper():
            warnings.simplefilter("error")
            try:
                order = Order(data, hw, model, dict(overrides), refs, {}, [name], trace)
                out[hw, name] = draw_named(order, [name])[name]
            except (RuntimeWarning, UserWarning) as w:  # values the figure cannot show: left out, said
                print(f"  note: {hw}: figure {name} left out ({type(w).__name__}: {w})", file=sys.stderr)
    return out


def chip_reports(data, featured_sc, overrides, refs, featured_figures, featured_pages, html_env, typ_env,
                 make_context, kept=None, typst=True) -> dict:
    """A report for every chip with the featured model and workload, and the index page.

    Everything that does not depend on the chip (data, derivations, the evaluation of every
    pair, the audit, the validation, the summary tables, the figures by launch year and of the
    measurements) comes from the featured build; per chip only its scenario, its sections and its
    figures are made (and, with ``typst``, its Typst source: --chip-pdf). Returns {"pages": [{id, html, typ, figures}], "index": html, "drawn": how many
    figures were drawn, "kept": how many were taken from the figure cache}."""
    from ..cache.forked import results
    from ..evaluation.evaluate import Scenario
    from .context import attach_figures
    from .explorer import pair_tables

    model = featured_sc.model.id
    order = chip_order(data)
    others = [h for h in order if h != featured_sc.hw.id]
    figures_ready = chip_figures(data, others, model, overrides, refs, kept)
    common = {n: f for n, f in featured_figures.items() if n in CHIP_INDEPENDENT_FIGURES}
    # every chip's scenario made once: each report's table by generation reads them all, and
    # each number is computed once for the whole build (as one report's chip_scenarios are)
    scenarios = {hid: Scenario(data, hid, model, dict(overrides)) for hid in order}
    chips = {"chips": [scenarios[h] for h in order], "pairs": pair_tables(data)}
    rows = [_index_row(data, featured_sc if hid == featured_sc.hw.id else scenarios[hid]) for hid in order]

    def pages_of(hids, drawn, contexts) -> dict:
        out = {}
        for hid in hids:
            sc = scenarios[hid]
            ctx = contexts[hid] if hid in contexts else make_context(sc, chips)
            figs = {**drawn[hid], **{n: (svg, hid) for n, (svg, _) in common.items()}}  # the same for every chip
            figs = {n: figs[n] for n in featured_figures if n in figs}  # the featured report's order
            attach_figures(ctx, figs, sc)
            out[hid] = {"id": hid, "html": html_env.get_template("report.html.j2").render(**ctx),
                        "typ": typ_env.get_template("report.typ.j2").render(**ctx) if typst else None,
                        "figures": {n: svg for n, (svg, _) in figs.items()}}
        return out
    if figures_ready.drawing:   # the pages' contexts made while the figures are drawn beside
        contexts = {hid: make_context(scenarios[hid], chips) for hid in others}
        made = pages_of(others, figures_ready(), contexts)
    else:   # every figure kept: the pages made on two cores, half each
        drawn = figures_ready()
        half = Forked("writing the chips' reports", pages_of, others[1::2], drawn, {})
        made = pages_of(others[0::2], drawn, {})
        made.update(results([half])[0])
    made[featured_sc.hw.id] = {"id": featured_sc.hw.id, "html": featured_pages[0], "typ": featured_pages[1],
                               "figures": {n: svg for n, (svg, _) in featured_figures.items()}}
    pages = [made[hid] for hid in order]
    from derivations import REGISTRY
    index = html_env.get_template("hardware_index.html.j2").render(
        title=f"chalkboard: {featured_sc.model.name} on every chip",
        model=featured_sc.model.name, model_id=model, featured=featured_sc.hw.id,
        workload=[(n, fmt_value(featured_sc, n)) for n in ("batch", "context")],
        overrides=sorted(overrides.items()),
        columns=[{"name": q, "meaning": REGISTRY[q].meaning} for q in INDEX_QUANTITIES], rows=rows,
        priced=sum(r["price"] is not None for r in rows))
    return {"pages": pages, "index": index, "drawn": figures_ready.drawn, "kept": figures_ready.kept}


def _index_row(data, sc) -> dict:
    """A chip's row of the index: its name, formats, whether the set-up fits, price and headline numbers."""
    h = sc.hw
    price = h.values.get("rental_price")
    return {"id": h.id, "name": h.name, "vendor": h.tags.get("vendor", ""),
            "launch_year": int(h.values["launch_year"].quantity.magnitude),
            "formats": sc.formats_text(), "fit": sc.fit(),
            "price": None if price is None else {"text": price.text, "as_of": price.as_of,
                                                  "source": price.source.title, "note": price.note},
            "cells": {q: index_cell(sc, q) for q in INDEX_QUANTITIES}}


def fmt_value(sc, name: str) -> str:
    from ..typeset.fmt import fmt_named
    return fmt_named(name, sc.value(name))
