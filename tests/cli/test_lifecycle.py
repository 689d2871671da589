"""The process's life (chalkboard/runtime/lifecycle.py): a signal held over a step that must happen whole,
workers that end with their parent (kill -9 included), and signals at any moment of a worker's
start or end, or of a staging folder's making or removal, that leave nothing behind: no
traceback, no process, no temporary folder. Each case runs in a process of its own, with the
handlers build.py installs."""
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals and /proc as on Linux")
DEADLINE = 120   # far past what an idle machine needs: a loaded one may take many times as long


def _until(predicate, what):
    end = time.monotonic() + DEADLINE
    while True:
        got = predicate()
        if got or time.monotonic() > end:
            assert got, f"no {what} within {DEADLINE} s"
            return got
        time.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"   # a zombie has ended
    except OSError:
        return False


def _session(sid: int) -> list[str]:
    return subprocess.run(["pgrep", "-s", str(sid)], capture_output=True, text=True).stdout.split()


def _start(code: str, *args) -> subprocess.Popen:
    prelude = f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
    return subprocess.Popen([sys.executable, "-c", prelude + textwrap.dedent(code), *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _ready(p) -> str:
    line = p.stdout.readline()
    assert line.startswith("ready"), (line, p.stderr.read() if p.poll() is not None else "")
    return line


def test_a_signal_is_held_over_a_step_and_handled_after():
    p = _start("""
        import os, signal
        from chalkboard.runtime.lifecycle import held
        seen = []
        signal.signal(signal.SIGTERM, lambda s, f: seen.append("handled"))
        with held():
            os.kill(os.getpid(), signal.SIGTERM)
            seen.append("step done")
        seen.append("after")
        print(seen)
    """)
    out, err = p.communicate(timeout=DEADLINE)
    assert p.returncode == 0, err
    assert out.strip() == "['step done', 'handled', 'after']"


@pytest.mark.parametrize("depth", [1, 2], ids=["worker", "worker-of-a-worker"])
def test_a_worker_ends_with_its_parent_killed_with_sigkill(depth):
    """A forked job that would sleep for an hour ends with its parent's SIGKILL (no pipe to read,
    no signal of its own: the kernel's parent-death signal), and so does a job that job started."""
    p = _start("""
        import os, sys, time
        from chalkboard.cache.forked import Forked

        def nest(depth):
            if depth > 1:
                inner = Forked("inner", nest, depth - 1)
            else:
                print("ready", os.getpid(), flush=True)
            time.sleep(3600)

        job = Forked("outer", nest, int(sys.argv[1]))
        job.result()
    """, depth)
    worker = int(_ready(p).split()[1])
    assert _alive(worker)
    p.kill()
    p.wait(timeout=DEADLINE)
    _until(lambda: not _alive(worker), "end of the worker")
    _until(lambda: not _session(p.pid), "end of every process")


# A process that does, in a loop, what a build does around its signals: a staging folder made,
# written and removed or committed; workers forked, collected and stopped, some of them forking
# workers of their own. The test's signal comes at a random moment of that.
CHURN = """
    import os, signal, sys, time
    from pathlib import Path
    from chalkboard.cache.forked import Forked, results
    from chalkboard.runtime.lifecycle import handle_signals
    from chalkboard.runtime.staging import Staging

    def work(n):
        if n:
            return results([Forked("inner", work, 0)])[0] + 1
        return 1

    out = Path(sys.argv[1])
    handle_signals()
    print("ready", flush=True)
    try:
        i = 0
        while True:
            i += 1
            with Staging(out) as st:
                st.write("a.txt", "x" * 1000)
                jobs = [Forked("job", work, i % 2) for _ in range(2)]
                if i % 3:
                    results(jobs)
                else:
                    for j in jobs:
                        j.stop()
                if i % 2:
                    st.commit()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    except SystemExit as e:
        print("interrupted", file=sys.stderr)
        raise
"""


@pytest.mark.parametrize("how", ["SIGINT-group", "SIGHUP", *(pytest.param(h, marks=pytest.mark.slow)
                                                             for h in ("SIGINT", "SIGTERM", "SIGHUP-group"))])
def test_a_signal_at_any_moment_of_workers_and_staging_leaves_nothing(how, tmp_path):
    """Signals each at a random moment of a loop that starts and ends workers and makes and
    removes staging folders: every time one line, 128 + the signal, no traceback, no process left,
    no temporary folder beside the output, and the output whole. (A signal handled as a worker was
    forked once printed 'Exception ignored in: _releaseLock' with a traceback: logging's fork hook
    interrupted.)"""
    name, _, group = how.partition("-")
    sig = getattr(signal, name)
    rng = random.Random(f"{how}")
    # two moments a run; bench/under_load.py runs it round after round beside a CPU load
    for attempt in range(2):
        out = tmp_path / f"out{attempt}"
        p = _start(CHURN, out)
        _ready(p)
        time.sleep(rng.uniform(0.0, 0.4))   # a moment of the loop, not a wait for anything
        os.killpg(p.pid, sig) if group else p.send_signal(sig)
        _, err = p.communicate(timeout=DEADLINE)
        assert "Traceback" not in err and "Error" not in err, (attempt, err[-3000:])
        assert p.returncode == 128 + sig and err.strip() == "interrupted", (attempt, p.returncode, err[-2000:])
        _until(lambda: not _session(p.pid), "end of every process")
        left = [n for n in os.listdir(tmp_path) if n.startswith(f".{out.name}.tmp-")]
        assert not left, (attempt, left)
        assert not out.exists() or sorted(os.listdir(out)) == ["a.txt"], (attempt, os.listdir(out))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_handled_inside_a_del_still_ends_the_command(sig):
    """Python runs a signal's handler wherever the process is, a __del__ included (a collected
    pipe's, in the watch's worker), where the exception it raises is swallowed with a traceback and
    the process went on: the signal is sent again and ends it, with no traceback."""
    p = _start("""
        import sys, time
        from chalkboard.runtime.lifecycle import handle_signals

        class Slow:
            def __del__(self):   # nearly all of this process's time is spent in here
                end = time.monotonic() + 0.05
                while time.monotonic() < end:
                    pass
        handle_signals()
        print("ready", flush=True)
        try:
            while True:
                Slow()
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            sys.exit(130)
        except SystemExit:
            print("interrupted", file=sys.stderr)
            raise
    """)
    try:
        _ready(p)
        time.sleep(0.2)
        p.send_signal(sig)
        _, err = p.communicate(timeout=DEADLINE)
    finally:   # a child that did not end loops for ever: never left behind
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 128 + sig and err.strip() == "interrupted", (p.returncode, err[-2000:])


def test_every_temporary_path_is_ignored_by_git():
    """What the program makes while it runs (named here as the code names it) never shows in `git
    status`, so `git add .` cannot take it: staging folders and files beside any output folder,
    the watch's Typst folder among the caches."""
    import shutil

    from chalkboard.runtime.home import cache
    from chalkboard.runtime.staging import Staging
    from chalkboard.watch.typst_process import PREFIX

    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    paths = [str(Path(out).parent / f"{Staging(ROOT / out).prefix}{os.getpid()}-{tail}")
             for out in ("build", "report", "docs/x/out") for tail in ("k2j4h1x0", "old-k2j4h1x0")]
    paths.append(str((cache(ROOT) / "watch" / f"{PREFIX}{os.getpid()}-k2j4h1x0" / "figures" / "a.svg").relative_to(ROOT)))
    r = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "--no-index", "-v", *paths],
                       capture_output=True, text=True)
    ignored = {line.split("\t")[-1] for line in r.stdout.splitlines()}
    assert ignored == set(paths), sorted(set(paths) - ignored)
