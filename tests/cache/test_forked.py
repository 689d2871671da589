"""Jobs in forked processes (chalkboard/cache/forked.py) that start jobs of their own: the figures are
drawn by one process that imports matplotlib and then forks the second
(chalkboard/report/figure_process.py), so the second does not import it again; and jobs started
before they are told what to do (orders: the figure process on standby)."""
from __future__ import annotations

import os
import sys

import pytest

from chalkboard.errors import BuildError
from chalkboard.cache.forked import Forked, can_fork, results

pytestmark = pytest.mark.skipif(not can_fork(), reason="no fork here: every job runs in the build's own process")


def _inner(tag):
    return (tag, os.getpid())


def _outer():
    inner = Forked("the inner job", _inner, "inner")
    mine = _inner("outer")
    return [mine, *results([inner])]


def test_a_job_can_start_a_job_of_its_own():
    (outer_tag, outer_pid), (inner_tag, inner_pid) = Forked("the outer job", _outer).result()
    assert (outer_tag, inner_tag) == ("outer", "inner")
    assert len({os.getpid(), outer_pid, inner_pid}) == 3   # each ran in a process of its own


def _kept_in_inner(key):
    from derivations import REGISTRY

    return results([Forked("the inner job", lambda: REGISTRY.kept(key, lambda: 7))])[0]


def test_sympy_work_of_an_inner_job_reaches_the_build():
    from derivations import REGISTRY

    key = ("test", "work done two forks down")
    REGISTRY.fresh.pop(key, None)
    try:
        assert Forked("the outer job", _kept_in_inner, key).result() == 7
        assert REGISTRY.fresh[key] == 7
    finally:
        REGISTRY.fresh.pop(key, None)


def _fails():
    raise BuildError("the inner job's own message")


def _outer_of_failing():
    return results([Forked("the inner job", _fails)])


def test_an_inner_jobs_error_comes_back_as_its_one_line():
    with pytest.raises(BuildError, match="^the inner job's own message$"):
        Forked("the outer job", _outer_of_failing).result()


def _unpicklable():
    return lambda: "a function made here cannot be sent back"


def test_a_result_that_cannot_be_sent_back_is_an_error_naming_the_job():
    with pytest.raises(BuildError, match="^the job failed: .*pickle"):
        Forked("the job", _unpicklable).result()


def _told(inbox, suffix):
    try:
        return inbox.recv() + suffix
    except EOFError:
        return "stopped before any order"


def test_a_job_started_before_its_orders_does_what_it_is_told():
    job = Forked("the job", _told, " at once", orders=True)
    assert job.order("told later") is True
    assert job.result() == "told later at once"


@pytest.mark.skipif(sys.platform != "linux", reason="only Linux lets a pipe be enlarged (F_SETPIPE_SZ)")
def test_an_order_larger_than_a_default_pipe_is_sent_without_waiting_for_the_child(tmp_path):
    # the child reads only once the send has returned (a file made after it): a send that waited
    # for the child to read would never return; it is given a minute, however busy the machine
    import threading
    import time

    sent = tmp_path / "sent"

    def reader_after_the_send(inbox):
        deadline = time.monotonic() + 120
        while not sent.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return len(inbox.recv())
    job = Forked("the job", reader_after_the_send, orders=True)
    answers = []
    # about five times what a pipe holds by default (64 kB)
    sending = threading.Thread(target=lambda: answers.append(job.order("x" * 300_000)))
    sending.start()
    sending.join(timeout=60)
    returned = not sending.is_alive()
    sent.touch()   # the child reads now (and a send still blocked ends)
    sending.join()
    assert returned, "the send waited for the child to read"
    assert answers == [True] and job.result() == 300_000


def test_an_order_that_cannot_be_sent_says_so_and_the_job_ends_without_one():
    job = Forked("the job", _told, "", orders=True)
    assert job.order(lambda: "a lambda cannot be pickled") is False
    assert job.result() == "stopped before any order"
    gone = Forked("the job", _told, "", orders=True)
    gone.stop()
    assert gone.order("too late") is False


def test_a_job_stopped_before_its_orders_ends_without_waiting_for_them():
    job = Forked("the job", _told, "", orders=True)
    child = job.child
    job.stop()
    child.join(timeout=10)
    assert not child.is_alive()


def test_a_job_forked_later_does_not_hold_an_earlier_jobs_orders_open():
    # the later job inherits the build's end of the first job's orders; it must close it, or the
    # first would wait for ever once the build stops it without an order
    first = Forked("the first job", _told, "", orders=True)
    later = Forked("the later job", _told, "", orders=True)
    first._close_orders()   # the build gives up on the first job without stopping the later one
    first.child.join(timeout=10)
    assert not first.child.is_alive()
    assert first.result() == "stopped before any order"
    later.order("done")
    assert later.result() == "done"


_CARRIED_TABLE: dict = {}


def _adds_to_table(key):
    _CARRIED_TABLE[key] = "measured two forks down"
    return "done"


def test_entries_a_job_adds_to_a_carried_table_reach_the_parent():
    """A process's own cache (the text sizes the figure processes measure) comes back from
    the job, even from a job the job started; what the parent had stays as it was."""
    from chalkboard.cache.forked import carry

    carry("test table", _CARRIED_TABLE)
    _CARRIED_TABLE.clear()
    _CARRIED_TABLE["kept"] = "the parent's"
    try:
        got = Forked("the outer job", lambda: results([Forked("the inner job", _adds_to_table, "new")])).result()
        assert got == ["done"]
        assert _CARRIED_TABLE == {"kept": "the parent's", "new": "measured two forks down"}
    finally:
        _CARRIED_TABLE.clear()


def test_a_sympy_result_comes_back_as_the_job_built_it():
    """A form SymPy keeps unevaluated (factor_terms' 3*(L*a/2 + 2*N)) comes back as it was made, not
    evaluated again into 3*L*a/2 + 6*N: the report prints a formula the same whether the figures'
    or the audit's process or the build's own computed it, and .cache/ keeps what was computed."""
    import sympy as sp

    L, a, N = sp.symbols("L a N")
    made = sp.factor_terms(sp.cancel(3 * L * a / 2 + 6 * N))
    assert made.args == (3, L * a / 2 + 2 * N)   # unevaluated: a Mul of 3 and a sum
    got = Forked("the job", lambda: sp.factor_terms(sp.cancel(3 * L * a / 2 + 6 * N))).result()
    assert sp.srepr(got) == sp.srepr(made)
