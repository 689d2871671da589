"""A process's life and its workers': what no signal may cut in half, and no worker outliving its parent.

The three signals a user sends (Ctrl-C, SIGTERM, SIGHUP: a closed terminal) are *held* over the few
steps that must happen whole (``held``): a fork and the record of the child that the parent stops
later, a staging folder made and recorded for removal. A signal that arrives meanwhile waits and
is handled just after, when there is nothing untracked to leave behind. A worker forked under
``held`` starts with them held too, so it sets its own handling (``as_worker``) before any can
reach it: Ctrl-C to the whole process group is the parent's to handle (a KeyboardInterrupt in a
worker still starting would print multiprocessing's traceback), and a worker ends with its
parent (Linux PR_SET_PDEATHSIG; elsewhere a thread that watches the parent's id), so ``kill -9``
of a build leaves no worker running. On a signal the parent kills and reaps its workers before it
unwinds (``stop_workers``): none of them can still be running, or write, while what the build
was making is removed. Workers keep nothing a kill could leave half-done: what they make comes
back to their parent, which writes it.

What a process makes to remove later (a staging folder, a file being replaced) is also recorded
here (``on_signal``, under ``held``), and the signal's handler removes it and ends the process
itself: unwinding cannot be trusted with it, since Python may run the handler as a context
manager's __exit__ or a finally's first call begins (its exception then skips them), or inside a
__del__ (where its exception is swallowed).
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from contextlib import contextmanager

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_PR_SET_PDEATHSIG = 1


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (one owned by someone else counts): a folder a process
    left is removed once that process is gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True   # exists, owned by someone else
    return True


def _can_hold() -> bool:
    # the mask is the calling thread's: only the main thread (where Python runs its handlers) holds
    return hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread()


@contextmanager
def held():
    """SIGINT, SIGTERM and SIGHUP held back for the block, then handled (a process's other threads
    must hold them for good: see ``quiet_thread``)."""
    if not _can_hold():
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def quiet_thread() -> None:
    """Called first in a thread of its own: the user's signals are never delivered to it, so that
    they reach the main thread, where ``held`` can hold them."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)


def stop_workers() -> None:
    """Every worker process this process forked, killed and reaped (they keep nothing a kill could
    leave half-done); their own workers end with them (``as_worker``)."""
    mp = sys.modules.get("multiprocessing")
    if mp is None:
        return
    children = mp.active_children()
    for child in children:
        try:
            child.kill()
        except (OSError, ValueError, AttributeError):   # already reaped, or closed
            pass
    for child in children:
        try:
            child.join()
        except (OSError, ValueError, AssertionError, AttributeError):
            pass


_CLEAN_UPS: dict = {}   # key -> function: what must be removed if a signal ends the process


def on_signal(key, fn) -> None:
    """``fn()`` removes what ``key`` names if a signal ends this process before ``forget(key)``
    (record it with the signals held, in the same step that makes what it removes)."""
    _CLEAN_UPS[key] = fn


def forget(key) -> None:
    _CLEAN_UPS.pop(key, None)


def clean_up() -> None:
    """Every recorded clean-up run (and forgotten), the signals held meanwhile."""
    with held():
        while _CLEAN_UPS:
            key = next(iter(_CLEAN_UPS))
            fn = _CLEAN_UPS.pop(key)
            try:
                fn()
            except Exception:   # noqa: BLE001  (the others still run; what is left the next build removes)
                pass


def interrupt(signum, frame):
    """The command's handler of SIGINT, SIGTERM and SIGHUP (``handle_signals``): the workers
    killed, what the command made to remove later removed, one line, and the process ends with
    128 + the signal. It ends here rather than raising an exception to unwind with: Python may run
    a handler inside a __del__ (a collected pipe's), where the exception is swallowed with a
    traceback and the process goes on."""
    stop_workers()
    clean_up()
    for stream in (sys.stdout, sys.stderr):   # what was printed before stays printed
        try:
            stream.flush()
        except BaseException:   # noqa: BLE001  (a closed pipe; a flush this handler interrupted)
            pass
    try:
        os.write(2, b"interrupted\n")
    except OSError:
        pass
    os._exit(128 + signum)


def handle_signals() -> None:
    """``interrupt`` handles the user's signals from now on."""
    for sig in SIGNALS:
        signal.signal(sig, interrupt)


def _end_worker(signum, frame):
    stop_workers()
    os._exit(128 + signum)


def as_worker(parent: int) -> None:
    """First of all in a worker forked under ``held`` (its signals are still held): Ctrl-C left to
    the parent, SIGTERM and SIGHUP end it with its own workers, its parent's death ends it; then
    the signals are let in."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _end_worker)
    signal.signal(signal.SIGHUP, _end_worker)
    _CLEAN_UPS.clear()   # the parent's to remove, not this worker's
    die_with(parent)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)


def die_with(parent: int) -> None:
    """This process ends when the process ``parent`` does (which must be its parent now): at once
    if it already has."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
                if os.getppid() != parent:   # it died before the request was made
                    os._exit(128 + signal.SIGKILL)
                return
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os._exit(128 + signal.SIGKILL)
    threading.Thread(target=_watch_parent, args=(parent,), name="parent", daemon=True).start()


def _watch_parent(parent: int) -> None:
    import time

    quiet_thread()
    while os.getppid() == parent:
        time.sleep(0.2)
    os._exit(128 + signal.SIGKILL)
