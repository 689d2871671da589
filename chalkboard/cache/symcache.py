"""SymPy's work kept between runs: solves, limits, closed forms and the declared registry, on disk.

Importing the derivations solves equations and takes limits (about two seconds), and declaring
their quantities builds a few hundred expressions (about a tenth of a second). The results
depend only on the sources and the SymPy version, so build.py's entry hands the registry the
results of an earlier run made from byte-identical sources (``load``), among them a snapshot of
the whole registry that replaces running the lecture modules (derivations.load), and writes what
this run had to compute (``save``). The file name is a hash of every derivations/*.py file, of
the chalkboard modules whose SymPy work is kept too (the audit's parses and identity checks, the
dimension check and the walk it makes, the generated code, the printers and the formulas they
lay out over lines), of units/, the SymPy
and Pint versions and the Python version: an edited source gets a new name, so a stale result is
never used. A cache that cannot
be read or written is ignored; the numbers are the same either way, only slower.

The file is a pickle in the project's own .cache/ folder, trusted like the project's code.

A fresh clone has no .cache/ yet, so the project also ships the same results in SHIPPED (made by
``python3 -m chalkboard.cache.symcache --ship``, which runs every command once and keeps what they
computed, the printed formulas and the templates' compiled code among them), with the key they
were made under, compressed (a tenth of the size): a first build uses them only if that key is
this run's (the same sources, SymPy, Pint and Python versions), and otherwise computes everything,
as before. tests/cache/test_symcache.py fails when the shipped file no longer matches the sources.
"""
from __future__ import annotations

import hashlib
import lzma
import os
import pickle
import sys
import tempfile
from pathlib import Path

from ..runtime.home import cache, program

FOLDER = ".cache"
SHIPPED = Path("derivations") / "solved.pickle"   # {"key": ..., "results": {...}}: see the docstring
# besides the derivations, the modules whose SymPy work is kept too: the audit's parses (and the
# restricted parser they use) and
# identity checks, the dimension check (its report, and the walk it makes with Pint), the
# generated code, and the printed forms and formulas laid out over lines (and units/, whose
# definitions name the constants' units in the registry's snapshot and the dimensions the check
# compares)
ALSO_KEYED = ("audit", "evaluation/check.py", "evaluation/walk.py", "evaluation/compiled.py",
              "typeset/printers.py", "typeset/linebreak.py")   # a folder: every module in it


def _key(root: Path) -> str:
    h = hashlib.sha256()
    root = program(root)   # installed: the packages beside the bundled data
    also = [q for f in ALSO_KEYED for q in ((sorted((root / "chalkboard" / f).glob("*.py")))
                                         if (root / "chalkboard" / f).is_dir() else [root / "chalkboard" / f])]
    for p in [*sorted((root / "derivations").glob("*.py")), *also,
              *sorted(p for p in (root / "units").iterdir() if p.is_file() and p.suffix in (".py", ".txt"))]:
        h.update(p.name.encode())
        h.update(p.read_bytes())
    import pint   # after the sources are read: what this run imports is what was hashed
    import sympy

    h.update(f"sympy {sympy.__version__} pint {pint.__version__} python {sys.version_info[:2]}".encode())
    return h.hexdigest()[:24]


_LOADED: dict = {}   # root -> the file load() read: named by the sources as they were when the run began
_SHIPPED_USED: set = set()   # the roots whose run began from the shipped results


def path(root: Path) -> Path:
    return cache(root) / f"sympy-{_key(root)}.pickle"


def load(root: Path) -> int:
    """Hand the registry an earlier run's results, if any; returns how many."""
    target = _LOADED[root] = path(root)   # hashed before the derivations are imported

    from derivations import core

    from sympy.core.parameters import evaluate

    saved = _read(target, evaluate, sealed=True)
    if saved is None:   # nothing kept here yet: the results shipped with the project, if made from these sources
        shipped = _read(program(root) / SHIPPED, evaluate, compressed=True)
        if isinstance(shipped, dict) and shipped.get("key") == target.name:
            saved = shipped.get("results")
            _SHIPPED_USED.add(root)   # kept in .cache/ at the end of the run, like any result
    if isinstance(saved, dict):
        core.PRELOADED.update(saved)
    return len(core.PRELOADED)


