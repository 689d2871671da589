"""`build.py watch` writes the numbers first: after a saved edit, report.html and results.json
carry the new numbers while the figures are still being drawn (each shown in its last version,
marked as updating), then the figures land, then the PDF (chalkboard/build.py numbers_first)."""
import re
import shutil
import subprocess
import sys
import time

import pytest

from conftest import ROOT
from test_watch import _full_hbm_step_time, _set_bandwidth, _stop, _wait

MARK = "Being redrawn for the edit"


def _figure_block(page: str, name: str) -> str:
    return re.search(rf'<figure id="fig-{name}">.*?</figure>', page, re.S).group(0)


@pytest.mark.slow   # a watch started and a rebuild drawn (some 20-40 s on a busy 2-core machine)
def test_an_edit_writes_the_new_number_before_the_figures_are_redrawn(tmp_path):
    proj = tmp_path / "proj"
    shutil.copytree(ROOT, proj, ignore=shutil.ignore_patterns(".git", "build", "__pycache__", ".pytest_cache"))
    out, stdout = tmp_path / "watched", tmp_path / "stdout"
    with open(stdout, "w") as so:
        proc = subprocess.Popen([sys.executable, "build.py", "watch", "--no-pdf", "--out", str(out)], cwd=proj,
                                stdout=so, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def lines():
        return [line for line in stdout.read_text().splitlines() if "page and results.json in" in line]
    try:
        _wait("the first build", lambda: len(lines()) == 1, proc)
        page = (out / "report.html").read_text()
        old_figure = (out / "figures" / "step_time_vs_batch.svg").read_bytes()
        before = _full_hbm_step_time(out)
        assert MARK not in page
        # the explorer's inputs give each chip's HBM bandwidth in byte/s: 8 TB/s before the edit
        new = '"hbm_bandwidth": 6250000000000.0'
        assert new not in page
        was = float(_set_bandwidth(proj / "hardware.yaml", "6.25 TB/s").split()[0])
        end = time.monotonic() + 600
        while new not in (page := (out / "report.html").read_text()):   # the first page with it
            assert proc.poll() is None and time.monotonic() < end, "no page with the new bandwidth"
            time.sleep(0.005)
        # its figures still being drawn: the step-time figure shown as it was, and said to be
        assert MARK in _figure_block(page, "step_time_vs_batch"), "the figures were drawn before the numbers"
        assert _full_hbm_step_time(out) == pytest.approx(before * was / 6.25, rel=1e-9)
        # then the figures land: drawn for the new bandwidth, the mark gone
        _wait("the rebuild's line", lambda: len(lines()) == 2, proc)
        assert re.search(r"hardware\.yaml changed: page and results\.json in [\d.]+ s, figures [\d.]+ s "
                         r"\(\d+ of \d+ figures drawn\)", lines()[-1]), lines()[-1]
        page = (out / "report.html").read_text()
        assert new in page and MARK not in page
        assert (out / "figures" / "step_time_vs_batch.svg").read_bytes() != old_figure
    finally:
        status = _stop(proc)
    assert status == 130
    assert not list(proj.glob(".build.tmp-*")), "a staging folder left behind"
