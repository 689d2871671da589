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
pint.set_application_registry(ureg)   # a quantity sent between processes (pickled) comes back in this registry
Quantity = ureg.Quantity
Unit = ureg.Unit
DimensionalityError = pint.DimensionalityError


_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?(\s|$|[a-zA-Zµ/*(])")
# What may follow the number: unit names, '*', '/', parentheses, spaces (multiplication) and
# small whole exponents ('B**2', 's^-1'). Nothing else reaches Pint, so a value can never ask it
# to evaluate an expression such as '9**9**9' (an exponent tower that would never finish).
_UNIT_TOKEN = re.compile(r"\s+|[A-Za-zµμ_]+|\*\*\s*[+-]?\d{1,2}|\^\s*[+-]?\d{1,2}|[*/()]")
MAX_TEXT = 200          # characters in one value
# a count written as people write it: "15T token", "70B parameter", "2K token/sequence" (the letter
# right after the number, then a space and the unit; "80 GB" and "70B" alone are Pint's as before).
# Each letter scales as the prefix of definitions.txt it names: B (billion) and K as giga and kilo.
_COUNT_SUFFIX = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))([kKMBGT])(?=\s+\S)")
_COUNT_PREFIX = {"k": "k", "K": "k", "M": "M", "B": "G", "G": "G", "T": "T"}


@lru_cache(maxsize=None)
def _count_power(letter: str) -> int:
    """The power of ten of the prefix ``letter`` stands for, as definitions.txt declares it."""
    prefix = _COUNT_PREFIX[letter]
    return round(math.log10(ureg.Quantity(1, prefix + "byte").to("byte").magnitude))
MAX_PAREN_DEPTH = 4
# Every input, converted to the registry's base units (byte, second, FLOP, ...), must lie in
# this range: wide enough for any real chip or model, narrow enough that products and
# quotients of a few inputs stay far from float overflow and underflow.
MAGNITUDE_RANGE = (1e-30, 1e30)


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


def _check_unit_text(s: str, rest: str) -> None:
    """UnitParseError unless ``rest`` (what follows the number in ``s``) is a plain unit expression."""
    pos, depth, prev = 0, 0, ""
    while pos < len(rest):
        m = _UNIT_TOKEN.match(rest, pos)
        if not m:
            ch = rest[pos]
            if ch.isdigit() or ch == ".":
                raise UnitParseError(f"{s!r} has more than one number (write one number, then its unit)")
            raise UnitParseError(f"cannot read {s!r} as a number with a unit (unexpected {ch!r})")
        tok = m.group()
        if tok[0] in "*^" and tok not in ("*",):
            if prev == "":
                raise UnitParseError(f"cannot read {s!r}: write the number itself (e.g. 1e9), "
                                     "not a power or other arithmetic, then its unit")
            if prev not in ("name", ")"):
                raise UnitParseError(f"cannot read {s!r}: an exponent must follow a unit "
                                     "and be a small whole number (e.g. '3 byte**2')")
            prev = "exp"
        elif tok == "(":
            depth += 1
            if depth > MAX_PAREN_DEPTH:
                raise UnitParseError(f"cannot read {s!r}: parentheses nested too deep")
            prev = "("
        elif tok == ")":
            depth -= 1
            if depth < 0:
                raise UnitParseError(f"cannot read {s!r}: unbalanced parentheses")
            prev = ")"
        elif not tok.isspace():
            prev = "name" if tok[0] not in "*/" else tok
        pos = m.end()
    if depth:
        raise UnitParseError(f"cannot read {s!r}: unbalanced parentheses")


# A unit as the program prints it (fmt_unit, JSON and CSV headers), read back: "chip·h", "80 %",
# "2 1/chip" (a reciprocal). Every unit printed can be given to --set as it is printed.
_PRINTED = (("·", "*"), ("%", " percent"))
_RECIPROCAL = re.compile(r"(?<=\s)1\s*/")


def _as_printed(s: str) -> str:
    for a, b in _PRINTED:
        s = s.replace(a, b)
    return _RECIPROCAL.sub("/", s, count=1)


def _parse(text: str | int | float) -> pint.Quantity:
    """Parse '989 TFLOP/s' (or a bare number) into a Quantity of this registry.

    Numbers are parsed by Pint, never by YAML, and only after the text has been checked to be
    one number followed by a plain unit expression; anything else raises UnitParseError with a
    readable message.
    """
    if isinstance(text, bool):
        raise UnitParseError(f"expected a number with a unit, got {text!r}")
    if isinstance(text, (int, float)):
        return Quantity(text, "")
    if not isinstance(text, str):
        raise UnitParseError(f"expected a number with a unit, got a {type(text).__name__}")
    s = text.strip()
    if not s:
        raise UnitParseError("empty value")
    if len(s) > MAX_TEXT:
        raise UnitParseError(f"value too long ({len(s)} characters; at most {MAX_TEXT})")
    c = _COUNT_SUFFIX.match(s)
    if c:
        s = f"{c.group(1)}e{_count_power(c.group(2))}{s[c.end():]}"
    s = _as_printed(s)
    m = _NUMBER.match(s)
    if not m:
        raise UnitParseError(f"{s!r} does not start with a number")
    _check_unit_text(s, s[m.end(3) if m.group(3) else m.end(1):])
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
    if target.endswith("/sequence") and q.dimensionality == dimensionality(f"({target}) * sequence"):
        q = q / Quantity(1, "sequence")   # "4096 tokens" of context: each sequence's, as people write it
    if q.dimensionality != want:
        got = f"{q.units:~P}" or "a bare number"
        shown = (target.removesuffix("/chip") + " (per chip)") if per_chip else (target or "a bare number")
        raise UnitParseError(f"wrong dimension: got {got}, expected {shown}")
    return q.to(unit(target))


# the dimensions that count things (definitions.txt): a bare number for an input in these alone is
# read in its declared unit (--set batch=128 is 128 sequences); any other dimension needs its unit
COUNT_DIMENSIONS = frozenset({"[token]", "[sequence]", "[parameter]", "[chip]", "[die]", "[cable]"})


@lru_cache(maxsize=None)
def is_count(target: str) -> bool:
    """Whether the unit ``target`` counts things (or is a bare number): no time, bytes, FLOP, money
    or power in it, so a bare number for it cannot be misread by a factor of 10^12."""
    return all(d in COUNT_DIMENSIONS for d in dimensionality(target))


def magnitude_problem(q: pint.Quantity, allow_zero: bool = False) -> str | None:
    """Why ``q`` cannot be a physical input (not finite, negative, zero, out of range), or None."""
    m = q.magnitude
    if not math.isfinite(m):
        return "must be a finite number"
    if m < 0:
        return "must not be negative"
    if m == 0:
        return None if allow_zero else "must be positive"
    lo, hi = MAGNITUDE_RANGE
    try:
        base = abs(q.to_base_units().magnitude)
    except (OverflowError, ZeroDivisionError):
        base = math.inf
    if not (lo <= base <= hi):
        return (f"out of range: {base:.3g} {q.to_base_units().units:~P} in base units; "
                f"inputs must lie between {lo:g} and {hi:g} in base units")
    return None
