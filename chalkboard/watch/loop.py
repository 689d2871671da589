"""The worker of `build.py watch`: builds the report, then again on every saved edit to the data,
in this one process (chalkboard/watch/__init__.py). It is what `build.py build` does
(build.py's cmd_build: the inputs hashed, an unchanged output left alone, the figure process
forked on standby, chalkboard/build.py), with three differences: nothing is imported again, the
PDF is compiled by the warm Typst process after the page is out (chalkboard/build.py hands it
over through the methods of ``Loop``: compile, fit, keep_pdf, built), and an error is one line
after which the loop goes on.

One line per rebuild: the time, what changed, what was redone and how long it took; the PDF's part
is added to the line when the PDF is written.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import select
import sys
import tempfile
import time
import traceback
from pathlib import Path

from ..runtime.lifecycle import die_with, forget, held, on_signal
from ..runtime.staging import shown_path
from .inputs import Snapshot, data_inputs, summary

SUPERVISOR = "CHALKBOARD_WATCH_SUPERVISOR"   # the environment variable naming the supervisor's pid

POLL = 0.1   # seconds between looks at the data: the most an edit waits to be seen


class Lines:
    """The loop's lines on stdout, where one may be left open for the PDF's part; anything else
    said (an error, on stderr) first ends it."""

    def __init__(self):
        self.open = False

    def begin(self, text: str) -> None:
        self.end()
        sys.stdout.write(text)
        sys.stdout.flush()
        self.open = True

    def add(self, text: str, alone: str) -> None:
        """``text`` added to the open line, or ``alone`` as a line of its own if none is open."""
        if self.open:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
            self.open = False
        else:
            self.say(alone)

    def end(self) -> None:
        if self.open:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self.open = False

    def say(self, text: str) -> None:
        self.end()
        print(text, flush=True)

    def error(self, text: str) -> None:
        self.end()
        print(text, file=sys.stderr, flush=True)


def clock() -> str:
    return time.strftime("%H:%M:%S")


class Loop:
    def __init__(self, root: Path, args, out: Path, notify=None):
        from ..cache.figcache import code_digest
        from ..cache.incremental import Kept
        from .typst_process import TypstProcess

        self.root, self.base, self.notify = root, args, notify
        self.out = out                # the output folder
        self.building = None          # the options of the build under way
        self.program = code_digest(root)   # constant here: an edit to the program starts a new worker
        self.lines = Lines()
        from ..runtime.home import cache

        self.typst = TypstProcess(cache(root) / "watch")   # forked before anything here calls Typst
        self.generation = 0           # one per build started
        self.shown = 0                # the generation whose page is in the output folder
        self.page = {}                # what the shown page's PDF and stamp need
        self.kept = Kept()            # the parts of earlier builds, each under what it read
        self.figures = {}             # the figures of the page shown: a rebuild's first page shows
                                      # those it is drawing again (chalkboard/build.py numbers_first)
        self.numbers_at = None        # when this rebuild's new numbers were written (s after the edit)

    # -- a rebuild ---------------------------------------------------------------------------
    def rebuild(self, changed: list[str] | None) -> None:
        from ..build import build
        from ..cache import uptodate
        from ..cli.common import error_line, parse_sets
        from ..report.figure_process import standby

        self.generation += 1
        self.started = time.perf_counter()
        self.numbers_at = None
        self.why = "first build" if changed is None else f"{summary(changed)} changed"
        args = argparse.Namespace(**vars(self.base))
        args.program = self.program
        try:
            args.fingerprint = uptodate.fingerprint(self.root, args)
            args.fingerprinted = argparse.Namespace(**vars(args))
        except (OSError, ValueError):   # an unreadable input: the build says what is wrong
            args.fingerprint = None
        shown = self.page.get("args")
        if args.fingerprint and (uptodate.up_to_date(self.out, args.fingerprint)   # (its PDF may be on its way)
                                 or (shown is not None and shown.fingerprint == args.fingerprint)):
            self.lines.say(f"{clock()} {self.why}: {shown_path(self.out)} is up to date (as written from these inputs)")
            return
        self.building = args
        process = standby()
        try:
            args.set_pairs = parse_sets(args.set)
            build(self.root, args, process, watch=self)
        except KeyboardInterrupt:
            raise
        except Exception as e:   # noqa: BLE001  (every error is told, and the loop goes on)
            told = error_line(e)
            if told is None:   # a defect in the program: its traceback, then the loop goes on
                self.lines.end()
                traceback.print_exc()
                told = (f"error: {type(e).__name__}: {e}", 1)
            self.lines.error(told[0])
        finally:
            if process is not None:
                process.stop()

    # -- what chalkboard/build.py calls ----------------------------------------------------------
    def compile(self, typ_src: str, figures: dict, timestamp: int, key: str) -> None:
        self.typst.compile(self.generation, typ_src, figures, timestamp, key)

    def fit(self, typ_src: str) -> str:
        return self.typst.fit(typ_src)

    def keep_pdf(self, staged: Path) -> None:
        """The previous PDF and its source, linked into the new output until the new PDF is written."""
        self.keep(staged, ("report.pdf", "report.typ"))

    def numbers(self, out: Path) -> None:
        """The new numbers are out (report.html and results.json), their figures still being drawn:
        the served page reloads now, and again when the figures land."""
        self.out = out
        self.numbers_at = time.perf_counter() - self.started
        self._notify("page")

    def keep(self, staged: Path, names) -> None:
        """Each of ``names`` in the output shown, linked into the output being written (the
        previous PDFs while the numbers go first; the numbers' results.json while the figures follow)."""
        for name in names:
            old = self.out / name if self.out is not None else None
            if old is None or not old.is_file():
                continue
            try:
                os.link(old, staged / name)
            except OSError:   # no hard links here: a copy
                try:
                    import shutil

                    shutil.copy2(old, staged / name)
                except OSError:
                    pass

    def built(self, out: Path, written: dict, figures: int, drawn: int, pdf, stages: list) -> None:
        self.out, self.shown = out, self.generation
        self.typst.drop_older(self.generation)
        self.page = {"written": dict(written), "args": self.building, "started": self.started,
                     "stages": stages}
        what = f"{drawn} of {figures} figures drawn" if drawn else f"{figures} figures kept"
        now = time.perf_counter() - self.started
        line = (f"{clock()} {self.why}: page and results.json in {now:.2f} s ({what})" if self.numbers_at is None
                else f"{clock()} {self.why}: page and results.json in {self.numbers_at:.2f} s, figures {now:.2f} s ({what})")
        if pdf == "later":
            self.lines.begin(line)
        else:
            self.lines.say(line + (", PDF kept (same source and figures)" if pdf == "kept" else ""))
        self._notify("page")

    # -- the PDF, once Typst is done -----------------------------------------------------------
    def take_pdf(self) -> None:
        from ..cache import pdfcache

        got = self.typst.result()
        if got is None:
            return
        generation, key, seconds, outcome = got
        if generation != self.shown:
            return   # its page has been replaced (or never came out): a newer PDF follows
        if isinstance(outcome, str):
            self.lines.error(outcome)
            return
        fitted, pdf = outcome
        try:
            digests = {"report.typ": _replace(self.out, "report.typ", fitted.encode("utf-8")),
                       "report.pdf": _replace(self.out, "report.pdf", pdf)}
        except OSError as e:
            self.lines.error(f"error: cannot write {shown_path(self.out / 'report.pdf')}: {e.strerror or e}")
            return
        pdfcache.put(self.root, key, fitted, pdf)
        self._stamp(digests)
        total = time.perf_counter() - self.page["started"]
        self.lines.add(f", PDF {total:.2f} s", f"{clock()} PDF written, {total:.2f} s after the edit")
        self._notify("pdf")

    def _stamp(self, digests: dict) -> None:
        """The output's stamp (chalkboard/cache/uptodate.py), as the one-shot build writes it: only
        if nothing hashed changed since the build began."""
        from ..cache.uptodate import STAMP, fingerprint, stamp

        args = self.page.get("args")
        if args is None or not getattr(args, "fingerprint", None):
            return
        try:
            if fingerprint(self.root, args.fingerprinted) == args.fingerprint:
                _replace(self.out, STAMP, stamp(args.fingerprint, {**self.page["written"], **digests}).encode())
        except (OSError, ValueError):
            pass

    def _notify(self, what: str) -> None:
        if self.notify is not None:
            try:
                os.write(self.notify, f"{what}\n".encode())
            except OSError:   # the supervisor is gone
                self.notify = None

    def stop(self) -> None:
        self.lines.end()
        self.typst.stop()


def _replace(out: Path, name: str, content: bytes) -> str:
    """``content`` written to ``out/name`` whole, then renamed over it; its SHA-256. Written beside
    the output folder under the name of this process's staging folders (chalkboard/runtime/staging.py),
    which the next build removes if this process died with it."""
    tmp = None

    def remove():
        Path(tmp).unlink(missing_ok=True)
    try:
        with held():   # made and recorded as one step: removed below, or by a signal's handler
            fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.tmp-{os.getpid()}-", dir=out.parent)
            on_signal(tmp, remove)
        with os.fdopen(fd, "wb") as f:
            f.write(content)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, out / name)
    except BaseException:
        if tmp is not None:
            remove()
        raise
    finally:
        forget(tmp)
    return hashlib.sha256(content).hexdigest()


