"""Jobs in forked processes (chalkboard/cache/forked.py) that start jobs of their own: the figures are
drawn by one process that imports matplotlib and then forks the second
(chalkboard/report/figure_process.py), so the second does not import it again."""
from __future__ import annotations

import os

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
