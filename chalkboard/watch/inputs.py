"""What the loop watches, by polling modification times: no dependency, and a few hundred stats
cost about a millisecond. A file counts as changed when its modification time or size differs, or
when it appears or goes."""
from __future__ import annotations

import os
import time
from pathlib import Path

# the program: an edit to any of these starts a new worker (chalkboard/watch/__init__.py)
PROGRAM = ("build.py", "chalkboard", "derivations", "units", "lecture")
SKIP = ("__pycache__", ".pytest_cache")


def data_inputs(args) -> list[str]:
    """What the worker rebuilds on: the data files the options name, and the templates."""
    return [args.hardware_file, args.models_file, getattr(args, "prices_file", "prices.yaml"), args.claims_file,
            getattr(args, "measurements_file", "measurements.yaml"), "templates"]


class Snapshot:
    """The state of ``names`` (files or folders, relative to ``root`` or absolute): ``changed()``
    gives the files changed since the last call (relative names, sorted), and takes the new state."""

    def __init__(self, root: Path, names):
        self.root, self.names = root, list(names)
        self.state = self._scan()

    def _scan(self) -> dict:
        state = {}
        for name in self.names:
            self._add(state, self.root / name)
        return state

    def _add(self, state: dict, path: Path) -> None:
        try:
            st = path.stat()
        except OSError:
            return   # absent (a data file not there is the build's to report)
        if not path.is_dir():
            state[str(path)] = (st.st_mtime_ns, st.st_size)
            return
        try:
            entries = list(os.scandir(path))
        except OSError:
            return
        for e in entries:
            if e.name in SKIP or e.name.endswith((".pyc", ".swp", "~")) or e.name.startswith(".#"):
                continue   # caches and editors' scratch files
            self._add(state, Path(e.path))

    def changed(self) -> list[str]:
        new = self._scan()
        diff = sorted(p for p in new.keys() | self.state.keys() if new.get(p) != self.state.get(p))
        self.state = new
        return [self.shown(p) for p in diff]

    def settled(self, quiet: float = 0.05, most: float = 1.0) -> list[str]:
        """changed(), and after a change, what else changes until nothing has for ``quiet``
        seconds (an editor writing a file in steps), ``most`` at most."""
        got = set(self.changed())
        if got:
            end = time.monotonic() + most
            while time.monotonic() < end:
                time.sleep(quiet)
                more = self.changed()
                if not more:
                    break
                got.update(more)
        return sorted(got)

    def shown(self, p: str) -> str:
        try:
            return str(Path(p).relative_to(self.root))
        except ValueError:
            return p


def summary(changed: list[str], most: int = 3) -> str:
    """The changed files as a reader takes them in: a few names, then how many more."""
    more = f" and {len(changed) - most} more" if len(changed) > most else ""
    return ", ".join(changed[:most]) + more
