"""`python3 -m chalkboard.validation --ship`: the engine model fitted to the project's measurements.yaml,
written where a build reads it, engine_fit.json (again after an edit to the measurements, the data, the
derivations or engine_fit.py: tests/evaluation/test_engine_fit_shipped.py fails until it is)."""
from __future__ import annotations

import sys

from ..runtime.home import ROOT
from .runs import ship


def main() -> None:
    if sys.argv[1:] != ["--ship"]:
        sys.exit("usage: python3 -m chalkboard.validation --ship")
    print(f"wrote {ship(ROOT)}")


if __name__ == "__main__":
    main()
