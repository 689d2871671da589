"""Many numbers at once: `eval --sweep` over a grid of inputs, and `compare` across chips and models.

Both read the same declared quantities through the compiled path (chalkboard.compiled), so
a sweep of a million points costs about what hand-written numpy does. A sweep is checked
against the Pint walk at three of its points before anything is printed.
"""
from __future__ import annotations

import math

import numpy as np

from derivations import REGISTRY

from ..errors import InputError, MissingInput, short
from .dependence import flag_kind, setup_dependence
from .fit import within
from .evaluate import Scenario
from .settings import rules_of

MAX_POINTS = 10_000_000


def parse_axis(text: str) -> tuple[str, np.ndarray]:
    """'batch=1:65536:log' -> ('batch', 1, 2, 4, ..., 65536).

    Forms: ``a,b,c`` (a list); ``start:stop:log`` (every doubling from start to stop);
    ``start:stop:N:log`` (N log-spaced points); ``start:stop:N`` (N evenly spaced points);
    ``start:stop`` (every whole number from start to stop). Values are in the input's
    declared unit (see `python build.py list quantities`).
    """
    if "=" not in text:
        raise InputError(f"--sweep {short(text)}: expected NAME=SPEC, e.g. --sweep batch=1:65536:log")
    name, spec = (p.strip() for p in text.split("=", 1))
    if name not in REGISTRY or not REGISTRY[name].is_input:
        raise InputError(f"--sweep {short(name)}: not an input (see `python build.py list quantities`)")
    try:
        if "," in spec:
            _at_most(text, spec.count(",") + 1)
            values = np.array([float(x) for x in spec.split(",")])
        else:
            parts = spec.split(":")
            log = parts[-1].strip().lower() == "log"
            if log:
                parts = parts[:-1]
            if len(parts) not in (2, 3):
                raise ValueError
            lo, hi = float(parts[0]), float(parts[1])
            n = int(parts[2]) if len(parts) == 3 else None
            if not (math.isfinite(lo) and math.isfinite(hi)):
                raise InputError(f"--sweep {short(text)}: the ends must be finite numbers")
            if log:
                if lo <= 0 or hi <= 0:
                    raise InputError(f"--sweep {short(text)}: a log sweep needs positive ends")
                if n is None:
                    k = int(math.floor(math.log2(hi / lo) + 1e-9))
                    _at_most(text, k + 1)
                    values = lo * 2.0 ** np.arange(k + 1)
                else:
                    _at_most(text, n)
                    values = np.geomspace(lo, hi, n)
            elif n is None:
                _at_most(text, math.floor(hi) - math.ceil(lo) + 1)
                values = np.arange(math.ceil(lo), math.floor(hi) + 1, dtype=float)
            else:
                _at_most(text, n)
                values = np.linspace(lo, hi, n)
    except (ValueError, OverflowError):
        raise InputError(f"--sweep {short(text)}: expected a,b,c or start:stop[:N][:log]") from None
    rules = rules_of(name)
    if rules.whole and values.size:  # a count: whole points only, each once
        values = np.unique(np.round(values))
    if values.size == 0 or values.size > MAX_POINTS or not np.all(np.isfinite(values)):
        raise InputError(f"--sweep {short(text)}: between 1 and {MAX_POINTS:,} finite points")
    if np.any(values <= 0):
        raise InputError(f"--sweep {short(text)}: values must be positive")
    if rules.most and values.max() > rules.most[0]:
        raise InputError(f"--sweep {short(text)}: {name} is at most {rules.most[0]:,} ({rules.most[1]})")
    return name, values


def _at_most(text: str, points) -> None:
    """A grid's size checked before it is made: a sweep of 10^9 points is refused, not allocated."""
    if not 1 <= points <= MAX_POINTS:
        raise InputError(f"--sweep {short(text)}: between 1 and {MAX_POINTS:,} points (this one has {points:,.0f})")