def warm_figures() -> None:
    """matplotlib imported and styled, and mathtext's parser built, in this process: the figure
    processes each rebuild forks start with them (chalkboard/report/figure_process.py)."""
    import gc

    from matplotlib.mathtext import MathTextParser

    from ..report.drawing import plt

    plt.figure
    MathTextParser("path").parse("$t_{x}$")
    gc.freeze()   # lives as long as the process: out of the collector's scans


def run(root: Path, args, notify: int | None = None) -> int:
    """The worker: build, then rebuild on every edit to the data until interrupted."""
    from ..cache import symcache
    from ..cli.common import parse_sets
    from ..runtime.staging import output_folder

    parse_sets(args.set)                 # options that no edit can mend: one line, status 2
    from ..data import loader as data_module

    data_module.PARSED = {}              # each data file parsed again only when it changed
    supervisor = os.environ.get(SUPERVISOR)
    if supervisor:   # (its pid: a worker ends with the supervisor, even one killed with SIGKILL)
        die_with(int(supervisor))
    parent = os.getppid()
    saved, loop = -1, None
    try:
        loop = Loop(root, args, output_folder(root, args.out), notify)
        loop._notify("ready")
        data = Snapshot(root, data_inputs(args))   # before the first build: an edit made during it counts
        loop.rebuild(None)
        warm_figures()
        while True:
            select.select([loop.typst], [], [], POLL)
            loop.take_pdf()
            changed = data.settled()
            if changed:
                loop.rebuild(changed)
            elif notify is not None and os.getppid() != parent:
                return 0   # the supervisor is gone
            fresh = len(_registry_fresh())
            if fresh != saved and loop.typst.busy is None:   # SymPy's new work kept, while idle
                symcache.save(root)
                saved = fresh
    except KeyboardInterrupt:
        return 130
    finally:
        if loop is not None:
            loop.stop()


def _registry_fresh() -> dict:
    module = sys.modules.get("derivations")
    registry = module.__dict__.get("REGISTRY") if module is not None else None
    return registry.fresh if registry is not None else {}
