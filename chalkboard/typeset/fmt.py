"""Readable numbers: a Pint quantity in a unit a person would pick, to 3 significant digits."""
from __future__ import annotations

import math
from functools import lru_cache

from units import Quantity, dimensionality, unit as parse_unit

# Preferred display units by dimension (first that gives a magnitude >= 1 wins for times).
_BY_DIM = [
    ("USD/token", "USD/Mtoken"),
    ("byte/s/chip", "TB/s/chip"),
    ("byte/s", "TB/s"),
    ("FLOP/s/chip", "TFLOP/s/chip"),
    ("byte/chip", "GB/chip"),
    ("token/s/sequence", "token/s/sequence"),
    ("token/s/chip", "token/s/chip"),
    ("token/s", "token/s"),
    ("byte/token", "kB/token"),
    ("USD/hour/chip", "USD/hour/chip"),
]
_TIMES = ("s", "ms", "µs", "ns")
# units whose prefix follows the magnitude, largest first: the first the value reaches 1 in is shown
# (a model's 74 GFLOP a token, not 74,000 MFLOP)
LADDERS = {"byte": ("TB", "GB", "MB", "byte"), "flop_token": ("TFLOP/token", "GFLOP/token", "MFLOP/token")}


@lru_cache(maxsize=None)
def unit_factor(units) -> float:
    """Magnitude of one ``units`` in base units (cached: Pint conversions are slow)."""
    return float(Quantity(1.0, units).to_base_units().magnitude)


@lru_cache(maxsize=None)
def _dims(units):
    return Quantity(1.0, units).dimensionality


@lru_cache(maxsize=None)
def _by_dim(dims) -> str | None:
    for src, dst in _BY_DIM:
        if dims == dimensionality(src):
            return dst
    return None


@lru_cache(maxsize=None)
def shown_unit(text: str):
    return parse_unit("1" + text if text.startswith("/") else text)


_TIME, _BYTE, _FLOP_TOKEN = dimensionality("s"), dimensionality("byte"), dimensionality("FLOP/token")


@lru_cache(maxsize=None)
def _plan(units) -> tuple:
    """How a quantity in ``units`` is shown: (kind, factor of ``units`` to base, fixed text),
    worked out once per unit (the Pint comparisons behind it are slow)."""
    dim = _dims(units)
    if not dim:
        return "bare", unit_factor(units), ""
    if dim == _TIME:
        return "time", unit_factor(units), None
    if dim == _BYTE:
        return "byte", unit_factor(units), None
    if dim == _FLOP_TOKEN:
        return "flop_token", unit_factor(units), None
    found = _by_dim(dim)
    if not found:
        text = f"{units:~P}"
        found = text[1:] if text.startswith("1/") else text  # "1/token" reads as "/token"
    return "fixed", unit_factor(units), found


def _display(units, base_mag: float) -> str:
    kind, _, fixed = _plan(units)
    return _display_of(kind, fixed, base_mag)


def _display_of(kind: str, fixed: str | None, base_mag: float) -> str:
    if kind == "time":
        if base_mag >= 2 * 86400:
            return "day"
        if base_mag >= 2 * 3600:
            return "h"
        for u, scale in zip(_TIMES, (1, 1e-3, 1e-6, 1e-9)):
            if abs(base_mag) >= scale:
                return u
        return "ns"
    if kind in LADDERS:
        ladder = LADDERS[kind]
        return next((u for u in ladder if abs(base_mag) >= _target_factor(u)), ladder[-1])
    return fixed


def display_labels(units) -> tuple[str, ...]:
    """The units a quantity declared in ``units`` may be shown in, largest first (a page that picks
    among them as the report does: the first in which the value is at least 1)."""
    kind, _, fixed = _plan(units)
    if kind == "bare":
        return ("",)
    if kind == "time":
        return _TIMES
    return LADDERS.get(kind, (fixed,))


@lru_cache(maxsize=None)
def _target_factor(text: str) -> float:
    return unit_factor(shown_unit(text))


def split_base(base_mag: float, units) -> tuple[float, str]:
    """``split`` for a magnitude already in base units, of a quantity declared in ``units``."""
    return base_splitter(units)(base_mag)


@lru_cache(maxsize=None)
def base_splitter(units):
    """``split_base`` for one declared unit, its plan worked out once: a function of the
    base-unit magnitude (for a table of many values of one quantity)."""
    kind, _, fixed = _plan(units)
    if kind == "bare":
        return lambda base_mag: (base_mag, "")
    if kind == "fixed":
        f = _target_factor(fixed)
        return lambda base_mag: (base_mag / f, fixed)

    def shown(base_mag):   # a time or a size: its unit chosen by its magnitude
        u = _display_of(kind, fixed, base_mag)
        return base_mag / _target_factor(u), u
    return shown


def display_unit(q) -> str:
    return _display(q.units, float(q.magnitude) * unit_factor(q.units))


