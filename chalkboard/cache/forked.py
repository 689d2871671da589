"""Work done in a forked process beside the build: the figures, the PDF, results.json.

``Forked(fn, *args)`` runs ``fn(*args)`` in a forked child (which shares the parent's memory as
it was at the fork, so nothing is pickled on the way in) and sends back what it returns.
A job may be started before the build knows what it is to do (``orders=True``: ``fn``'s first
argument is the connection on which ``order()`` sends that later, as a pickle; the pipe is made
large enough to hold an order of up to 1 MiB, so that sending one does not wait for the child to
read it, and a larger one waits only until the child does).
``result()`` waits for it; an error the child raised comes back as the same BuildError,
OutputError, InputError, DataError or MissingInput (one line for the user), anything else as a
BuildError naming the job. ``stop()`` ends the child. A child ends with its parent, even one
killed with SIGKILL, and leaves Ctrl-C to it (chalkboard/runtime/lifecycle.py). Each child closes the parent's ends of
every other job's pipe it inherits, so a parent that dies or stops reading breaks the pipes and
no child blocks for ever; a job may start jobs of its own. SymPy work the child did that no earlier run kept (the audit's identity checks, generated
code) comes back with the result, to be kept with the parent's, and so do the entries new in the
child of every table named to ``carry`` (a process's own caches, such as the text sizes the
figures measured). Where fork is not available, ``fn`` runs when its result is asked for.
"""
from __future__ import annotations

import multiprocessing as mp
import os
from multiprocessing.reduction import ForkingPickler

from ..data.loader import DataError
from ..errors import BuildError, InputError, MissingInput, OutputError
from ..runtime.lifecycle import as_worker, held

_KNOWN = (BuildError, OutputError, InputError, DataError, MissingInput)
_LIVE: list = []   # the parent's ends of the jobs not yet collected (closed in every child forked later)
_CARRIED: dict = {}   # name -> a table whose entries a child adds come back to its parent


def carry(name: str, table: dict) -> None:
    """What a forked child adds to ``table`` is added to the parent's when its result is received."""
    _CARRIED[name] = table


def can_fork() -> bool:
    return "fork" in mp.get_all_start_methods()


class Forked:
    def __init__(self, what: str, fn, *args, close_in_child=(), orders=False):
        self.what, self.fn, self.args, self.child = what, fn, args, None
        self.outcome = None   # what the child sent, once received
        self.orders = None    # with orders=True, the end order() sends on until it has
        if not can_fork():
            return
        try:
            ctx = mp.get_context("fork")
            self.receive, send = ctx.Pipe(duplex=False)
            mine = [self.receive]
            if orders:
                inbox, self.orders = ctx.Pipe(duplex=False)
                _roomy(self.orders)
                args = (inbox, *args)
                mine.append(self.orders)
            # the fork and its record as one step: a signal meanwhile would find a child that no
            # one stops, or a child still running its parent's handlers (runtime/lifecycle.py)
            with held():
                child = ctx.Process(target=_run, args=(os.getpid(), send, fn, args,
                                                       [*_LIVE, *mine, *close_in_child]), daemon=True)
                child.start()
                self.child = child
                _LIVE.extend(mine)
            send.close()
            if orders:
                inbox.close()
        except (ValueError, OSError):
            self._close_orders()
            self.child = None

    def order(self, orders) -> bool:
        """Send a job started with orders=True what it is to do (once); whether it was sent. It is
        not where the job has no child process, the child is gone, or ``orders`` cannot be
        pickled: the child then gets no order (the caller does the work another way)."""
        if self.orders is None:
            return False
        try:
            self.orders.send(orders)   # pickled whole before anything is written
            return True
        except Exception:   # noqa: BLE001  (OSError: the child is gone; else what pickle refuses)
            return False
        finally:
            self._close_orders()

    def _close_orders(self) -> None:
        if self.orders is not None:
            self.orders.close()
            if self.orders in _LIVE:
                _LIVE.remove(self.orders)
            self.orders = None

    def ready(self) -> bool:
        """Whether result() would return without waiting for the child."""
        return self.child is None or self.outcome is not None or self.receive.poll()

    def settle(self) -> None:
        """Receive the child's outcome now; result() then gives it. For a process about to fork
        one that will ask for the result: only the process that started the job can receive it."""
        if self.outcome is not None or self.child is None:
            return
        try:
            try:
                raw = self.receive.recv_bytes()
                with _as_built():
                    self.outcome = ForkingPickler.loads(raw)
            except EOFError:
                self.outcome = ("error", "the process ended without a result")
        finally:  # also on an interruption: no child is left behind
            self.stop()

    def result(self):
        self.settle()
        if self.outcome is None:   # no child: the work is done here
            return self.fn(*self.args)
        kind, payload = self.outcome
        if kind == "known":
            raise payload
        if kind == "error":
            raise BuildError(f"{self.what} failed: {payload}")
        payload, fresh, carried = payload
        registry = _registry()
        if registry is not None:   # SymPy work the child did: kept with this run's (chalkboard.symcache)
            for key, value in fresh.items():
                registry.fresh.setdefault(key, value)
        for name, entries in carried.items():
            table = _CARRIED.get(name)
            if table is not None:
                for key, value in entries.items():
                    table.setdefault(key, value)
        return payload

    def stop(self) -> None:
        self._close_orders()   # a job waiting for its orders gets none, and ends
        if self.child is None:
            return
        self.receive.close()
        if self.receive in _LIVE:
            _LIVE.remove(self.receive)
        if self.child.is_alive():
            self.child.kill()   # (it keeps nothing a kill leaves half-done; a Typst compile would not see SIGTERM until it ends)
        self.child.join()
        self.child = None


