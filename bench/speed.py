#!/usr/bin/env python3
"""Benchmark: chalkboard's speed against the floors it cannot go below.

Each command runs REPEAT times in fresh processes on this machine, a floor in turn with what
is compared with it (so both see the same load); medians are compared:

* the full build against the bare import of its dependencies (SymPy, Pint, matplotlib,
  Jinja2, PyYAML, Typst, numpy): a build whose inputs changed, the featured chip's HBM bandwidth
  edited to a new value before each run (so every figure reads something new and is drawn
  again), with nothing kept (.cache/ and the shipped derivations/solved.pickle removed first)
  and with SymPy's work kept (also with --no-pdf); a build after an
  edit to another chip (only the figures that list every chip are drawn again); a build forced
  (`--force`) with nothing changed (every figure kept); and an unchanged rebuild (the output is up
  to date and the build says so);
* the edit loop, `build.py watch`: the featured chip's HBM bandwidth edited under a running watch
  (a new value each time), the time from the saved edit to a new report.html and results.json,
  and to a new report.pdf, each against the bare import measured between its edits, medians over
  the edits; and the CPU time the watch spent on an edit (all its processes), against the bare
  import's CPU time: the ratio a quiet machine with these cores could not go below, whatever
  the load on this one when the bench runs;
* a fresh clone's first build (a copy of the project with nothing in .cache/: SymPy's results
  come from the shipped derivations/solved.pickle, every figure is drawn and the PDF compiled)
  and a build after a comment-only edit of hardware.yaml, against the same floor;
* the library's first call (`cb.plan`, `cb.compare`, `cb.verdicts`) in a fresh interpreter in a fresh
  clone, against the build's import floor;
* `build --all-hardware` (a report per chip) against the default build in the same state, run
  in turn with it: the featured chip edited, and nothing changed (`--force`);
* `build.py eval` against the bare import of what eval needs (SymPy, Pint, PyYAML, numpy), also of
  the lecture's name answered under a layout (`step_time --set tp=8`) and of `plan` for one model
  over every priced chip; and the plan's search rate (candidates a second, in one process, the
  search alone);
* a 10^6-point sweep written as CSV (`eval step_time --sweep batch=1:1000000 --csv`) against a
  numpy script that computes the same formula and writes the same columns with np.savetxt;
* a 10^6-point step-time sweep (the compiled, vectorised path) against the same formula
  written by hand in numpy, in one process;
* the README's test command (`python3 -m pytest -q`), once: its wall and CPU time, the figure
  docs/developers.md cites (--skip-tests leaves it out);
* `build.py check` and the build at 1x, 10x and 50x the chip x model pairs (copies of the
  bundled chips and models under new ids), time and peak memory, every figure drawn.

Every command runs with Python's bytecode cache on, as a default Python runs (see ENV). A build
row also gives its CPU time (user and system, every process it forked and waited for included)
and, after ">=", that time spread over every core against the floor: the ratio no scheduling of
the same work can go below.

    python bench/speed.py [--repeat 5] [--skip-scaling] [--skip-tests] [--readme] [--watch-only | --all-hardware-only]

--readme writes the table into docs/speed.md (between its speed-table markers).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from chalkboard import FEATURED_HARDWARE  # noqa: E402
from chalkboard.cache.figcache import FOLDER as FIGURES_KEPT  # noqa: E402

OTHER_CHIP = "h100-sxm"   # a chip the featured figures do not read
# the library's calls timed on their first use in a fresh interpreter (issue: within 4x the import floor)
LIBRARY_CALLS = {"plan": "cb.plan('llama-3-70b', 30, context=4096)",
                 "compare": "cb.compare(['step_time', 'cost_per_token'], hardware=['h100-sxm', 'b200'], "
                            "models=['llama-3-70b'])",
                 "verdicts": "cb.verdicts()"}
BUILD_IMPORTS = ("import sympy, pint, jinja2, yaml, typst, numpy, matplotlib; matplotlib.use('Agg'); "
                 "import matplotlib.pyplot")
EVAL_IMPORTS = "import sympy, pint, yaml, numpy"


# Python keeps compiled bytecode (__pycache__) unless told not to; the libraries of the floors come
# compiled when installed. Every command here runs with that cache on (kept in a temporary folder,
# PYTHONPYCACHEPREFIX), as a default Python runs, even where the environment turns it off
# (PYTHONDONTWRITEBYTECODE): otherwise chalkboard's own modules would be compiled on every run
# while the floor's are not. `eval` is also timed without it, for comparison.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str], cwd: Path = ROOT, before=None, env=None) -> tuple[float, float, float]:
    """Wall seconds, peak resident memory (MiB) and CPU seconds (user and system, the processes
    it forked and waited for included) of one run in a fresh process."""
    if before:
        before()
    t0 = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", *cmd], cwd=cwd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, env=env or ENV)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{r.stderr[-2000:]}")
    try:
        kib, user, system = r.stderr.strip().splitlines()[-1].split()
        peak, cpu = int(kib) / 1024, float(user) + float(system)
    except (ValueError, IndexError):
        peak = cpu = float("nan")
    return dt, peak, cpu


def median_of(cmd, repeat, cwd=ROOT, before=None, env=None):
    runs = [timed(cmd, cwd, before, env) for _ in range(repeat)]
    return statistics.median(t for t, _, _ in runs), max(m for _, m, _ in runs)


def interleaved(commands: dict, repeat: int) -> dict:
    """name -> (median seconds, peak MiB, median CPU seconds) of each command in ``commands`` (name -> (cmd, before,
    env[, folder])), run in turn ``repeat`` times: a floor and what is compared with it see the same
    load on the machine (it moves by tens of percent over minutes)."""
    runs = {name: [] for name in commands}
    for _ in range(repeat):
        for name, (cmd, before, env, *folder) in commands.items():
            runs[name].append(timed(cmd, folder[0] if folder else ROOT, before, env))
    return {name: (statistics.median(t for t, _, _ in r), max(m for _, m, _ in r),
                   statistics.median(c for _, _, c in r)) for name, r in runs.items()}


SHOWN: list[str] = []   # the table as printed, for --readme


def say(text: str) -> None:
    print(text, flush=True)
    SHOWN.append(text)


CPUS = os.cpu_count() or 1


def row(name, t, floor=None, mem=None, cpu=None, bound=True):
    """One line of the table; with ``cpu`` (the run's CPU seconds, all its processes), its CPU
    time, and with a floor and ``bound``, the ratio no scheduling can go below: that CPU time
    spread over every core, against the floor (the floor's own row: bound=False)."""
    ratio = f"{t / floor:5.2f}x" if floor else ""
    memt = f"{mem:7.0f} MiB" if mem is not None else ""
    bound = f"  >={cpu / CPUS / floor:5.2f}x" if cpu is not None and floor and bound else ""
    cput = f"{cpu:6.2f} s CPU{bound}" if cpu is not None else ""
    say(f"  {name:<44} {t:7.2f} s  {ratio:>7}  {memt:>11}  {cput}".rstrip())


def write_readme() -> None:
    """The table just printed, into docs/speed.md between its speed-table markers."""
    readme = ROOT / "docs" / "speed.md"
    text = readme.read_text(encoding="utf-8")
    start, end = "<!-- speed-table: written by python3 bench/speed.py --readme -->", "<!-- end speed-table -->"
    if start not in text or end not in text:
        raise SystemExit("docs/speed.md has no speed-table markers")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    readme.write_text(head + start + "\n```\n" + "\n".join(SHOWN) + "\n```\n" + end + tail, encoding="utf-8")


def sweep_vs_numpy(points: int = 1_000_000) -> tuple[float, float]:
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from chalkboard.cache import symcache
    symcache.load(ROOT)
    from chalkboard.data.loader import load
    from chalkboard.evaluation.evaluate import Scenario

    data = load(ROOT)
    sc = Scenario(data, "gb200-nvl72", "deepseek-v3")
    batches = np.arange(1, points + 1, dtype=float)
    from chalkboard.evaluation.dependence import FUSE_FROM
    sc.sweep(("step_time",), "batch", batches[:FUSE_FROM])  # compile once (imports SymPy's printer), untimed
    g = {n: sc._mag(n) for n in ("peak_flops", "hbm_bandwidth", "params_active", "context",
                                  "kv_bytes_per_token", "attention_flops_per_token", "bytes_per_weight",
                                  "chips", "experts", "experts_per_token", "routed_params",
                                  "always_read_params")}  # base units, as hand-written code would take them

    def by_hand(b):
        compute = b * (2 * g["params_active"] + g["context"] * g["attention_flops_per_token"]) / (
            g["chips"] * g["peak_flops"])
        frac = 1 - (1 - g["experts_per_token"] / g["experts"]) ** b
        weights = (g["always_read_params"] + g["routed_params"] * frac) * g["bytes_per_weight"] / (
            g["chips"] * g["hbm_bandwidth"])
        kv = b * g["context"] * g["kv_bytes_per_token"] / (g["chips"] * g["hbm_bandwidth"])
        return np.maximum(compute, weights + kv)

    def best(fn, n=5):
        ts = []
        for _ in range(n):
            t0 = time.perf_counter()
            out = fn()
            ts.append(time.perf_counter() - t0)
        return min(ts), out

    t_ours, ours = best(lambda: sc.sweep(("step_time",), "batch", batches)["step_time"])
    t_hand, hand = best(lambda: by_hand(batches))
    assert np.allclose(ours, hand, rtol=1e-12), "the sweep and the hand-written formula disagree"
    return t_ours, t_hand


def plan_rate(model: str = "deepseek-v3") -> tuple[float, int]:
    """(seconds, candidates) of plan's search for one model over every chip and three weight
    formats, after a first search warmed the compiled definitions: the search alone, in one process."""
    from chalkboard import planner as plan
    from chalkboard.data.loader import load
    from chalkboard.validation import evidence

    data = load(ROOT, "hardware.yaml", "models.yaml", "prices.yaml")
    ev = evidence(ROOT, data)
    targets = plan.Targets(4096.0, 20.0)
    plan.plan(data, model, list(data.hardware), targets, ["fp8"], ev)
    t0 = time.perf_counter()
    found = plan.plan(data, model, list(data.hardware), targets, ["bf16", "fp8", "fp4"], ev)
    return time.perf_counter() - t0, found.searched


def numpy_csv_script(points: int, where: Path) -> Path:
    """A numpy script that writes what `eval step_time --sweep batch=1:POINTS --csv` writes for
    the featured pair (the batch, the step time in s as eval writes it at this many points, whether
    it fits), at eval's serving set-up:
    the inputs are read once by chalkboard and written into the script as numbers, as a
    hand-written script holds them."""
    sys.path.insert(0, str(ROOT))
    from chalkboard.cache import symcache
    symcache.load(ROOT)
    from chalkboard.data.loader import load
    from chalkboard.evaluation.evaluate import Scenario

    sc = Scenario(load(ROOT), "gb200-nvl72", "deepseek-v3", defaults="serving")   # as eval's
    g = {n: sc._mag(n) for n in ("peak_flops", "hbm_bandwidth", "params_active", "context",
                                  "kv_bytes_per_token", "attention_flops_per_token", "bytes_per_weight",
                                  "chips", "experts", "experts_per_token", "routed_params",
                                  "always_read_params", "hbm_capacity", "params_total")}
    script = where / "numpy_csv.py"
    script.write_text(f"""import sys
import numpy as np
g = {g!r}
b = np.arange(1, {points} + 1, dtype=float)
compute = b * (2 * g["params_active"] + g["context"] * g["attention_flops_per_token"]) / (g["chips"] * g["peak_flops"])
frac = 1 - (1 - g["experts_per_token"] / g["experts"]) ** b
weights = (g["always_read_params"] + g["routed_params"] * frac) * g["bytes_per_weight"] / (g["chips"] * g["hbm_bandwidth"])
kv = b * g["context"] * g["kv_bytes_per_token"] / (g["chips"] * g["hbm_bandwidth"])
t = np.maximum(compute, weights + kv)
fill = (g["params_total"] * g["bytes_per_weight"] + b * g["context"] * g["kv_bytes_per_token"]) / (g["chips"] * g["hbm_capacity"])
table = np.empty(b.size, dtype=[("b", "f8"), ("t", "f8"), ("fits", "U5")])
table["b"], table["t"], table["fits"] = b, t, np.where(fill <= 1, "true", "false")
np.savetxt(sys.stdout, table, fmt=("%.17g", "%.17g", "%s"), delimiter=",", header="batch [sequence],step_time [s],feasible", comments="")
""")
    return script


def check_same_csv(ours: list[str], theirs: list[str]) -> None:
    """The two commands write the same columns and, at the first, middle and last rows, the same numbers."""
    a = subprocess.run(ours, cwd=ROOT, capture_output=True, text=True, env=ENV).stdout.splitlines()
    b = subprocess.run(theirs, cwd=ROOT, capture_output=True, text=True, env=ENV).stdout.splitlines()
    assert a[0] == b[0] and len(a) == len(b), (a[:2], b[:2], len(a), len(b))
    for i in (1, len(a) // 2, len(a) - 1):
        x, y = a[i].split(","), b[i].split(",")
        assert x[2] == y[2] and all(abs(float(u) - float(v)) <= 1e-12 * abs(float(u)) for u, v in zip(x[:2], y[:2])), \
            (a[i], b[i])


def chip_edits(chip: str, where: Path):
    """A function that writes a copy of hardware.yaml to ``where`` with ``chip``'s HBM bandwidth
    set to a value no earlier call wrote (a changed input: nothing kept under the old one fits)."""
    import yaml

    doc = yaml.safe_load((ROOT / "hardware.yaml").read_text())
    value, unit = doc["hardware"][chip]["hbm_bandwidth"]["value"].split(" ", 1)
    runs = iter(range(1, 10**6))

    def edit():
        doc["hardware"][chip]["hbm_bandwidth"]["value"] = f"{float(value) * (1 + next(runs) * 1e-4):.6g} {unit}"
        where.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    return edit


def _cpu(pid: int) -> float:
    """CPU seconds (user and system) of process ``pid`` and of its children it has waited for."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and every process under it now, with the children each has waited for."""
    total = _cpu(pid)
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                total += _tree_cpu(int(child))
            except (OSError, ValueError):   # ended meanwhile (its time is its waiting parent's)
                pass
    return total


def watch_edits(py: str, hardware_file: Path, edit, out: Path, repeat: int) -> dict:
    """Medians of the edit loop: name -> seconds from the saved edit (``edit`` rewrites
    ``hardware_file``) to a new page (report.html and results.json, committed together) and to a
    new PDF under a running `build.py watch`; the CPU seconds the watch spent from the edit to its
    PDF (every process, Typst's included: /proc, where there is one); and the bare import's time
    and CPU seconds, timed while the watch waits between edits (the same load)."""
    import signal

    def ino(name):
        try:
            return os.stat(out / name).st_ino   # a new file (renamed into place) has a new inode
        except OSError:
            return None

    def wait(pred, proc, what, timeout=300):
        end = time.perf_counter() + timeout
        while not pred():
            if proc.poll() is not None or time.perf_counter() > end:
                raise SystemExit(f"failed: watch ({what}): status {proc.poll()}")
            time.sleep(0.005)
        return time.perf_counter()

    edit()
    proc = subprocess.Popen([py, "build.py", "watch", "--out", str(out), "--hardware-file", str(hardware_file)],
                            cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    runs = {"floor": [], "floor_cpu": [], "page": [], "pdf": [], "cpu": []}
    try:
        proc.stdout.readline()   # the first build
        wait(lambda: ino("report.pdf") is not None, proc, "the first PDF")
        time.sleep(1)   # its symcache saved, the figure processes warm
        for _ in range(repeat):
            floor, _, floor_cpu = timed([py, "-c", BUILD_IMPORTS])
            runs["floor"].append(floor)
            runs["floor_cpu"].append(floor_cpu)
            page, pdf = ino("report.html"), ino("report.pdf")
            try:
                cpu = _tree_cpu(proc.pid)
            except OSError:   # no /proc
                cpu = None
            edit()
            t0 = time.perf_counter()
            runs["page"].append(wait(lambda: ino("report.html") != page, proc, "the page") - t0)
            runs["pdf"].append(wait(lambda: ino("report.pdf") != pdf, proc, "the PDF") - t0)
            proc.stdout.readline()
            if cpu is not None:
                runs["cpu"].append(_tree_cpu(proc.pid) - cpu)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    return {name: statistics.median(r) if r else None for name, r in runs.items()}


def all_hardware_rows(forced: list[str], featured_file: Path, edit_featured, repeat: int) -> None:
    """`build --all-hardware` (a report per chip) against the default build in the same state, each
    run in turn with the other: the featured chip edited (its figures, and the chip reports'
    figures that read it, drawn again), and nothing changed (`--force`: every figure kept)."""
    edited = [*forced, "--hardware-file", str(featured_file)]
    # the chips' figures as a build of this file left them (a figure reads the data file's name)
    timed([*edited, "--all-hardware"], before=edit_featured)
    m = interleaved({"warm": (edited, edit_featured, None),
                     "all_warm": ([*edited, "--all-hardware"], edit_featured, None),
                     "forced": (forced, None, None),
                     "all_forced": ([*forced, "--all-hardware"], None, None)}, repeat)
    say("  build --all-hardware (a report per chip) against the default build in the same state")
    for name, default, each in (("featured chip edited", "warm", "all_warm"),
                                ("nothing changed, --force", "forced", "all_forced")):
        row(f"{name}: the default build", m[default][0], None, m[default][1], m[default][2])
        row(f"{name}: --all-hardware", m[each][0], m[default][0], m[each][1], m[each][2], bound=False)


def tests_row() -> None:
    """The README's test command, once (it takes minutes): wall and CPU over every worker."""
    say("  the README's test command (python3 -m pytest -q -p no:cacheprovider), once")
    t0 = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", sys.executable, "-m", "pytest", "-q", "-p",
                        "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True, env=ENV)
    t = time.perf_counter() - t0
    _, user, system = r.stderr.strip().splitlines()[-1].split()
    summary = next((ln for ln in reversed(r.stdout.splitlines()) if " in " in ln and "passed" in ln), "")
    row("the README's test command", t, None, None, float(user) + float(system))
    say(f"  ({summary.strip('= ')})")   # how many passed (and failed), as pytest said


def scaled_project(factor: int, where: Path) -> Path:
    """A copy of the project whose hardware.yaml holds each chip ``factor`` times (new ids)."""
    import yaml

    proj = where / f"x{factor}"
    shutil.copytree(ROOT, proj, ignore=shutil.ignore_patterns(".git", "build", "__pycache__", ".pytest_cache"))
    doc = yaml.safe_load((ROOT / "hardware.yaml").read_text())
    doc["hardware"] = {(eid if i == 0 else f"{eid}-copy{i}"): e
                       for i in range(factor) for eid, e in doc["hardware"].items()}
    (proj / "hardware.yaml").write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    return proj


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-scaling", action="store_true")
    ap.add_argument("--readme", action="store_true", help="write the table into docs/speed.md")
    ap.add_argument("--sweep-only", action="store_true", help=argparse.SUPPRESS)  # the sweep row's process
    ap.add_argument("--plan-only", action="store_true", help=argparse.SUPPRESS)   # the plan rate's process
    ap.add_argument("--watch-only", action="store_true", help="only the edit loop's rows")
    ap.add_argument("--all-hardware-only", action="store_true", help="only the --all-hardware rows")
    ap.add_argument("--skip-tests", action="store_true", help="leave out the README's test command (minutes)")
    args = ap.parse_args()
    if args.sweep_only:
        print(*sweep_vs_numpy())
        return 0
    if args.plan_only:
        print(*plan_rate())
        return 0
    py = sys.executable
    say(f"chalkboard speed ({args.repeat} runs each, medians; {CPUS} CPUs)")
    with tempfile.TemporaryDirectory() as tmp:
        ENV["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        out = str(Path(tmp) / "out")
        build = [py, "build.py", "build", "--out", out]
        forced = [*build, "--force"]
        featured_file, other_file = Path(tmp) / "featured-edited.yaml", Path(tmp) / "other-edited.yaml"
        edit_featured, edit_other = chip_edits(FEATURED_HARDWARE, featured_file), chip_edits(OTHER_CHIP, other_file)
        timed(forced)  # warm the file cache, the bytecode cache and matplotlib's font cache
        if args.all_hardware_only:
            all_hardware_rows(forced, featured_file, edit_featured, args.repeat)
            return 0
        watched = watch_edits(py, featured_file, edit_featured, Path(tmp) / "watched", args.repeat)
        say("  build.py watch, featured chip edited (import floor measured between edits)")
        row("bare imports", watched["floor"], watched["floor"], cpu=watched["floor_cpu"], bound=False)
        row("edit to a new report.html and results.json", watched["page"], watched["floor"])
        row("edit to a new report.pdf", watched["pdf"], watched["floor"], cpu=watched["cpu"])
        if watched["cpu"] is not None:
            say(f"  (CPU an edit: {watched['cpu']:.2f} s in the watch's processes, the bare import "
                f"{watched['floor_cpu']:.2f} s: >={watched['cpu'] / CPUS / watched['floor_cpu']:5.2f}x on {CPUS} cores)")
        if args.watch_only:
            return 0
        # the edited copies are read under the same names each run, as an edited hardware.yaml is
        timed([*forced, "--hardware-file", str(other_file)], before=edit_other)
        timed([py, "build.py", "eval", "step_time"])
        no_pyc = {**ENV, "PYTHONDONTWRITEBYTECODE": "1"}
        no_pyc.pop("PYTHONPYCACHEPREFIX")

        # nothing kept: in a copy of the project, whose .cache/ is removed before each run (the
        # project's own, with the figures the other rows keep, is left alone)
        bare = scaled_project(1, Path(tmp) / "bare")
        (bare / "derivations" / "solved.pickle").unlink()   # nor the results shipped for a fresh clone

        def cold():
            edit_featured()
            shutil.rmtree(bare / ".cache", ignore_errors=True)

        # a fresh clone: nothing in .cache/ (SymPy's results come from derivations/solved.pickle)
        fresh = scaled_project(1, Path(tmp) / "fresh")

        def clone():
            shutil.rmtree(fresh / ".cache", ignore_errors=True)
            shutil.rmtree(fresh / "build", ignore_errors=True)

        # a comment-only edit of hardware.yaml: a new comment before each run
        commented, comments = Path(tmp) / "commented.yaml", iter(range(1, 10**6))

        def comment():
            commented.write_text((ROOT / "hardware.yaml").read_text() + f"# a comment, edit {next(comments)}\n")
        comment()
        timed([*build, "--hardware-file", str(commented)])
        points = 1_000_000
        script = numpy_csv_script(points, Path(tmp))
        ours_csv = [py, "build.py", "eval", "step_time", "--hardware", "gb200-nvl72", "--model", "deepseek-v3",
                    "--sweep", f"batch=1:{points}", "--csv", "--layout", "even"]
        check_same_csv(ours_csv, [py, str(script)])
        m = interleaved({
            "floor_b": ([py, "-c", BUILD_IMPORTS], None, None),
            "fresh": ([py, "build.py"], clone, None, fresh),
            "comment": ([*build, "--hardware-file", str(commented)], comment, None),
            "cold": ([*forced, "--hardware-file", str(featured_file)], cold, None, bare),
            "warm": ([*forced, "--hardware-file", str(featured_file)], edit_featured, None),
            "warm_nopdf": ([*forced, "--no-pdf", "--hardware-file", str(featured_file)], edit_featured, None),
            "other": ([*forced, "--hardware-file", str(other_file)], edit_other, None),
            "forced": (forced, None, None),
            "same": (build, None, None),
            "floor_e": ([py, "-c", EVAL_IMPORTS], None, None),
            "eval": ([py, "build.py", "eval", "step_time"], None, None),
            "eval_nopyc": ([py, "build.py", "eval", "step_time"], None, no_pyc),
            "eval_layout": ([py, "build.py", "eval", "step_time", "--hardware", "h100-sxm", "--model",
                             "llama-3-70b", "--set", "tp=8"], None, None),
            "plan": ([py, "build.py", "plan", "--model", "llama-3-70b", "--context", "4096",
                      "--min-tokens-per-user", "30"], None, None),
            "csv_numpy": ([py, str(script)], None, None),
            "csv": (ours_csv, None, None),
            # the library's first call in a fresh interpreter, in a fresh clone (nothing in .cache/)
            **{f"lib_{name}": ([py, "-c", f"import sys; sys.path.insert(0, '.'); import chalkboard as cb; {call}"],
                               clone, None, fresh) for name, call in LIBRARY_CALLS.items()},
        }, args.repeat)
        floor_b, floor_e = m["floor_b"][0], m["floor_e"][0]

        def build_row(name, key):
            row(name, m[key][0], floor_b, m[key][1], m[key][2], bound=key != "floor_b")
        say("  build (import floor: SymPy, Pint, matplotlib, Jinja2, PyYAML, Typst, numpy)")
        build_row("bare imports", "floor_b")
        build_row("a fresh clone's first build", "fresh")
        build_row("featured chip edited, nothing kept or shipped", "cold")
        build_row("featured chip edited, SymPy's work kept", "warm")
        build_row("the same, --no-pdf", "warm_nopdf")
        build_row("another chip edited (its figures drawn)", "other")
        build_row("a comment edited in hardware.yaml", "comment")
        build_row("nothing changed, --force (figures, PDF kept)", "forced")
        build_row("unchanged rebuild", "same")
        say("  the library's first call, a fresh interpreter in a fresh clone (import floor as the build's)")
        for name, call in LIBRARY_CALLS.items():
            row(call.split("(")[0] + "(...)", m[f"lib_{name}"][0], floor_b)
        say("  eval (import floor: SymPy, Pint, PyYAML, numpy)")
        row("bare imports", floor_e, floor_e)
        row("build.py eval step_time", m["eval"][0], floor_e)
        row("the same, compiling its modules each run", m["eval_nopyc"][0], floor_e)
        row("eval step_time --set tp=8 (under the layout)", m["eval_layout"][0], floor_e)
        row("plan llama-3-70b, every priced chip", m["plan"][0], floor_e)
        got = subprocess.run([py, __file__, "--plan-only"], cwd=ROOT, env=ENV, capture_output=True, text=True)
        if got.returncode != 0:
            raise SystemExit(f"failed: the plan's search\n{got.stderr[-2000:]}")
        seconds, n = map(float, got.stdout.split())
        say(f"  plan's search: {n:,.0f} candidates in {seconds:.3f} s = {n / seconds:,.0f} candidates/s")
        # in a fresh process, as every other row (this one's heap, after all the runs above, moved
        # the two timings apart by up to a fifth)
        got = subprocess.run([py, __file__, "--sweep-only"], cwd=ROOT, env=ENV, capture_output=True, text=True)
        if got.returncode != 0:
            raise SystemExit(f"failed: the sweep\n{got.stderr[-2000:]}")
        t_ours, t_hand = map(float, got.stdout.split())
        say("  10^6-point step-time sweep over the batch")
        row("hand-written numpy", t_hand, t_hand)
        row("Scenario.sweep (compiled definitions)", t_ours, t_hand)
        say("  10^6-point sweep written as CSV")
        row("numpy script (np.savetxt)", m["csv_numpy"][0], m["csv_numpy"][0], m["csv_numpy"][1])
        row("build.py eval step_time --sweep ... --csv", m["csv"][0], m["csv_numpy"][0], m["csv"][1])
        all_hardware_rows(forced, featured_file, edit_featured, args.repeat)
        if not args.skip_tests:
            tests_row()
        if not args.skip_scaling:
            say("  scaling with chip x model pairs (16 chips x 8 models at 1x)")
            for factor in (1, 10, 50):
                proj = scaled_project(factor, Path(tmp))
                shutil.copytree(ROOT / ".cache", proj / ".cache", dirs_exist_ok=True) if (ROOT / ".cache").exists() else None
                t_c, m_c = median_of([py, "build.py", "check"], max(1, args.repeat // 2), cwd=proj)
                t_b, m_b = median_of([py, "build.py", "build", "--force", "--out", str(proj / "out")],
                                     max(1, args.repeat // 2), cwd=proj,   # every figure drawn
                                     before=lambda: shutil.rmtree(proj / FIGURES_KEPT, ignore_errors=True))
                row(f"check, {factor}x pairs ({16 * 8 * factor})", t_c, None, m_c)
                row(f"build, {factor}x pairs ({16 * 8 * factor})", t_b, None, m_b)
    if args.readme:
        write_readme()
    return 0


if __name__ == "__main__":
    sys.exit(main())