def _read(p: Path, evaluate, sealed: bool = False, compressed: bool = False):
    """What ``p`` holds, or None; a file of .cache/ (``sealed``) only if it matches its digest
    (chalkboard/cache/sealed.py); the shipped file (``compressed``) is the project's own, like its code."""
    from . import sealed as seal

    try:
        # the expressions were stored in SymPy's canonical form: rebuilding them without
        # re-evaluating (Max/Min re-check their arguments pairwise) gives equal objects, fast
        with (lzma.open(p, "rb") if compressed else open(p, "rb")) as f, evaluate(False):
            return seal.loads(f.read()) if sealed else pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError, ValueError,
            lzma.LZMAError):
        return None


def read_shipped(root: Path) -> dict | None:
    """derivations/solved.pickle as a first build reads it: {"key": ..., "results": {...}}, or None."""
    from sympy.core.parameters import evaluate

    got = _read(program(root) / SHIPPED, evaluate, compressed=True)
    return got if isinstance(got, dict) else None


def save(root: Path) -> None:
    """Write what this run computed (with what it was handed), replacing older cache files."""
    import derivations

    registry = derivations.__dict__.get("REGISTRY")  # never import the modules just to save
    if registry is None or not (registry.fresh or root in _SHIPPED_USED):
        return
    target = path(root)
    if _LOADED.get(root, target) != target:
        return   # a source changed during the run: what it computed is not what the new name says
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".sympy-", dir=target.parent)
        from . import sealed

        with os.fdopen(fd, "wb") as f:
            f.write(sealed.dumps({**registry.saved, **registry.fresh}))
        os.replace(tmp, target)
        for old in target.parent.glob("sympy-*.pickle"):
            if old != target:
                old.unlink(missing_ok=True)
    except (OSError, pickle.PicklingError):
        return  # best effort: a read-only project still runs, only slower next time


# -- the shipped results -------------------------------------------------------------------------
# Every command once, so that what any of them computes is kept (their outputs go to a temporary
# folder); the results then shipped are those of the project's own .cache/ after them.
SHIP_COMMANDS = (["build", "--force", "--all-hardware", "--out", "{OUT}"], ["check"], ["audit"], ["validate"],
                 ["list", "quantities"], ["eval", "step_time"], ["eval", "balance_batch"],
                 ["compare", "step_time", "cost_per_token"])


def ship(root: Path) -> Path:
    """Write SHIPPED from a run of every command on the project's own sources."""
    import shutil
    import subprocess

    cache = root / FOLDER
    for old in cache.glob("sympy-*.pickle"):
        old.unlink()
    # the runs compute everything: the previous SHIPPED, made under the same key (what changed is
    # outside the key, this module say), would hand them its results, shipped again as they were
    shipped = root / SHIPPED
    aside = shipped.with_name(".solved-previous.pickle")
    if shipped.exists():
        os.replace(shipped, aside)
    out = Path(tempfile.mkdtemp(prefix="chalkboard-ship-"))
    try:
        for args in SHIP_COMMANDS:
            r = subprocess.run([sys.executable, str(root / "build.py"),
                                *[a.replace("{OUT}", str(out / "o")) for a in args]],
                               cwd=root, capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit(f"build.py {' '.join(args)} failed:\n{r.stderr[-2000:]}")
        made = path(root)
        from sympy.core.parameters import evaluate

        # read as a build reads it (_read): unpickled with evaluation on, a kept form such as
        # 3*(L*a/2 + 2*N) (factor_terms' unevaluated product) would come back distributed, and a
        # first build from the shipped file would print formulas otherwise than one that computed them
        kept = _read(made, evaluate, sealed=True)
        if not isinstance(kept, dict):
            raise SystemExit(f"{made}: the results just computed could not be read back")
        fd, tmp = tempfile.mkstemp(prefix=".solved-", dir=shipped.parent)
        with os.fdopen(fd, "wb") as raw, lzma.open(raw, "wb") as f:
            pickle.dump({"key": made.name, "results": kept}, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, shipped)
    finally:
        shutil.rmtree(out, ignore_errors=True)
        if aside.exists():   # the previous file back if no new one was written
            if shipped.exists():
                aside.unlink()
            else:
                os.replace(aside, shipped)
    return shipped


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(prog="python3 -m chalkboard.cache.symcache",
                                 description="Write derivations/solved.pickle: SymPy's results for a first build.")
    ap.add_argument("--ship", action="store_true", required=True,
                    help="run every command once and ship what they computed (after editing a derivation)")
    ap.parse_args()
    here = Path(__file__).resolve().parents[2]
    print(f"wrote {ship(here).relative_to(here)} ({(here / SHIPPED).stat().st_size:,} bytes)")
