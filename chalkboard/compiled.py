"""The fast numeric path: each definition compiled once to a float function.

The dimension check (chalkboard.check) walks every expression with Pint, so every sum,
max and definition is known to be dimensionally sound. Numbers can then be computed as
plain floats: every value is carried as its magnitude in the registry's *base* units
(byte, FLOP, second, ...), where products and quotients of magnitudes are the magnitudes
of products and quotients, and only inputs (read from the YAML, --set) and results (shown
to a person) cross into Pint. ``tests/test_compiled.py`` compares this path with the Pint
walk on every quantity for every chip x model.

Each derived quantity's own definition (not its closed form) is compiled, so a value held
fixed (``Scenario.fix``) flows downstream exactly as in the Pint walk.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import sympy as sp

from derivations import REGISTRY
from units import Quantity, unit as parse_unit

_EPS = 1e-9  # floor(): 2.9999999999 counts as 3, as in the Pint walk


def _floor(x):
    return math.floor(x + _EPS)


def _log(x):
    if x <= 0:
        raise ValueError(f"the logarithm of {x:g} is undefined")
    return math.log(x)


_SCALAR = [{"floor": _floor, "log": _log, "Max": max, "Min": min}, "math"]
_ARRAY = [{"floor": lambda x: np.floor(x + _EPS)}, "numpy"]


@lru_cache(maxsize=None)
def base_factor(units) -> float:
    """Magnitude of one ``units`` in base units (1 TB/s -> 1e12)."""
    return float(Quantity(1.0, units).to_base_units().magnitude)


@lru_cache(maxsize=None)
def declared(name: str):
    """The declared unit of a quantity, parsed, and its factor to base units."""
    u = parse_unit(REGISTRY[name].unit)
    return u, base_factor(u)


def to_base(q) -> float:
    return float(q.magnitude) * base_factor(q.units)


def from_base(name: str, mag: float):
    u, f = declared(name)
    return Quantity(mag / f, u)


def in_unit(mag: float, name: str, unit: str) -> float:
    """A base-unit magnitude of quantity ``name`` expressed in ``unit`` (same dimension)."""
    return mag / base_factor(parse_unit(unit))


@lru_cache(maxsize=None)
def _compiled(name: str, kind: str):
    q = REGISTRY[name]
    args = sorted((s for s in q.expr.free_symbols), key=lambda s: s.name)
    fn = sp.lambdify(args, q.expr, modules=_SCALAR if kind == "scalar" else _ARRAY)
    return fn, tuple(s.name for s in args)


def scalar(name: str):
    """(function of floats, argument names) for ``name``'s definition."""
    return _compiled(name, "scalar")


def array(name: str):
    """(numpy function, argument names) for ``name``'s definition: broadcasts over arrays."""
    return _compiled(name, "array")
