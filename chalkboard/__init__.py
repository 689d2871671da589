"""chalkboard: loading, checking, evaluating, auditing and rendering the lecture's derivations.

As a library (chalkboard/api.py): ``scenario``, ``sweep``, ``compare``, ``plan``, ``verdicts``,
``validate``. api.py imports
only the standard library at its top and the rest on first use, so importing chalkboard stays
cheap for the command line. (No name of the face is also a module of the package:
``chalkboard.audit`` is the audit's package, ``chalkboard.planner`` the search.)"""
from .data.featured import DENSE_REFERENCE_MODEL, FEATURED_HARDWARE, FEATURED_MODEL
from .api import Result, Setup, Table, compare, plan, scenario, sweep, validate, verdicts

__all__ = ["DENSE_REFERENCE_MODEL", "FEATURED_HARDWARE", "FEATURED_MODEL", "Result", "Setup", "Table",
           "compare", "plan", "scenario", "sweep", "validate", "verdicts"]
