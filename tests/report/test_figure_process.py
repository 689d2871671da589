"""The figure processes (chalkboard/report/figure_process.py): forked once the build knows what the
figures read, two processes drawing from one queue."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from chalkboard import FEATURED_HARDWARE as HW, FEATURED_MODEL as MODEL
from chalkboard.cache.forked import Forked, can_fork
from chalkboard.data import load
from chalkboard.report.figure_process import CHIPS_PER_FIGURE, Drawing, Order, _figure_processes, order_of_work
from chalkboard.report.figures import FIGURES, PER_CHIP

ROOT = Path(__file__).resolve().parents[2]


def _slow_figure(n):
    time.sleep(0.05)   # long enough that the second process takes part
    return f"<svg>{n} drawn by {os.getpid()}</svg>"


@pytest.mark.skipif(not can_fork(), reason="no fork here: the figures are drawn in the build's process")
def test_two_processes_share_the_queue_each_figure_drawn_once():
    extra = {f"extra-{n}": (_slow_figure, n) for n in range(16)}
    got = Forked("drawing", _figure_processes, Order(None, HW, MODEL, {}, {}, extra, list(extra), False)).result()
    assert sorted(got) == sorted(extra)
    drew = {}
    for name, ((svg, chip), reads) in got.items():
        number, pid = svg.removeprefix("<svg>").removesuffix("</svg>").split(" drawn by ")
        assert number == name.split("-")[1] and chip is None and reads == {}
        drew.setdefault(pid, []).append(name)
    assert len(drew) == 2 and str(os.getpid()) not in drew   # both figure processes, not the build


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
    again = Drawing(data, HW, MODEL, kept=FigureCache(tmp_path, code="this program"))
    assert again.drawn == [] and again.job is None and again.finished()
    assert again.wait() == first