_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def sig(x: float, digits: int = 3) -> str:
    """3 significant digits, thousands separated; from 10 million up (and below 0.0001) as a
    power of ten a person reads, '6.71 × 10¹¹', never the programmer's '6.71e11'."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    mag = abs(x)
    if mag >= 1e7 or mag < 1e-4:
        m, e = f"{x:.{digits - 1}e}".split("e")
        m = m.rstrip("0").rstrip(".") if "." in m else m
        power = "10" + str(int(e)).translate(_SUPERSCRIPT)
        return f"{m} × {power}"
    if mag >= 1 and abs(x - round(x)) < 1e-9 * mag:
        return f"{int(round(x)):,}"  # whole numbers: no trailing zeros
    decimals = max(0, digits - 1 - int(math.floor(math.log10(mag))))
    r = round(x, decimals)
    if decimals == 0:
        return f"{int(round(r)):,}"
    return f"{r:,.{decimals}f}".rstrip("0").rstrip(".")  # 2.5, not 2.50


def operand(x: float) -> str:
    """A value substituted into a formula: ``sig``, except that a number from 1,000 up to 10
    million that is not whole keeps one decimal, so a whole number shown is one (5,667.3 for
    5,667.25, not 5,667, whose four times would not be the 22,669 computed)."""
    if 1000 <= abs(x) < 1e7 and abs(x - round(x)) >= 1e-9 * abs(x):
        return f"{x:,.1f}"
    return sig(x)


def split(q, unit: str | None = None) -> tuple[float, str]:
    """(magnitude, unit text) in the display unit (or ``unit``)."""
    units = q.units
    kind, factor, _ = _plan(units)
    base = float(q.magnitude) * factor
    if kind == "bare":
        return base, ""
    u = unit or _display(units, base)
    return base / _target_factor(u), u


_PLURAL = {"sequence": "sequences", "token": "tokens", "parameter": "parameters", "chip": "chips",
           "die": "dies", "cable": "cables", "day": "days", "hour": "hours", "minute": "minutes",
           "byte": "bytes", "bit": "bits"}


def unit_words(u: str) -> str:
    """A unit as prose writes it: a reciprocal reads 'per chip', never '1/chip' or '/chip'."""
    if u.startswith("1/"):
        u = u[1:]
    return "per " + u[1:] if u.startswith("/") else u


def fmt(q, unit: str | None = None, digits: int = 3) -> str:
    return _shown(*split(q, unit), digits)


def is_share(name: str) -> bool:
    """Whether the quantity ``name`` is declared a share of a whole (share=True: MFU, HBM fill)."""
    from derivations import REGISTRY

    q = REGISTRY.quantities.get(name)
    return bool(q is not None and q.share)


SHARE_UNIT, SHARE_SYMBOL = "percent", "%"   # a share of a whole is shown in percent (units/definitions.txt)


@lru_cache(maxsize=None)
def share_factor() -> float:
    """One percent as a bare number (0.01): what a share is divided by to read in percent."""
    return float(Quantity(1, SHARE_UNIT).to("").magnitude)


def percent(fraction: float, digits: int = 3) -> str:
    """A share of a whole as a percentage: 0.383 -> '38.3%'."""
    return f"{sig(fraction / share_factor(), digits)}{SHARE_SYMBOL}"


def split_named(name: str, q, unit: str | None = None) -> tuple[float, str]:
    """``split`` of the value of the quantity ``name``: a share of a whole in percent ("%"), as
    every output names it (eval's JSON, a sweep's and compare's columns)."""
    if is_share(name):
        return float(q.to("").magnitude) / share_factor(), SHARE_SYMBOL
    return split(q, unit or None)


def fmt_named(name: str, q, digits: int = 3) -> str:
    """``fmt`` of the value of the quantity ``name``: a share of a whole reads as a percentage."""
    if is_share(name):
        return percent(float(q.to("").magnitude) if hasattr(q, "to") else float(q), digits)
    return fmt(q, digits=digits)


def fmt_base(base_mag: float, units, digits: int = 3) -> str:
    """``fmt`` of a magnitude in base units, of a quantity declared in ``units`` (no Pint quantity
    made: for the many numbers of a fit's reason)."""
    return _shown(*split_base(base_mag, units), digits)


def plural(u: str) -> str:
    """``u`` after a number other than one: "tokens/s", "chips"."""
    return counted("", u)


def counted(text: str, u: str) -> str:
    """``u`` as it reads after the number ``text``: a counted unit in the plural unless the number
    is one ("2,000 sequences", "72 chips"), also at the head of a rate ("8,192 tokens/sequence")."""
    if text == "1":
        return u
    head, sep, rest = u.partition("/")
    return _PLURAL[head] + sep + rest if head in _PLURAL else u


def _shown(mag: float, u: str, digits: int) -> str:
    text = sig(mag, digits)
    return f"{text} {unit_words(counted(text, u))}".strip()
