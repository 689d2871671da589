#!/usr/bin/env python3
"""Kill a build with SIGKILL before each filesystem step of its write stage.

The output folder starts with an "old" build (context 4,096) and is rebuilt with the defaults.
The build runs once up to its write stage; there it forks, and child N is killed (kill -9)
just before its N-th filesystem step (mkdir, open for writing, fsync, chmod, rename, the atomic
exchange, unlink, rmdir), for N = 1, 2, ... until a child finishes. After every kill the output
folder must hold exactly the old output or exactly the new one (byte for byte, the PDF included),
and the next build must remove whatever the killed one left beside it.

    python3 bench/kill_build.py [--work DIR]

Exit status 0 when every kill left the folder wholly old or wholly new.
"""
from __future__ import annotations

import argparse
import builtins
import hashlib
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tree(folder: Path) -> dict[str, str]:
    if not folder.is_dir():
        return {}
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def leftovers(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.tmp-"))


def build(out: Path, *extra: str) -> None:
    r = subprocess.run([sys.executable, str(ROOT / "build.py"), "build", "--force", "--out", str(out), *extra],
                       cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"build failed: {r.stderr.strip().splitlines()[-1]}")


def arm(kill_at: int, log) -> None:
    """In a child: count filesystem steps, SIGKILL just before step number ``kill_at``."""
    import chalkboard.runtime.staging as staging

    count = [0]

    def step(name, arg):
        count[0] += 1
        log.append(f"{name} {Path(str(arg)).name}" if arg is not None else name)
        if count[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    def wrap(owner, attr, name=None, writes=None):
        orig = getattr(owner, attr)

        def wrapped(*a, **k):
            if writes is None or writes(*a, **k):
                step(name or attr, a[0] if a else None)
            return orig(*a, **k)
        setattr(owner, attr, wrapped)

    for attr in ("mkdir", "rmdir", "unlink", "rename", "replace", "chmod", "fsync"):
        wrap(os, attr)
    wrap(staging, "_exchange", "exchange")
    wrap(builtins, "open", "open", writes=lambda f, mode="r", *a, **k: any(c in mode for c in "wxa+"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", help="scratch folder (default: a new temporary one)")
    opts = ap.parse_args()
    work = Path(opts.work or tempfile.mkdtemp(prefix="kill-build-")).resolve()
    out, old_copy, ref = work / "site" / "out", work / "old", work / "ref"
    out.parent.mkdir(parents=True, exist_ok=True)
    build(old_copy, "--set", "context=4096")
    build(ref)
    old, new = tree(old_copy), tree(ref)
    assert old != new and old and new
    print(f"old output: {len(old)} files; new output: {len(new)} files")

    spec = importlib.util.spec_from_file_location("chalkboard_cli", ROOT / "build.py")
    cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli)
    from chalkboard.cache.forked import Forked
    from chalkboard.runtime.staging import Staging

    # the build's forked jobs (the audit, the figures) may still run when the write stage starts:
    # their results are received here before the children that will ask for them are forked
    jobs, orig_init = [], Forked.__init__

    def recorded_init(self, *a, **k):
        orig_init(self, *a, **k)
        jobs.append(self)
    Forked.__init__ = recorded_init
    orig_enter = Staging.__enter__
    rows, failures = [], []

    def forking_enter(self):
        for job in jobs:
            job.settle()
        n = 1
        while True:
            shutil.rmtree(out, ignore_errors=True)
            shutil.copytree(old_copy, out)
            r, w = os.pipe()
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:  # the child writes, and dies at step n
                os.close(r)
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                os.dup2(devnull, 2)
                arm(n, _Log(w))
                return orig_enter(self)
            os.close(w)
            _, status = os.waitpid(pid, 0)
            with os.fdopen(r) as f:
                steps = f.read().splitlines()
            killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
            state = tree(out)
            verdict = "old" if state == old else "new" if state == new else "NEITHER"
            what = steps[-1] if killed and steps else "finished"
            rows.append((n, what, verdict, len(leftovers(out))))
            if verdict == "NEITHER" or (not killed and (verdict != "new" or status != 0)):
                failures.append((n, what, verdict, status))
            if not killed:
                break
            n += 1
        for n, what, verdict, left in rows:
            print(f"  kill before step {n:>3} ({what:<32}) -> {verdict}" + (f", {left} temp entries beside" if left else ""))
        build(out)  # one more build: cleans what the killed ones left
        stale = leftovers(out)
        if stale:
            failures.append(("after", "cleanup", f"left {stale}", 0))
        if tree(out) != new:
            failures.append(("after", "rebuild", "not the new output", 0))
        if failures:
            print(f"FAILED: {failures}")
        else:
            print(f"{len(rows) - 1} kills: the output folder was wholly old or wholly new after every kill, "
                  "and the next build removed every temp entry")
        sys.stdout.flush()
        os._exit(1 if failures else 0)

    Staging.__enter__ = forking_enter
    status = cli.main(["build", "--force", "--out", str(out)])
    sys.stdout.flush()
    os._exit(status)  # only a child that finished its build gets here


class _Log:
    """The child's steps, written to the parent through a pipe as they happen (it dies without a goodbye)."""

    def __init__(self, fd):
        self.fd = fd

    def append(self, item):
        os.write(self.fd, (item + "\n").encode())


if __name__ == "__main__":
    sys.exit(main())