def _as_built():
    """A context in which the child's reply is unpickled: SymPy objects rebuilt as the child built
    them, not evaluated again. An unevaluated form the child kept (factor_terms' 3*(L*a/2 + 2*N))
    would otherwise come back distributed, printed otherwise than where it was computed here, and
    kept so in .cache/ (symcache reads its files the same way). Without SymPy loaded, nothing."""
    import contextlib
    import sys

    if "sympy" not in sys.modules:
        return contextlib.nullcontext()
    from sympy.core.parameters import evaluate

    return evaluate(False)


def _roomy(conn) -> None:
    """The pipe behind ``conn`` enlarged to 1 MiB where the system allows it (Linux's default
    limit for any user), from the 64 kB it holds by default."""
    try:
        import fcntl

        fcntl.fcntl(conn.fileno(), fcntl.F_SETPIPE_SZ, 1 << 20)
    except (ImportError, AttributeError, OSError):   # not Linux, or a lower limit: a larger order waits for the reader
        pass


def _registry():
    """The derivations' registry if this process has loaded it (never loaded just for this)."""
    import sys

    module = sys.modules.get("derivations")
    return module.__dict__.get("REGISTRY") if module is not None else None


def _run(parent, conn, fn, args, parent_ends):
    # first, with the signals still held from the fork: Ctrl-C (which reaches the whole process
    # group) left to the parent, which stops this job; this job ends with its parent
    as_worker(parent)
    for end in parent_ends:
        end.close()
    # a job may start jobs of its own (multiprocessing refuses them to a daemon); the parent
    # still sees this one as a daemon, and stops it on its way out
    mp.current_process().daemon = False
    registry = _registry()
    before = set(registry.fresh) if registry is not None else set()
    had = {name: set(table) for name, table in _CARRIED.items()}
    try:
        result = fn(*args)
        registry = _registry()
        fresh = {k: v for k, v in registry.fresh.items() if k not in before} if registry is not None else {}
        carried = {name: {k: v for k, v in table.items() if k not in had.get(name, ())}
                   for name, table in _CARRIED.items()}   # (a table named in the child is new whole)
        reply = ("ok", (result, fresh, carried))
    except _KNOWN as e:
        reply = ("known", e)
    except BaseException as e:  # reported by the parent as one line
        reply = ("error", f"{type(e).__name__}: {e}")
    try:
        conn.send(reply)
    except OSError:   # the parent is gone (stopped, or its own parent stopped it): no one to tell
        pass
    except BaseException as e:   # a result that cannot be sent (pickled): its error instead
        try:
            conn.send(("error", f"{type(e).__name__}: {e}"))
        except OSError:
            pass
    finally:
        conn.close()


def results(jobs: list[Forked]) -> list:
    """Every job's result, in order; if one fails, the others are stopped and its error raised."""
    try:
        return [job.result() for job in jobs]
    finally:
        for job in jobs:
            job.stop()
