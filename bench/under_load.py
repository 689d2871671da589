"""The signal and watch tests, run again and again beside a CPU load: no clean-up may depend on an
idle machine.

    python3 bench/under_load.py                  # 20 rounds beside 4 busy processes
    python3 bench/under_load.py --rounds 5 --load 2 --tests tests/cli/test_lifecycle.py
    python3 bench/under_load.py --suite 5        # the README's test command 5 times in a row instead

Starts ``--load`` processes that spin on the CPU (each ends by itself when this script does, even
one killed with SIGKILL), then runs the tests in one pytest process (``-n 0``, slow ones
included), each ``--rounds`` times in rounds (every test once, then again), and prints how many
passes each test had. Exit status 0 only if every run of every test passed. The load and pytest
stop at ``--limit`` seconds whatever is left, so a run is bounded.
"""
from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = [
    "tests/cli/test_reliability.py::test_a_signal_mid_build_leaves_the_output_and_no_process",
    "tests/cli/test_reliability.py::test_kill_9_mid_build_leaves_the_output_and_no_process",
    "tests/cli/test_reliability.py::test_ctrl_c_during_the_imports_is_one_line",
    "tests/cli/test_lifecycle.py::test_a_signal_is_held_over_a_step_and_handled_after",
    "tests/cli/test_lifecycle.py::test_a_worker_ends_with_its_parent_killed_with_sigkill",
    "tests/cli/test_lifecycle.py::test_a_signal_at_any_moment_of_workers_and_staging_leaves_nothing[SIGINT-group]",
    "tests/cli/test_lifecycle.py::test_a_signal_at_any_moment_of_workers_and_staging_leaves_nothing[SIGHUP]",
    "tests/cli/test_watch.py::test_watch_rebuilds_on_edit_keeps_last_good_output_and_serves",
]
# a process that keeps one core busy until its parent (this script) is gone
SPIN = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass\n"


class Rounds:
    """A pytest plugin: the collected tests run ``rounds`` times, every test once per round; the
    outcome of each run is counted."""

    def __init__(self, rounds: int):
        self.rounds, self.passed, self.failed = rounds, collections.Counter(), collections.Counter()
        self.order: list[str] = []

    def pytest_collection_modifyitems(self, session, config, items):
        self.order = [item.nodeid for item in items]
        items[:] = [item for _ in range(self.rounds) for item in items]

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.failed[report.nodeid] += 1
            print(f"\nFAILED {report.nodeid} ({report.when}):\n{report.longreprtext[-4000:]}", file=sys.stderr,
                  flush=True)   # at once: a long run's failure is seen as it happens
        elif report.when == "call" and report.passed:
            self.passed[report.nodeid] += 1


def _limit(seconds: float) -> None:
    """Ctrl-C, as it were, after ``seconds``: pytest stops where it is, the tests' own clean-ups run."""
    import _thread
    import threading

    def stop():
        print(f"\nunder_load: stopped at the limit of {seconds:.0f} s", file=sys.stderr, flush=True)
        _thread.interrupt_main()
    timer = threading.Timer(seconds, stop)
    timer.daemon = True
    timer.start()


def suite(runs: int, load: int, limit: float) -> int:
    """The README's test command (``python3 -m pytest -q``) ``runs`` times in a row beside ``load`` busy
    processes; each run's summary line and wall time printed as it ends. 0 only if every run passed."""
    spin = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(load)]
    results, started = [], time.monotonic()
    try:
        for i in range(runs):
            left = limit - (time.monotonic() - started)
            if left <= 0:
                break
            t0 = time.monotonic()
            try:
                p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=ROOT,
                                   capture_output=True, text=True, timeout=left)
                rc, last = p.returncode, (p.stdout.strip().splitlines() or ["(no output)"])[-1]
            except subprocess.TimeoutExpired:
                rc, last = 124, "stopped at the limit"
            took = time.monotonic() - t0
            results.append(rc)
            print(f"run {i + 1} of {runs}: {'passed' if rc == 0 else f'FAILED (exit {rc})'} in {took / 60:.1f} min: "
                  f"{last}", flush=True)
            if rc:
                print(p.stdout[-6000:] if rc != 124 else "", file=sys.stderr, flush=True)
    finally:
        for p in spin:
            p.kill()
        for p in spin:
            p.wait()
    ok = len(results) == runs and not any(results)
    print(f"{sum(r == 0 for r in results)} of {runs} runs of the README's test command passed beside {load} busy "
          f"processes ({os.cpu_count()} cores) in {(time.monotonic() - started) / 60:.1f} min")
    return 0 if ok else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--load", type=int, default=4, help="busy processes beside the tests (default 4)")
    ap.add_argument("--limit", type=float, default=None,
                    help="seconds before everything is stopped (default 3600; with --suite 6 hours)")
    ap.add_argument("--tests", nargs="+", default=TESTS)
    ap.add_argument("-k", default=None, help="pytest's -k, to run some of the tests")
    ap.add_argument("--suite", type=int, default=0, metavar="N",
                    help="run the README's test command N times in a row beside the load instead")
    args = ap.parse_args()
    if args.suite:
        return suite(args.suite, args.load, args.limit or 6 * 3600)
    os.chdir(ROOT)
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    import pytest

    load = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(args.load)]
    _limit(args.limit or 3600)
    plugin = Rounds(args.rounds)
    started = time.monotonic()
    try:
        pytest.main(["-q", "-n", "0", "-m", "", "-p", "no:cacheprovider", "-rN",
                     *(["-k", args.k] if args.k else []), *args.tests], plugins=[plugin])
    finally:
        for p in load:
            p.kill()
        for p in load:
            p.wait()
    took = time.monotonic() - started
    print(f"\n{args.rounds} rounds beside {args.load} busy processes in {took / 60:.1f} min "
          f"({os.cpu_count()} cores):")
    width = max((len(n) for n in plugin.order), default=10)
    for nodeid in plugin.order:
        print(f"  {nodeid:<{width}}  {plugin.passed[nodeid]:>3} of {args.rounds} passed"
              + (f", {plugin.failed[nodeid]} failed" if plugin.failed[nodeid] else ""))
    ok = bool(plugin.order) and all(plugin.passed[n] == args.rounds and not plugin.failed[n] for n in plugin.order)
    failed = sum(plugin.failed.values())
    rounds = min((plugin.passed[n] + plugin.failed[n] for n in plugin.order), default=0)
    print("every run passed" if ok else f"{failed} runs failed" if failed else
          f"no run failed, but only {rounds} of {args.rounds} rounds were complete at the limit")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
