"""The figures, drawn beside the build on the other core.

``standby()`` forks the figure process as the build starts, before anything is read: it loads
what drawing needs (the derivations, matplotlib, the parser of matplotlib's mathtext) on the
other core while the build reads its inputs, derives and validates, which use one core only.
``Drawing`` takes every figure it can from the figure cache and sends that process the others,
once the build knows what they read (the data, the claims' rules of thumb, the measurements);
with nothing to draw, the process is stopped. Sent its order, it forks a second one (matplotlib
imported once); the two take the figures one at a time from a shared queue, the longest first, so that
they finish together whatever each figure costs.

After a featured-chip edit the process on standby is ready 0.1-0.2 s after the build knows what
to draw, where a process forked then spent some 0.4 s importing matplotlib while both cores were
busy: such builds took 5-7% less wall time (three sets of 9-11 alternating runs, paired medians;
3.20 s -> 3.05 s in the quietest, which also had the freeze below). A build that draws nothing
forks it and stops it: in seven paired `--force` builds, 1.32 s without it and 1.33 s with it. An earlier version of the same idea, without the
mathtext warm-up and reading its order with a thread, measured no gain in eleven pairs; which
difference matters was not found.
"""
from __future__ import annotations

import gc
import os
from typing import NamedTuple

from .figures import FIGURES, PER_CHIP, draw_all

PROCESSES = 2
# The figures that draw one row per chip cost about as much as another figure per this many chips
# (measured); where that is more than one, they are drawn first.
CHIPS_PER_FIGURE = 16


class Order(NamedTuple):
    """What the figure processes draw, with what it reads."""
    data: object
    hw: str
    model: str
    overrides: dict
    refs: dict
    extra: dict      # name -> (function, argument): a figure drawn from its argument alone
    names: list      # what to draw, the longest first
    trace: bool      # record what each figure reads (for the figure cache)


def order_of_work(names: list[str], chips: int) -> list[str]:
    """``names`` the longest first: a figure of one row per chip counts chips / CHIPS_PER_FIGURE,
    every other figure one (ties in the declared order)."""
    return sorted(names, key=lambda m: -(chips / CHIPS_PER_FIGURE if m in PER_CHIP else 1))


class Drawing:
    """Every figure of the report: a figure kept under what it reads now is taken from ``kept``
    (a FigureCache, chalkboard/cache/figcache.py), the others are drawn in forked processes from
    here on, with what each read traced, and put into ``kept``. ``extra``: other figures (name ->
    (function, argument) returning SVG), drawn from their argument alone; ``refs``: the claims'
    rules of thumb the figures mark (read from the claims, not their audit). ``wait()`` returns
    name -> (SVG, chip) in the declared order, raising BuildError if drawing failed. Where no
    process can be forked, the figures are drawn in ``wait()``."""

    def __init__(self, data, hw, model, overrides=None, extra=None, refs=None, kept=None, process=None):
        from ..cache.forked import Forked, can_fork

        overrides, extra, refs = dict(overrides or {}), extra or {}, refs or {}
        self.data, self.kept, self.job = data, kept, None
        self.keys, self.ready = {}, {}   # name -> key in ``kept``; name -> figure taken from it (None: none)
        if kept is not None:
            from ..cache.figcache import MISS

            arguments = (hw, model, sorted(overrides.items()), sorted((k, str(v)) for k, v in refs.items()))
            self.keys = {name: kept.figure_key(name, data, *arguments) for name in FIGURES}
            self.keys.update({name: kept.key(name, argument) for name, (_, argument) in extra.items()})
            for name, key in self.keys.items():
                figure = kept.lookup(key, data)
                if figure is not MISS:
                    self.ready[name] = figure
        todo = order_of_work([name for name in FIGURES if name not in self.ready], len(data.hardware))
        extra = {name: e for name, e in extra.items() if name not in self.ready}
        self.drawn = [*todo, *extra]    # what this build draws
        self.order = Order(data, hw, model, overrides, refs, extra, self.drawn, kept is not None)
        if process is not None and self.drawn and process.order(self.order):
            self.job = process   # the process on standby draws them
        elif process is not None:
            process.stop()   # nothing to draw, or an order it could not be sent: drawn as below
        if self.drawn and self.job is None and can_fork():
            self.job = Forked("drawing the figures", _figure_processes, self.order)
            if self.job.child is None:   # the fork failed: drawn in wait()
                self.job = None

    def finished(self) -> bool:
        """Whether wait() would return without waiting for a process."""
        return self.job is None or self.job.ready()

    def wait(self) -> dict:
        """Every figure, once the drawing has finished."""
        from ..cache.forked import results

        if self.job is not None:
            drawn = results([self.job])[0]
        elif self.drawn:
            drawn = _draw(self.order, iter(self.drawn))
        else:
            drawn = {}
        out = dict(self.ready)
        for name, (figure, reads) in drawn.items():
            out[name] = figure
            if self.kept is not None:
                self.kept.put(self.keys[name], reads, figure)
        return {n: out[n] for n in [*FIGURES, *[k for k in out if k not in FIGURES]] if out.get(n) is not None}


