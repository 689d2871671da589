"""chalkboard: loading, checking, evaluating, auditing and rendering the lecture's derivations.

As a library (chalkboard/api.py): ``scenario``, ``compare``, ``verdicts``, ``plan``; loaded on first
use, so importing chalkboard stays cheap for the command line. (No name of the face is also a
module of the package: ``chalkboard.audit`` is the audit's package, ``chalkboard.planner`` the search.)"""

# The lecture's own scenario (000@1:49, 004:33): a DeepSeek-like MoE on a Blackwell NVL72 rack.
FEATURED_HARDWARE = "gb200-nvl72"
FEATURED_MODEL = "deepseek-v3"
# The dense model shown beside the featured one (the report's summary, the layout figures).
DENSE_REFERENCE_MODEL = "llama-3-70b"

_API = ("scenario", "compare", "verdicts", "plan", "Result", "Setup", "Table")


def __getattr__(name):
    if name in _API:
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
