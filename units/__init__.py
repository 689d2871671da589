"""The one Pint registry of chalkboard, loaded from ``definitions.txt`` beside this file.

Every quantity in the project is built from this registry (``ureg``); mixing in a
quantity from another registry is an error in Pint, which keeps the project honest.
"""
from __future__ import annotations

import math
import re
from functools import lru_cache
from pathlib import Path

import pint

DEFINITIONS = Path(__file__).with_name("definitions.txt")

ureg = pint.UnitRegistry(filename=str(DEFINITIONS), autoconvert_offset_to_baseunit=False)
ureg.formatter.default_format = "~P"
Quantity = ureg.Quantity
Unit = ureg.Unit
DimensionalityError = pint.DimensionalityError


_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?(\s|$|[a-zA-Zµ/*(])")


class UnitParseError(ValueError):
    """A value string that is not '<number> <unit>' in chalkboard's registry."""


def parse(text: str | int | float) -> pint.Quantity:
    """Parse '989 TFLOP/s' (or a bare number) into a Quantity of this registry (cached; treat as immutable)."""
    if isinstance(text, str):
        return _parse_str(text)
    return _parse(text)


@lru_cache(maxsize=4096)
def _parse_str(text: str) -> pint.Quantity:
    return _parse(text)


def _parse(text: str | int | float) -> pint.Quantity:
    """Parse '989 TFLOP/s' (or a bare number) into a Quantity of this registry.

    Numbers are parsed by Pint, never by YAML; a string with anything Pint does
    not recognise raises UnitParseError with a readable message.
    """
    if isinstance(text, bool):
        raise UnitParseError(f"expected a number with a unit, got {text!r}")
    if isinstance(text, (int, float)):
        return Quantity(text, "")
    s = str(text).strip()
    if not s:
        raise UnitParseError("empty value")
    m = _NUMBER.match(s)
    if not m:
        raise UnitParseError(f"{s!r} does not start with a number")
    if re.search(r"(?<![*^\d.eE+-])\d", s[m.end(3) if m.group(3) else m.end(1):]):
        raise UnitParseError(f"{s!r} has more than one number (write one number, then its unit)")
    try:
        q = Quantity(s)
    except (pint.UndefinedUnitError, pint.errors.DefinitionSyntaxError) as e:
        raise UnitParseError(f"unknown unit in {s!r} ({e})") from None
    except Exception as e:  # tokenizer errors, stray characters
        raise UnitParseError(f"cannot read {s!r} as a number with a unit ({type(e).__name__})") from None
    if not isinstance(q, pint.Quantity):  # e.g. "2" parses to a plain number
        q = Quantity(q, "")
    return q


@lru_cache(maxsize=None)
def unit(text: str) -> pint.Unit:
    """Parse a unit expression ('byte/s/chip') into a Unit of this registry (cached)."""
    try:
        return Quantity(1, text).units if text else Unit("")
    except Exception as e:
        raise UnitParseError(f"unknown unit {text!r} ({e})") from None


@lru_cache(maxsize=None)
def dimensionality(text: str):
    """The dimensionality of a unit expression (cached): compare, don't convert."""
    return unit(text).dimensionality


def same_dimension(a, b) -> bool:
    return Quantity(1, a).dimensionality == Quantity(1, b).dimensionality


def fmt_unit(u) -> str:
    """Short, readable unit text: 'TFLOP/s/chip' rather than 'teraFLOP / second / chip'."""
    s = f"{Unit(u):~P}" if not isinstance(u, str) else f"{unit(u):~P}"
    return s


def conform(q: pint.Quantity, target: str, *, per_chip: bool = False, bare: bool = False) -> pint.Quantity:
    """``q`` converted to the unit ``target``, or UnitParseError saying why it cannot be.

    per_chip: ``target`` is a per-chip unit ("byte/s/chip") and a figure for one chip may omit
    the "/chip" ("3.35 TB/s"), as spec sheets do. bare: a bare number takes ``target``'s unit
    ("--set batch=128" means 128 sequences). Every value from a data file, a --set override or
    a claim goes through here.
    """
    want = dimensionality(target)
    if bare and q.dimensionless and want:
        return Quantity(q.magnitude, unit(target))
    if per_chip and q.dimensionality == dimensionality(f"({target}) * chip"):
        q = q / Quantity(1, "chip")
    if q.dimensionality != want:
        got = f"{q.units:~P}" or "a bare number"
        shown = (target.removesuffix("/chip") + " (per chip)") if per_chip else (target or "a bare number")
        raise UnitParseError(f"wrong dimension: got {got}, expected {shown}")
    return q.to(unit(target))


def magnitude_problem(q: pint.Quantity, allow_zero: bool = False) -> str | None:
    """Why ``q`` cannot be a physical input (not finite, negative, zero), or None."""
    m = q.magnitude
    if not math.isfinite(m):
        return "must be a finite number"
    if m < 0:
        return "must not be negative"
    if m == 0 and not allow_zero:
        return "must be positive"
    return None