def standby():
    """The figure process, forked now to wait for its order (Drawing sends it), or None where no
    process can be forked. The caller stops it (``stop()``) once the build is over."""
    from ..cache.forked import Forked, can_fork

    if not can_fork():
        return None
    job = Forked("drawing the figures", _on_standby, orders=True)
    return job if job.child is not None else None


def _on_standby(inbox) -> dict:
    """The process on standby: ready to draw (the derivations with SymPy's results as the build
    loaded them, matplotlib imported and styled, mathtext's parser built: a legend sets symbols
    in mathtext, what is loaded frozen for the garbage collector), then drawing what it is sent."""
    import derivations  # noqa: F401

    from .drawing import plt

    plt.figure   # imports and styles matplotlib
    from matplotlib.mathtext import MathTextParser

    MathTextParser("path").parse("$t_{x}$")   # the parser is built once, for every parse after
    # what is loaded now lives as long as the process (and the second one, forked from it): the
    # cyclic garbage collector leaves it out of its scans (in a traced build, the two figure
    # processes' collections took 0.18 s of CPU, 0.08 s with this)
    gc.freeze()
    try:
        order = inbox.recv()
    except EOFError:   # stopped before any order: the build failed, or took every figure from the cache
        return {}
    finally:
        inbox.close()
    return _figure_processes(order)


def _figure_processes(order: Order) -> dict:
    """The first figure process: matplotlib imported, a second process forked from this one, both
    taking the figures from one queue."""
    from ..cache.forked import Forked, results
    from .drawing import plt

    plt.figure   # imports and styles matplotlib
    # the queue: one byte per figure, its index in order.names; a read of one byte from a pipe is
    # atomic, so each figure goes to exactly one process; the write end is closed before the
    # second process is forked, so a read past the last figure ends both
    assert len(order.names) <= 256, "one byte a figure"
    take, put = os.pipe()
    try:
        os.write(put, bytes(range(len(order.names))))
    finally:
        os.close(put)
    try:
        others = [Forked("drawing the figures", _draw_queued, order, take)
                  for _ in range(min(PROCESSES, len(order.names)) - 1)]
        out = _draw_queued(order, take)
        for part in results(others):
            out.update(part)
    finally:
        os.close(take)
    return out


def _draw_queued(order: Order, take: int) -> dict:
    def queue():
        while got := os.read(take, 1):
            yield order.names[got[0]]
    return _draw(order, queue())


def draw_named(order: Order, names) -> dict:
    """name -> (figure, reads) for each of ``names``, drawn in this process (see _draw)."""
    return _draw(order, names)


def _draw(order: Order, names) -> dict:
    """name -> (figure, reads) for each figure named: figure is (SVG, chip), or None where the
    figure lacks inputs; with ``order.trace``, reads is what the figure read of the data, each
    with its digest (chalkboard/cache/figcache.py), else None."""
    out = {}
    for name in names:
        if name in order.extra:
            draw, argument = order.extra[name]
            out[name] = ((draw(argument), None), {})   # a function of its argument alone (in its key)
            continue
        if not order.trace:
            got = draw_all(order.data, order.hw, order.model, order.overrides, order.refs, {name})
            out[name] = (got.get(name), None)
            continue
        from ..cache.figcache import read_digest, traced

        log: set = set()
        got = draw_all(traced(order.data, log), order.hw, order.model, order.overrides, order.refs, {name})
        out[name] = (got.get(name), {read: read_digest(order.data, read) for read in sorted(log, key=repr)})
    return out