def sweep(sc: Scenario, quantities: list[str], axes: list[tuple[str, np.ndarray]]) -> dict:
    """The quantities over the grid of the axes: {'axes': [...], 'columns': {name: array}, ...}."""
    for q in quantities:
        if q not in REGISTRY:
            raise InputError(f"unknown quantity {q!r} (see `python build.py list quantities`)")
    names = [n for n, _ in axes]
    if len(set(names)) != len(names):
        raise InputError("each input can be swept once")
    size = math.prod(v.size for _, v in axes)   # before the grid is made: never allocated past the limit
    if size > MAX_POINTS:
        raise InputError(f"the sweep has {size:,} points: at most {MAX_POINTS:,}")
    grids = np.meshgrid(*[v for _, v in axes], indexing="ij")
    flat = {n: g.ravel() for n, g in zip(names, grids)}
    fill = "hbm_fill_layout" if any(REGISTRY[q].section == "layout" for q in quantities) else "hbm_fill"
    want = list(dict.fromkeys(quantities + [fill]))
    if _rechosen(names, want):
        out = _point_by_point(sc, want, flat)
        return {"axes": flat, "columns": {q: out[q] for q in quantities}, "fill": out.get(fill),
                "share": _share(sc, flat)}
    fitted = _fitted_efficiency(sc, want, flat)
    at = {**flat, **(fitted[0] if fitted else {})}   # the engine model's inputs at each point, held
    try:
        out = sc.sweep_many(want, {n: (v, None) for n, v in at.items()})
    except MissingInput:
        out = sc.sweep_many(quantities, {n: (v, None) for n, v in at.items()})
    _spot_check(sc, quantities, at, out)
    columns = {q: out[q] for q in quantities}
    if fitted:   # each expected number's range: the efficiency at the ends of its held-out error
        reading = [q for q in quantities if set(fitted[0]) & {l.name for l in REGISTRY.leaves(q)}]
        ends = [sc.sweep_many(reading, {n: (v, None) for n, v in {**flat, **e}.items()}) for e in fitted[1:]]
        for q in reading:   # what the ends and the fit span: a range always holds its value
            lo = np.minimum(np.minimum(ends[0][q], ends[1][q]), columns[q])
            hi = np.maximum(np.maximum(ends[0][q], ends[1][q]), columns[q])
            columns[q + RANGE_SUFFIXES[0]], columns[q + RANGE_SUFFIXES[1]] = lo, hi
    return {"axes": flat, "columns": columns, "fill": out.get(fill), "share": _share(sc, flat)}


def _share(sc: Scenario, flat: dict):
    """The engine's share of the HBM a point may fill and still fit (evaluation/fit.py), swept or held."""
    if "engine_memory_share" in flat:
        return flat["engine_memory_share"]
    try:
        return sc.memory_share()
    except MissingInput:
        return 1.0


def fits(result: dict) -> np.ndarray:
    """Each point's fit as 1.0 (fits), 0.0 (does not) or NaN (unknown): its physical fill within the
    engine's share of the HBM, the rule eval states."""
    fill = result["fill"]
    size = next(iter(result["axes"].values())).size
    if fill is None:
        return np.full(size, np.nan)
    share = np.broadcast_to(np.asarray(result.get("share", 1.0), dtype=float), fill.shape)
    return np.where(np.isnan(fill), np.nan, within(fill, share).astype(float))


RANGE_SUFFIXES = ("_low", "_high")   # an expected number's range, as columns beside it
# a yes-or-no in every CSV (sweep, compare): the words JSON uses, which pandas reads as booleans
CSV_TRUE, CSV_FALSE = "true", "false"


def shown_quantities(result: dict, quantities: list[str]) -> list[str]:
    """The columns a sweep prints: each quantity, then the ends of its range where it has one."""
    return [c for q in quantities for c in (q, *(q + s for s in RANGE_SUFFIXES)) if c in result["columns"]]


def _declared(name: str) -> str:
    """The declared quantity a column is read as: a range's end is in its quantity's unit."""
    for suffix in RANGE_SUFFIXES:
        if name not in REGISTRY and name.endswith(suffix) and name[: -len(suffix)] in REGISTRY:
            return name[: -len(suffix)]
    return name


def _fitted_efficiency(sc, quantities: list[str], flat: dict):
    """Where the quantities read the engine model fitted to the published runs (an expected number):
    ({input: its value at each point}, the same at the low end of its range, at the high end), in
    base units."""
    from .expected import EVIDENCE_INPUTS

    read = {l.name for q in quantities for l in REGISTRY.leaves(q)}
    fitted = [n for n in EVIDENCE_INPUTS if n in read and sc._way(n) == "evidence"]
    if not fitted or sc.evidence is None:
        return None
    shape = next(iter(flat.values())).shape
    return tuple({n: np.full(shape, inputs[n]) for n in fitted}
                 for inputs in (sc.evidence().inputs(), *sc.evidence().ends()))


# a sweep that moves the layout chooses it again at every point, one scenario a point: at most this many
MAX_RECHOSEN = 20_000


