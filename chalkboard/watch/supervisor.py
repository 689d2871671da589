"""The command `build.py watch` itself: runs the worker (chalkboard/watch/loop.py, a fresh
interpreter: `build.py watch --worker FD`), starts a new one when the program changes, serves the
output with --serve, and ends the whole on Ctrl-C with one line and status 130. It imports no
library, so it starts at once and outlives any edit to the program: a worker that cannot start
(an edit left a module broken: its traceback is shown) is started again on the next edit."""
from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from ..runtime.home import cache
from ..runtime.lifecycle import SIGNALS, held
from .inputs import PROGRAM, Snapshot, data_inputs, summary
from .loop import SUPERVISOR

POLL = 0.25   # seconds between looks at the program (its edits are rarer than the data's)
# how long a worker told to stop may take to unwind before it is killed: it kills its own processes
# at once, so this is a busy machine's margin, not a wait anyone sees
STOP_WAIT = 60


def worker_argv(root: Path, args, fd: int) -> list[str]:
    """The worker's command line: the options this command was given where they differ from their
    defaults (a default the program sets, the featured chip, is the new program's after an edit),
    and the pipe it reports on."""
    from ..cli.parser import finish, make_parser

    defaults = finish(make_parser().parse_args(["watch"]), root, root)
    argv = [sys.executable, str(root / "build.py"), "watch", "--worker", str(fd)]
    for option in ("hardware_file", "models_file", "prices_file", "hardware", "model", "out", "claims_file"):
        if getattr(args, option) != getattr(defaults, option):
            argv.append(f"--{option.replace('_', '-')}={getattr(args, option)}")   # (a value may begin with -)
    argv += [f"--set={pair}" for pair in args.set or []]
    if args.no_pdf:
        argv.append("--no-pdf")
    return argv


class Worker:
    def __init__(self, root: Path, args, out: Path):
        self.leftovers = [(out.parent, f".{out.name}.tmp-"), (cache(root) / "watch", "typst-")]
        self.reports, report_end = os.pipe()
        os.set_blocking(self.reports, False)
        # a process group of its own: a terminal's Ctrl-C reaches this process only, which stops the
        # worker with SIGTERM (a KeyboardInterrupt in the worker's imports would end in a traceback);
        # told this process's id, the worker ends with it (chalkboard/runtime/lifecycle.py)
        env = {**os.environ, SUPERVISOR: str(os.getpid())}
        self.proc = subprocess.Popen(worker_argv(root, args, report_end), pass_fds=(report_end,), cwd=os.getcwd(),
                                     stdin=subprocess.DEVNULL, process_group=0, env=env)
        os.close(report_end)
        self.ready = False

    def read(self) -> list[str]:
        """What the worker reported since the last read (ready, page, pdf)."""
        try:
            got = os.read(self.reports, 4096).decode()
        except (BlockingIOError, OSError):
            return []
        words = got.split()
        self.ready = self.ready or "ready" in words
        return words

    def stop(self) -> None:
        """End the worker: SIGTERM, which unwinds it like Ctrl-C (build.py's entry: its own
        processes killed, what it was writing removed), then SIGKILL if it has not ended in
        STOP_WAIT seconds; whatever it left (its staging folders and temporary files beside the
        output, its Typst folder) is removed, however it ended."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_WAIT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        os.close(self.reports)
        self.remove_leftovers()

    def remove_leftovers(self) -> None:
        import shutil

        for folder, prefix in self.leftovers:
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for name in names:
                if name.startswith(f"{prefix}{self.proc.pid}-"):
                    path = folder / name
                    if path.is_dir() and not path.is_symlink():
                        shutil.rmtree(path, ignore_errors=True)
                    else:
                        try:
                            path.unlink()
                        except OSError:
                            pass


STOPPED: list = []   # the signal that stopped the watch, once one has


def _stop(signum, frame):
    STOPPED.append(signum)
    raise KeyboardInterrupt


def supervise(root: Path, args) -> int:
    from ..cli.common import EXIT_BAD_INPUT

    # Ctrl-C, SIGTERM and SIGHUP end the watch: the worker stopped, one line, 128 + the signal. The
    # loop also looks for a signal each turn: Python may run the handler inside a __del__, where
    # the exception it raises is swallowed.
    for sig in SIGNALS:
        signal.signal(sig, _stop)

    from ..runtime.staging import output_folder

    server = version = None
    out = output_folder(root, args.out)
    if args.serve:
        from .serve import Server, Version

        version = Version()
        server = Server(out, args.port, version)
        print(f"serving {args.out} at {server.url} (the page reloads itself after each rebuild)", flush=True)
    program, data = Snapshot(root, PROGRAM), Snapshot(root, data_inputs(args))
    worker = Worker(root, args, out)
    try:
        while True:
            if STOPPED:
                raise KeyboardInterrupt
            wait = [worker.reports] if worker is not None else []
            select.select(wait, [], [], POLL)
            if worker is not None:
                for word in worker.read():
                    if word == "page" and version is not None:   # (a new PDF leaves the page as it is)
                        version.bump()
                status = worker.proc.poll()
                if status is not None:
                    worker.read()
                    if status == EXIT_BAD_INPUT and not worker.ready:
                        return EXIT_BAD_INPUT   # options no edit can mend (its line is out)
                    print(f"error: the watch's worker stopped (status {status}); it starts again on the "
                          "next edit", file=sys.stderr, flush=True)
                    worker.stop()
                    worker = None
                    data.changed()   # from now on
            changed = program.settled()
            why = "starting again with the new program" if changed else "starting again"
            if worker is None:   # stopped: any edit starts it again
                changed += data.settled()
            if changed:
                if worker is not None:
                    worker.stop()
                print(f"{time.strftime('%H:%M:%S')} {summary(changed)} changed: {why}", flush=True)
                worker = Worker(root, args, out)
    except KeyboardInterrupt:
        with held():   # (a second Ctrl-C waits until the worker has stopped and its leftovers are gone)
            if worker is not None:
                worker.stop()
                worker = None
        print("chalkboard watch: stopped", file=sys.stderr, flush=True)
        return 128 + (STOPPED[0] if STOPPED else signal.SIGINT)
    finally:
        with held():
            if worker is not None:
                worker.stop()
        if server is not None:
            server.stop()
