"""Readable numbers: a Pint quantity in a unit a person would pick, to 3 significant digits."""
from __future__ import annotations

import math

from units import dimensionality, unit as parse_unit

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


def display_unit(q) -> str:
    dim = q.dimensionality
    if dim == dimensionality("s"):
        mag = q.to("s").magnitude
        for u, scale in zip(_TIMES, (1, 1e-3, 1e-6, 1e-9)):
            if abs(mag) >= scale:
                return u
        return "ns"
    if dim == dimensionality("byte"):
        mag = q.to("byte").magnitude
        return "TB" if mag >= 1e12 else "GB" if mag >= 1e9 else "MB" if mag >= 1e6 else "byte"
    for src, dst in _BY_DIM:
        if dim == dimensionality(src):
            return dst
    text = f"{q.units:~P}"
    return text[1:] if text.startswith("1/") else text  # "1/token" reads as "/token"


def sig(x: float, digits: int = 3) -> str:
    """3 significant digits, thousands separated, no scientific notation below 1e15."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    mag = abs(x)
    if mag >= 1e7 or mag < 1e-4:
        m, e = f"{x:.{digits - 1}e}".split("e")
        m = m.rstrip("0").rstrip(".") if "." in m else m
        return f"{m}e{int(e)}"
    if mag >= 1 and abs(x - round(x)) < 1e-9 * mag:
        return f"{int(round(x)):,}"  # whole numbers: no trailing zeros
    decimals = max(0, digits - 1 - int(math.floor(math.log10(mag))))
    r = round(x, decimals)
    if decimals == 0:
        return f"{int(round(r)):,}"
    return f"{r:,.{decimals}f}".rstrip("0").rstrip(".")  # 2.5, not 2.50


def unit_text(u) -> str:
    return f"{parse_unit(u):~P}" if isinstance(u, str) else f"{u:~P}"


def split(q, unit: str | None = None) -> tuple[float, str]:
    """(magnitude, unit text) in the display unit (or ``unit``)."""
    if q.dimensionless:
        return float(q.to("").magnitude), ""
    u = unit or display_unit(q)
    return float(q.to(parse_unit("1" + u if u.startswith("/") else u)).magnitude), u


_PLURAL = {"sequence": "sequences", "token": "tokens", "parameter": "parameters", "chip": "chips",
           "die": "dies", "cable": "cables"}


def fmt(q, unit: str | None = None, digits: int = 3) -> str:
    mag, u = split(q, unit)
    text = sig(mag, digits)
    if u in _PLURAL and text != "1":
        u = _PLURAL[u]  # "2,000 sequences", "72 chips"
    return f"{text} {u}".strip()