def _rechosen(swept: list[str], quantities: list[str]) -> bool:
    """Whether a swept input changes another input the quantities read: a workload default chosen
    by a rule from it (dp_attention from tp and chips), or a layout degree, which sets the chips."""
    from .settings import LAYOUT_DEGREES

    if any(v in LAYOUT_DEGREES for v in swept):
        return True
    readers, grew = set(swept), True
    while grew:
        grew = False
        for q in REGISTRY.inputs("workload"):
            d = q.default or ""
            if d.startswith("=rule:") and q.name not in readers and readers & set(REGISTRY.rules[d[6:]][1]):
                readers.add(q.name)
                grew = True
    chosen = readers - set(swept)
    return bool(chosen) and any(l.name in chosen for q in quantities for l in REGISTRY.leaves(q))


def _point_by_point(sc, quantities: list[str], flat: dict) -> dict:
    """The quantities at each point of the grid, each point its own scenario (the layout and every
    default chosen again); NaN where a quantity does not apply."""
    size = next(iter(flat.values())).size
    if size > MAX_RECHOSEN:
        raise InputError(f"sweeping {', '.join(flat)} chooses the layout again at every point: at most "
                         f"{MAX_RECHOSEN:,} points (this grid has {size:,})")
    out = {q: np.full(size, np.nan) for q in quantities}
    for i in range(size):
        try:
            one = Scenario(sc.data, sc.hw.id, sc.model.id, {**_held(sc, flat), **_point(flat, i)}, defaults=sc.defaults)
        except InputError as e:
            raise InputError(f"--sweep at {', '.join(f'{n}={v[i]:g}' for n, v in flat.items())}: {e}") from None
        for q in quantities:
            try:
                out[q][i] = one.mag(q)
            except (MissingInput, InputError):
                pass
    return out


def _held(sc, flat: dict) -> dict:
    """The overrides each point's scenario starts from: the sweep's own, and the chips the serving
    defaults chose for the set-up (held over the grid, as the sweep holds them), unless the grid moves
    the chips or the layout that sets them."""
    from .settings import LAYOUT_DEGREES

    chips = sc.pinned.get("chips")
    if chips is None or "chips" in flat or any(n in flat for n in LAYOUT_DEGREES) or \
            not chips[1].startswith("serving default"):
        return dict(sc.raw_overrides)
    return {**sc.raw_overrides, "chips": chips[0]}


def held_defaults(sc, swept: list[str]) -> dict:
    """The serving defaults a sweep holds over its grid, as eval names them ({name: display}): the
    batch and context not swept, and the chips chosen for them (_held)."""
    from ..typeset.fmt import fmt_named

    chips_held = "chips" in _held(sc, {n: None for n in swept})
    return {n: fmt_named(n, v) for n, (v, why) in sc.pinned.items()
            if why.startswith("serving default") and n not in swept and (n != "chips" or chips_held)}


def _point(flat: dict, i: int) -> dict:
    """The swept inputs at point ``i`` as overrides: Pint quantities in each input's declared unit
    (never bare numbers, which a dimensional input refuses)."""
    from units import Quantity

    return {n: Quantity(float(v[i]), REGISTRY[n].unit or "") for n, v in flat.items()}


