"""The figure processes (chalkboard/report/figure_process.py): the first forked on standby as the
command starts and told what to draw once the build knows what the figures read (or forked then),
two processes drawing from one queue."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from chalkboard import FEATURED_HARDWARE as HW, FEATURED_MODEL as MODEL
from chalkboard.cache.forked import Forked, can_fork
from chalkboard.data.loader import load
from chalkboard.report.figure_process import (CHIPS_PER_FIGURE, Drawing, Order, _figure_processes, order_of_work,
                                              standby)
from chalkboard.report.figures import FIGURES, PER_CHIP

ROOT = Path(__file__).resolve().parents[2]


def _slow_figure(n):
    time.sleep(0.05)
    return f"<svg>{n} drawn by {os.getpid()}</svg>"


def _figure_drawn_by_two(argument):
    """A figure whose process, at its first figure, waits until another process has started one
    too (a minute at most): whichever figure process starts first cannot draw the whole queue
    before the second has started, however busy the machine. A process noted in ``folder``."""
    n, folder = argument
    me = Path(folder) / str(os.getpid())
    if not me.exists():
        me.touch()
        deadline = time.monotonic() + 60
        while len(list(Path(folder).iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    return f"<svg>{n} drawn by {os.getpid()}</svg>"


@pytest.mark.skipif(not can_fork(), reason="no fork here: the figures are drawn in the build's process")
def test_two_processes_share_the_queue_each_figure_drawn_once(tmp_path):
    extra = {f"extra-{n}": (_figure_drawn_by_two, (n, str(tmp_path))) for n in range(16)}
    got = Forked("drawing", _figure_processes, Order(None, HW, MODEL, {}, {}, extra, list(extra), False)).result()
    assert sorted(got) == sorted(extra)
    drew = {}
    for name, ((svg, chip), reads) in got.items():
        number, pid = svg.removeprefix("<svg>").removesuffix("</svg>").split(" drawn by ")
        assert number == name.split("-")[1] and chip is None and reads == {}
        drew.setdefault(pid, []).append(name)
    assert len(drew) == 2 and str(os.getpid()) not in drew   # both figure processes, not the build


@pytest.mark.skipif(not can_fork(), reason="no fork here: the figures are drawn in the build's process")
def test_the_process_on_standby_draws_what_it_is_sent_and_shares_it_with_a_second(tmp_path):
    process = standby()
    extra = {f"extra-{n}": (_figure_drawn_by_two, (n, str(tmp_path))) for n in range(16)}
    process.order(Order(None, HW, MODEL, {}, {}, extra, list(extra), False))
    got = process.result()
    assert sorted(got) == sorted(extra)
    pids = {svg.removesuffix("</svg>").split(" drawn by ")[1] for ((svg, _), _) in got.values()}
    assert len(pids) == 2 and str(os.getpid()) not in pids   # both figure processes, not the build


@pytest.mark.skipif(not can_fork(), reason="no fork here: the figures are drawn in the build's process")
def test_a_drawing_sends_its_figures_to_the_process_on_standby_or_stops_it(monkeypatch):
    from chalkboard.report import figure_process

    monkeypatch.setattr(figure_process, "FIGURES", {})   # only the figures given below
    data = load(ROOT)
    process = standby()
    child = process.child
    idle = Drawing(data, HW, MODEL, process=process)
    assert idle.drawn == [] and idle.job is None and process.child is None
    child.join(timeout=10)
    assert not child.is_alive()
    process = standby()
    busy = Drawing(data, HW, MODEL, extra={"one": (_slow_figure, 1)}, process=process)
    assert busy.job is process
    svg, chip = busy.wait()["one"]
    assert svg.startswith("<svg>1 drawn by ") and svg != f"<svg>1 drawn by {os.getpid()}</svg>" and chip is None
    # an order that cannot be sent (pickled): the process on standby is stopped, one is forked as before
    process = standby()
    unsent = Drawing(data, HW, MODEL, extra={"two": (lambda n: f"<svg>{n} unpicklable</svg>", 2)}, process=process)
    assert process.child is None and unsent.job is not None and unsent.job is not process
    assert unsent.wait()["two"] == ("<svg>2 unpicklable</svg>", None)


def test_the_figures_of_every_chip_are_drawn_first_when_there_are_many_chips():
    names = list(FIGURES)
    assert order_of_work(names, chips=4 * CHIPS_PER_FIGURE)[:len(PER_CHIP)] == [n for n in names if n in PER_CHIP]
    assert order_of_work(names, chips=CHIPS_PER_FIGURE) == names   # each costs one figure: as declared


@pytest.mark.slow   # draws every figure once
def test_nothing_to_draw_forks_nothing(tmp_path):
    from chalkboard.cache.figcache import FigureCache

    data = load(ROOT)
    kept = FigureCache(tmp_path, code="this program")
    first = Drawing(data, HW, MODEL, kept=kept).wait()   # every figure drawn and kept
    kept.save()
    process = standby()
    again = Drawing(data, HW, MODEL, kept=FigureCache(tmp_path, code="this program"), process=process)
    assert again.drawn == [] and again.job is None and again.finished()
    assert process is None or process.child is None   # the process on standby was stopped
    assert again.wait() == first
