"""A sweep's and a comparison's numbers as rows to read: aligned text, CSV and JSON, each column
named with the unit it is read in (chalkboard.evaluation.sweep computes them)."""
from __future__ import annotations

import csv
import io
import json
import math

import numpy as np

from .settings import rules_of
from .sweep import CSV_FALSE, CSV_TRUE, fits, shown_unit, unit_of
from ..typeset.fmt import sig


def csv_bool(b) -> str:
    return "" if b is None else CSV_TRUE if b else CSV_FALSE


def sweep_table(result: dict, quantities: list[str]) -> list[list[str]]:
    shown = {q: shown_unit(q, result["columns"][q]) for q in quantities}
    heads = [f"{n} [{unit_of(n)}]" for n in result["axes"]] + [f"{q} [{shown[q][0]}]" for q in quantities] + ["fits"]
    rows = [heads]
    size = next(iter(result["axes"].values())).size
    ok = fits(result)
    for i in range(size):
        fits_ = "n/a" if math.isnan(ok[i]) else "yes" if ok[i] else "NO †"
        rows.append([sig(v[i]) for v in result["axes"].values()]
                    + [("n/a" if math.isnan(result["columns"][q][i]) else sig(result["columns"][q][i] * shown[q][1]))
                       for q in quantities] + [fits_])
    return rows


def column_units(result: dict, quantities: list[str]) -> dict:
    """Each column's unit as every output of a sweep names it: an input in its declared unit, a
    quantity in the unit its table column is read in (ms rather than s, a share in %), with the
    factor from the declared unit to it: {name: (unit, factor)}."""
    out = {n: (unit_of(n), 1.0) for n in result["axes"]}
    out.update({q: shown_unit(q, result["columns"][q]) for q in quantities})
    return out


def sweep_records(result: dict, quantities: list[str]) -> list[dict]:
    """One dict a point, each number in the unit column_units names (a count as a whole number),
    None where a value does not apply, and whether the set-up fits as true, false or None."""
    size = next(iter(result["axes"].values())).size
    units = column_units(result, quantities)
    recs = []
    ok = fits(result)
    for i in range(size):
        r = {n: (int(v[i]) if rules_of(n).whole else float(v[i])) for n, v in result["axes"].items()}
        r.update({q: (None if math.isnan(result["columns"][q][i]) else float(result["columns"][q][i]) * units[q][1])
                  for q in quantities})
        r["feasible"] = None if math.isnan(ok[i]) else bool(ok[i])
        recs.append(r)
    return recs


def sweep_csv(result: dict, quantities: list[str], chunk: int = 65_536):
    """The sweep as CSV text, in pieces, in the units the table shows: each input in its declared
    unit, each quantity in the unit its column of the table is read in (ms rather than s, a share as
    a percentage) at full precision, named in the header as "name [unit]"; an empty field for a value
    that does not apply; and whether the set-up fits, "true" or "false" (as every CSV). Written
    column by column (each column's numbers turned to text at once; a count as a whole number) and
    joined a chunk of rows at a time, so a 10^6-point sweep holds no record per point."""
    cols = [list(map(str, v.astype(np.int64).tolist())) if rules_of(n).whole else list(map(repr, v.tolist()))
            for n, v in result["axes"].items()]
    shown = {q: shown_unit(q, result["columns"][q]) for q in quantities}
    for q in quantities:
        values = result["columns"][q]
        factor = shown[q][1]
        text = list(map(repr, (values * factor if factor != 1.0 else values).tolist()))
        for i in np.flatnonzero(np.isnan(values)).tolist():
            text[i] = ""
        cols.append(text)
    size = next(iter(result["axes"].values())).size
    ok = fits(result)
    cols.append(np.where(np.isnan(ok), "", np.where(ok == 1, CSV_TRUE, CSV_FALSE)).tolist())
    yield ",".join([*(f"{n} [{unit_of(n)}]" for n in result["axes"]), *(f"{q} [{shown[q][0]}]" for q in quantities),
                    "feasible"]) + "\n"
    for start in range(0, size, chunk):
        rows = zip(*(c[start:start + chunk] for c in cols))
        yield "\n".join(map(",".join, rows)) + "\n"


def layout_short(layout: dict | None) -> str:
    """"tp4·dp1·ep1·pp1": a row's layout in a table cell ("even" for the lecture's even spread)."""
    if not layout:
        return "even"
    return "·".join(f"{k.split('_')[0]}{v:g}" for k, v in layout.items())


def compare_table(rows: list[dict], quantities: list[str]) -> list[list[str]]:
    units = {q: rows[0]["values"][q]["unit"] if rows else unit_of(q) for q in quantities}
    out = [["hardware", "model", "chips", "layout", "batch"] + [f"{q} [{units[q]}]" for q in quantities]
           + ["fits", "formats (weights, KV, compute)"]]
    for r in rows:
        cells = []
        for q in quantities:
            v = r["values"][q]
            rng = f" ({sig(v['low'])}–{sig(v['high'])})" if "low" in v else ""
            cells.append("n/a" if v["value"] is None else sig(v["value"]) + rng + (" †" if v.get("flag") else ""))
        out.append([r["hardware"], r["model"], _cell(r["chips"]), layout_short(r["layout"]), _cell(r["batch"]),
                    *cells, "yes" if r["feasible"] else "NO †", r["formats"]])
    return out


def compare_csv(rows: list[dict], quantities: list[str]) -> str:
    """compare's rows as CSV: each value in the unit named in its header ("step_time [ms]"), an
    expected number's range as _low and _high columns, the fit as true or false."""
    ranged = [q for q in quantities if any("low" in r["values"][q] for r in rows)]
    cols = [(q, k) for q in quantities for k in ("value", *(("low", "high") if q in ranged else ()))]
    units = {q: rows[0]["values"][q]["unit"] if rows else unit_of(q) for q in quantities}
    head = ["hardware", "model", "chips [chip]", "layout", "batch [sequence]",
            *[f"{q}{'' if k == 'value' else '_' + k} [{units[q]}]" for q, k in cols], "feasible", "formats"]
    body = [[r["hardware"], r["model"], _cell(r["chips"]), layout_short(r["layout"]), _cell(r["batch"]),
             *[("" if r["values"][q].get(k) is None else repr(r["values"][q][k])) for q, k in cols],
             csv_bool(r["feasible"]), r["formats"]] for r in rows]
    return as_csv([head, *body])


def _cell(v) -> str:
    return "" if v is None else f"{v:g}"


def aligned(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for j, r in enumerate(rows):
        lines.append("  ".join(c.rjust(w) if j and _numeric(c) else c.ljust(w) for c, w in zip(r, widths)).rstrip())
    return "\n".join(lines)


def _numeric(c: str) -> bool:
    return bool(c) and (c[0].isdigit() or c[0] == "-")


def as_csv(rows: list[list[str]]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


def as_json(obj) -> str:
    return json.dumps(obj, indent=1, ensure_ascii=False)
