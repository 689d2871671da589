"""Typst kept warm between rebuilds: one process that compiles every PDF of the loop with the same
typst.Compiler, which keeps what it laid out and lays out again only what an edit changed (on the
report, about 0.4 s where a fresh compile takes 1.0 s; the PDF is byte for byte the same).

Typst starts threads, and a process that has used it must not fork (chalkboard/report/pdf.py):
this process is forked once, before the loop's process has called Typst, and the loop's process
never calls it (the formulas of a build without PDF are fitted here too). The figures a PDF
embeds are written into a folder of this process's own, not read from the output folder, which
the next rebuild may replace while Typst reads it; that folder lives with the caches (never in
the project's tree), is removed when the loop ends, and one left by a loop that was killed is
removed by the next. One PDF is compiled at a time; an order sent while one compiles waits, and
only the newest waiting order is kept.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

from ..runtime.lifecycle import alive, as_worker, forget, held, on_signal

PREFIX = "typst-"   # the folder's name: typst-PID-XXXXXXXX, PID the loop's process


def _remove_stale(parent: Path) -> None:
    """The folders of loops that no longer run, removed."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        m = re.match(rf"^{PREFIX}(\d+)-", name)
        if m and not alive(int(m.group(1))):
            shutil.rmtree(parent / name, ignore_errors=True)


class TypstProcess:
    def __init__(self, within: Path | None = None):
        """``within``: the folder to make this process's folder in (the project's cache folder,
        chalkboard/runtime/home.py), where the folders of loops killed before they removed theirs are
        removed; None: the system's temporary folder."""
        self.folder = self.child = None
        if within is not None:
            within.mkdir(parents=True, exist_ok=True)
            _remove_stale(within)
        with held():   # made and recorded as one step: stop() or a signal removes it whatever comes next
            self.folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=within))
            on_signal(self, self._remove_folder)
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        self.waiting = None   # the newest order not yet sent

    def _start(self) -> None:
        """The process forked (again, if it died: this process has still never called Typst)."""
        if self.child is not None:
            self.conn.close()
            self.child.join()
        ctx = mp.get_context("fork")
        self.conn, child_end = ctx.Pipe()
        with held():   # forked and recorded as one step, the child's signals held until it handles them
            child = ctx.Process(target=_serve, args=(os.getpid(), child_end, self.conn), daemon=True)
            child.start()
            self.child = child
        child_end.close()
        self.busy = None      # the order being compiled: (generation, key, started)

    def compile(self, generation: int, typ_src: str, figures: dict[str, str], timestamp: int, key: str) -> None:
        """Compile the PDF of ``generation`` as soon as Typst is free (see ``result``)."""
        self.waiting = (generation, typ_src, figures, timestamp, key, time.perf_counter())
        self._send()

    def drop_older(self, generation: int) -> None:
        """Forget a waiting order older than ``generation`` (its page has been replaced)."""
        if self.waiting is not None and self.waiting[0] < generation:
            self.waiting = None

    def _send(self) -> None:
        if self.busy is not None or self.waiting is None:
            return
        if not self.child.is_alive():
            self._start()
        generation, typ_src, figures, timestamp, key, started = self.waiting
        self.waiting = None
        shutil.rmtree(self.folder / "figures", ignore_errors=True)
        (self.folder / "figures").mkdir()
        for name, svg in figures.items():
            (self.folder / "figures" / f"{name}.svg").write_text(svg, encoding="utf-8")
        self.conn.send(("pdf", str(self.folder), timestamp, typ_src))
        self.busy = (generation, key, started)

    def fileno(self) -> int:
        """Readable when a result is there (for select)."""
        return self.conn.fileno()

    def result(self):
        """(generation, key, seconds since the order, (fitted source, PDF) or the error's line), or
        None if no compile has finished; the next waiting order is sent."""
        if self.busy is None or not self.conn.poll():
            return None
        try:
            kind, payload = self.conn.recv()
        except (EOFError, OSError):
            kind, payload = "error", "error: Typst's process ended (it is started again for the next PDF)"
        generation, key, started = self.busy
        self.busy = None
        if kind == "error" and not self.child.is_alive():
            self._start()
        self._send()
        return generation, key, time.perf_counter() - started, payload if kind == "ok" else str(payload)

    def fit(self, typ_src: str) -> str:
        """fit_formulas, done by Typst's process (this one must not start Typst's threads)."""
        from ..errors import BuildError

        while self.busy is not None:   # (no PDF is compiled in a build without one: never waits)
            self.conn.poll(None)
            self.result()
        if not self.child.is_alive():
            self._start()
        self.conn.send(("fit", typ_src))
        try:
            kind, payload = self.conn.recv()
        except EOFError:
            kind, payload = "error", "Typst's process ended"
        if kind != "ok":
            raise BuildError(str(payload).removeprefix("error: "))
        return payload

    def stop(self) -> None:
        if self.child is not None:
            self.conn.close()
            if self.child.is_alive():
                self.child.kill()   # it keeps nothing; a compile under way would not see SIGTERM until it ends
            self.child.join()
        self._remove_folder()
        forget(self)

    def _remove_folder(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


def _serve(parent, conn, parent_end) -> None:
    as_worker(parent)   # Ctrl-C is the loop's to handle (it stops this process); ends with the loop
    parent_end.close()
    from ..errors import BuildError
    from ..report.pdf import compile_pdf, fit_formulas

    compiler = None
    while True:
        try:
            order = conn.recv()
        except (EOFError, OSError):   # the loop is gone
            return
        try:
            if order[0] == "fit":
                reply = ("ok", fit_formulas(order[1]))
            else:
                _, folder, timestamp, typ_src = order
                if compiler is None:
                    import typst

                    compiler = typst.Compiler(root=folder)
                reply = ("ok", compile_pdf(Path(folder), timestamp, typ_src, compiler=compiler))
        except BuildError as e:
            reply = ("error", f"error: {e}")
        except Exception as e:   # noqa: BLE001  (told as one line; the loop goes on)
            reply = ("error", f"error: Typst failed: {type(e).__name__}: {e}")
        try:
            conn.send(reply)
        except OSError:
            return
