"""Where the program finds its parts, run from the repository or installed as a package.

A checkout is one folder, the project: build.py, the code (chalkboard/, derivations/, units/), the
data it reads by default (hardware.yaml, models.yaml, prices.yaml, measurements.yaml, claims.yaml),
templates/ and lecture/, and the caches in .cache/. Installed (`pip install .`), the code is in
site-packages and the rest is a copy inside the package, chalkboard/bundled/ (written by setup.py
when the wheel is built): ROOT is that copy, read-only. The program's files are then found beside
it (``program``), the caches go to the user's cache folder (``cache``) and a build writes into the
folder the command is run from (``default_out``). A path the user gives is always read from the
folder the command is run from (cli/parser.py: finish)."""
from __future__ import annotations

import os
from pathlib import Path

# what the package carries of the project folder besides the code: the default data files (every
# default of cli/parser.py's PATHS but the output folder), templates/, lecture/ and the entry
PROJECT_FILES = ("build.py", "hardware.yaml", "models.yaml", "prices.yaml", "measurements.yaml", "claims.yaml",
                 "templates", "lecture")
PACKAGE = Path(__file__).resolve().parents[1]   # chalkboard/ (this file is in chalkboard/runtime/)
SOURCE = PACKAGE.parent                 # the folder holding chalkboard/, derivations/ and units/
BUNDLED = PACKAGE / "bundled"           # installed: the data, templates/, lecture/ and build.py
INSTALLED = not (SOURCE / "build.py").is_file() and (BUNDLED / "build.py").is_file()
ROOT = BUNDLED if INSTALLED else SOURCE
ENTRY = ROOT / "build.py"               # the command: `chalkboard` and `python -m chalkboard` run it


def program(root: Path) -> Path:
    """The folder holding the code that goes with the project folder ``root``: ``root`` itself in
    a checkout (or a test's copy of one), the installed packages' folder for the bundled copy."""
    return root if (Path(root) / "chalkboard").is_dir() else SOURCE


def cache(root: Path) -> Path:
    """The cache folder of the project folder ``root``: its .cache/, or for the bundled copy (part
    of the installed package, not to be written) the user's cache folder."""
    root = Path(root)
    if root.resolve() != BUNDLED:
        return root / ".cache"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "chalkboard"


def default_out(cwd: Path) -> str:
    """The output folder of a build given no --out: build/ in the project folder in a checkout (as
    `python build.py` always did), build/ in the folder the command is run from when installed."""
    return str(Path(cwd) / "build") if INSTALLED else "build"
