"""SymPy's work kept between runs: solves, limits, closed forms and the declared registry, on disk.

Importing the derivations solves equations and takes limits (about two seconds), and declaring
their quantities builds a few hundred expressions (about a tenth of a second). The results
depend only on the sources and the SymPy version, so build.py's entry hands the registry the
results of an earlier run made from byte-identical sources (``load``), among them a snapshot of
the whole registry that replaces running the lecture modules (derivations.load), and writes what
this run had to compute (``save``). The file name is a hash of every derivations/*.py file, of
the chalkboard modules whose SymPy work is kept too (the audit's parses and identity checks, the
dimension check, the generated code, the printers), of units/, the SymPy version and the Python
version: an edited source gets a new name, so a stale result is never used. A cache that cannot
be read or written is ignored; the numbers are the same either way, only slower.

The file is a pickle in the project's own .cache/ folder, trusted like the project's code.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from pathlib import Path

FOLDER = ".cache"
# besides the derivations, the modules whose SymPy work is kept too: the audit's parses and
# identity checks, the dimension check's identities, the generated code, and the printed forms
# (and units/, whose definitions name the constants' units in the registry's snapshot)
ALSO_KEYED = ("audit.py", "check.py", "compiled.py", "printers.py")


def _key(root: Path) -> str:
    h = hashlib.sha256()
    for p in [*sorted((root / "derivations").glob("*.py")), *(root / "chalkboard" / f for f in ALSO_KEYED),
              *sorted(p for p in (root / "units").iterdir() if p.is_file() and p.suffix in (".py", ".txt"))]:
        h.update(p.name.encode())
        h.update(p.read_bytes())
    import sympy   # after the sources are read: what this run imports is what was hashed

    h.update(f"sympy {sympy.__version__} python {sys.version_info[:2]}".encode())
    return h.hexdigest()[:24]


_LOADED: dict = {}   # root -> the file load() read: named by the sources as they were when the run began


def path(root: Path) -> Path:
    return root / FOLDER / f"sympy-{_key(root)}.pickle"


def load(root: Path) -> int:
    """Hand the registry an earlier run's results, if any; returns how many."""
    target = _LOADED[root] = path(root)   # hashed before the derivations are imported

    from derivations import _core

    from sympy.core.parameters import evaluate

    try:
        # the expressions were stored in SymPy's canonical form: rebuilding them without
        # re-evaluating (Max/Min re-check their arguments pairwise) gives equal objects, fast
        with open(target, "rb") as f, evaluate(False):
            saved = pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError, ValueError):
        return 0
    if isinstance(saved, dict):
        _core.PRELOADED.update(saved)
    return len(_core.PRELOADED)


def save(root: Path) -> None:
    """Write what this run computed (with what it was handed), replacing older cache files."""
    import derivations

    registry = derivations.__dict__.get("REGISTRY")  # never import the modules just to save
    if registry is None or not registry.fresh:
        return
    target = path(root)
    if _LOADED.get(root, target) != target:
        return   # a source changed during the run: what it computed is not what the new name says
    try:
        target.parent.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".sympy-", dir=target.parent)
        with os.fdopen(fd, "wb") as f:
            pickle.dump({**registry.saved, **registry.fresh}, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, target)
        for old in target.parent.glob("sympy-*.pickle"):
            if old != target:
                old.unlink(missing_ok=True)
    except (OSError, pickle.PicklingError):
        return  # best effort: a read-only project still runs, only slower next time
