#!/usr/bin/env python3
"""Benchmark: the full `python build.py` against the bare import time of its dependencies.

Runs each command REPEAT times in fresh processes on this machine and prints the median
and the spread. The import baseline is the floor any build pays (SymPy, Pint, matplotlib,
Jinja2, PyYAML, Typst); the difference is chalkboard's own work.

    python bench/build_time.py [--repeat 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMPORTS = "import sympy, pint, jinja2, yaml, typst, matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot"


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as out:
        rows = {
            "bare imports": [sys.executable, "-c", IMPORTS],
            "build.py check": [sys.executable, "build.py", "check"],
            "build.py (full build)": [sys.executable, "build.py", "--out", out],
        }
        timed(rows["build.py (full build)"])  # warm the file cache and matplotlib's font cache
        print(f"{'command':<24} {'median':>8} {'min':>8} {'max':>8}   ({args.repeat} runs, {os.cpu_count()} CPUs)")
        for name, cmd in rows.items():
            ts = [timed(cmd) for _ in range(args.repeat)]
            print(f"{name:<24} {statistics.median(ts):7.2f}s {min(ts):7.2f}s {max(ts):7.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