def _spot_check(sc, quantities, flat, out) -> None:
    """The first, middle and last points recomputed through the Pint walk: they must agree."""
    size = next(iter(flat.values())).size
    for i in sorted({0, size // 2, size - 1}):
        one = Scenario(sc.data, sc.hw.id, sc.model.id, {**_held(sc, flat), **_point(flat, i)}, defaults=sc.defaults)
        for q in quantities:
            got = out[q][i]
            try:
                ref = one.pint_value(q).to(REGISTRY[q].unit or "").magnitude
            except MissingInput:
                ref = float("nan")
            if not (math.isnan(got) and math.isnan(ref)) and not math.isclose(got, ref, rel_tol=1e-9):
                raise RuntimeError(f"sweep of {q} disagrees with the Pint walk at point {i}: {got} vs {ref}")


def unit_of(q: str) -> str:
    """A quantity's declared unit, '1' for a bare number."""
    return REGISTRY[_declared(q)].unit or "1"


def shown_unit(q: str, values) -> tuple[str, float]:
    """A unit a person would read the column in (ms rather than s), and the factor to it; ``values``
    a list, or a column's array (sampled)."""
    if isinstance(values, np.ndarray):
        values = _sample(values)
    from units import Quantity, unit as parse_unit

    from .compiled import base_factor, declared
    from ..typeset.fmt import SHARE_SYMBOL, display_unit, is_share, share_factor

    q = _declared(q)
    if is_share(q):   # a share of a whole, read as a percentage (as the report and eval print it)
        return SHARE_SYMBOL, 1 / share_factor()
    finite = [abs(v) for v in values if v is not None and not math.isnan(v)]
    if not finite or not REGISTRY[q].unit:
        return unit_of(q), 1.0
    shown = display_unit(Quantity(sorted(finite)[len(finite) // 2], declared(q)[0]))
    target = parse_unit("1" + shown if shown.startswith("/") else shown)
    return shown, declared(q)[1] / base_factor(target)


def renamed(result: dict, answered: list[str], asked: list[str]) -> dict:
    """``result`` with its columns keyed by the names asked (step_time, not the step_time_layout
    that answered it), an expected number's range with them (step_time_expected_low)."""
    cols = {}
    for a, n in zip(asked, answered):
        for suffix in ("", *RANGE_SUFFIXES):
            if n + suffix in result["columns"]:
                cols[a + suffix] = result["columns"][n + suffix]
    return {**result, "columns": cols}


def _sample(values: np.ndarray, most: int = 10_001) -> list:
    """Up to ``most`` of a column's values, evenly spaced: enough to choose the unit it is read in
    (the median's), without a Python float per point of a 10^6-point sweep."""
    step = max(1, values.size // most)
    return values[::step].tolist()


def compare(data, hardware: list[str], models: list[str], quantities: list[str], overrides: dict,
            evidence=None, asked: list[str] | None = None, defaults: str = "lecture") -> list[dict]:
    """One row per chip x model: each quantity's value (or why not), the formats, and the fit; an
    expected number (``evidence``: the fitted engine model, validation.evidence) with its range.
    Values are keyed by the names ``asked`` (default: ``quantities``, the names that answer them;
    ``answered_as`` where they differ) and given in the unit their column is read in (``unit``: ms
    rather than s, a share in %), the same for every row."""
    for q in quantities:
        if q not in REGISTRY:
            raise InputError(f"unknown quantity {q!r} (see `python build.py list quantities`)")
    asked = list(asked or quantities)
    laid_out = any(flag_kind(q) in ("layout", "layout1") for q in quantities)
    # the layout a row names: that of any quantity answered under one (a fit measure, kv_per_chip, too)
    shows_layout = laid_out or any(setup_dependence(q) in ("layout", "layout1") for q in quantities)
    rows = []
    for hid in hardware:
        for mid in models:
            sc = Scenario(data, hid, mid, dict(overrides), defaults=defaults)
            sc.evidence = evidence
            row = {"hardware": hid, "model": mid, **deployment(sc, shows_layout), "formats": sc.formats_text(),
                   "values": {}}
            for a, q in zip(asked, quantities):
                named = {"answered_as": q} if q != a else {}
                try:
                    row["values"][a] = {"value": sc.mag(q), **named, "flag": sc.flag(q)}
                    ends = sc.spread(q)
                    if ends is not None:   # the range the engine model's held-out error spans
                        unit = REGISTRY[q].unit or ""
                        row["values"][a]["low"], row["values"][a]["high"] = (e.to(unit).magnitude for e in ends)
                except MissingInput as e:
                    row["values"][a] = {"value": None, **named, "why": str(e)}
            why = sc.fit_layout() if laid_out else sc.fit()   # the fit the quantities are judged by
            row["feasible"], row["feasibility"] = (why is None), why
            rows.append(row)
    for a in asked:   # one unit a column, chosen over its rows as the table reads it
        unit, factor = shown_unit(a, [r["values"][a]["value"] for r in rows])
        for r in rows:
            v = r["values"][a]
            v["unit"] = unit
            for k in ("value", "low", "high"):
                if v.get(k) is not None:
                    v[k] *= factor
    return rows


def deployment(sc: Scenario, laid_out: bool) -> dict:
    """The deployment a row describes: its chips, its layout's degrees (where the quantities are
    answered under one) and its batch, so rows on different chip counts are never read as alike."""
    from .layouts import DEGREES, degrees

    def whole(v):
        return int(v) if float(v).is_integer() else v

    out = {}
    for name, unit in (("chips", "chip"), ("batch", "sequence")):
        try:
            out[name] = whole(sc.mag(name, unit))
        except (MissingInput, InputError):
            out[name] = None
    lay = degrees(sc) if laid_out else {}
    out["layout"] = {n: lay[n] for n in DEGREES} if lay else None
    if lay:
        out["chips"] = lay["chips"]
    return out


