"""`build.py watch` as a user runs it: a copy of the project watched while its data is edited.

A saved edit gives a new page, results.json and PDF; a bad edit prints the usual one line and
leaves the last good output as it was; the next good edit builds again; Ctrl-C ends it with one
line and status 130. With --serve the page is served with a script that reloads it after a
rebuild, and the file written has no such script."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT
from chalkboard.data.featured import FEATURED_HARDWARE, FEATURED_MODEL
from chalkboard.watch.inputs import Snapshot
from chalkboard.watch.serve import RELOAD_SCRIPT, VERSION_PATH, with_reload


# how long any one step may take: far past an idle machine's seconds, so that a loaded machine
# (tests beside other work: bench/under_load.py) never fails a test that waits on a condition
DEADLINE = 600


def _wait(what, predicate, proc, timeout=DEADLINE):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = predicate()
        if got:
            return got
        assert proc.poll() is None, f"watch ended (status {proc.returncode}) while waiting for {what}"
        time.sleep(0.05)
    raise AssertionError(f"no {what} within {timeout} s")


def _stop(proc):
    """Ctrl-C, as a terminal sends it; the status."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGINT)
    try:
        return proc.wait(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise


def _leftovers(proj):
    """What the loop makes while it runs and must remove when it ends: staging folders and
    temporary files beside the output, the Typst process's folder among the caches."""
    return [*proj.glob(".build.tmp-*"), *proj.glob(".cache/watch/typst-*")]


_BANDWIDTH = re.compile(rf"(\n  {re.escape(FEATURED_HARDWARE)}:\n(?:    .*\n)*?    hbm_bandwidth: {{value: \")([^\"]*)\"")


def _set_bandwidth(path, text):
    """The featured chip's HBM bandwidth in hardware.yaml set to ``text``; the text it had."""
    src = path.read_text()
    old = _BANDWIDTH.search(src).group(2)
    path.write_text(_BANDWIDTH.sub(lambda m: m.group(1) + text + '"', src, count=1))
    return old


def _full_hbm_step_time(out):
    d = json.loads((out / "results.json").read_text())
    return d["results"][f"{FEATURED_HARDWARE}|{FEATURED_MODEL}"]["values"]["full_hbm_step_time"]["value"]


def test_watch_rebuilds_on_edit_keeps_last_good_output_and_serves(tmp_path):
    proj = tmp_path / "proj"
    shutil.copytree(ROOT, proj, ignore=shutil.ignore_patterns(".git", "build", "__pycache__", ".pytest_cache"))
    out = proj / "build"
    stdout, stderr = tmp_path / "stdout", tmp_path / "stderr"
    with open(stdout, "w") as so, open(stderr, "w") as se:
        proc = subprocess.Popen([sys.executable, "build.py", "watch", "--serve", "--port", "0"], cwd=proj,
                                stdout=so, stderr=se, stdin=subprocess.DEVNULL)
    try:
        first = _wait("first build", lambda: len(stdout.read_text().splitlines()) >= 2
                      and (out / "report.pdf").is_file() and (out / ".chalkboard-stamp").is_file(), proc)
        assert first
        assert not list(proj.glob(".build.tmp-*")), "a staging folder left in the project while it runs"
        assert list(proj.glob(".cache/watch/typst-*")), "Typst's folder is among the caches"
        url = re.search(r"at (http://127\.0\.0\.1:\d+)/report\.html", stdout.read_text()).group(1)
        version = urllib.request.urlopen(url + VERSION_PATH).read()
        served = urllib.request.urlopen(url + "/report.html").read()
        written = (out / "report.html").read_bytes()
        assert RELOAD_SCRIPT.encode() in served and b"__chalkboard__" not in written   # only in served pages
        assert served == with_reload(written)
        before, pdf_before = _full_hbm_step_time(out), (out / "report.pdf").read_bytes()
        stamp_before = (out / ".chalkboard-stamp").read_text()
        start_lines = len(stdout.read_text().splitlines())

        # an edit: the featured chip's HBM bandwidth to 6.5 TB/s (from 8 TB/s as this is written)
        was = _set_bandwidth(proj / "hardware.yaml", "6.5 TB/s")
        assert was.endswith(" TB/s")
        was = float(was.split()[0])
        _wait("new results.json", lambda: _full_hbm_step_time(out) != before, proc)
        # reading all of HBM at 6.5 TB/s takes was/6.5 times as long as at the bandwidth it had
        assert _full_hbm_step_time(out) == pytest.approx(before * was / 6.5, rel=1e-9)
        d = json.loads((out / "results.json").read_text())
        assert d["hardware"][FEATURED_HARDWARE]["hbm_bandwidth"]["text"] == "6.5 TB/s"
        _wait("the new PDF", lambda: re.search(r"\n.*(, PDF \d|PDF written)", "\n" + "\n".join(
            stdout.read_text().splitlines(keepends=True)[start_lines:])), proc)
        assert (out / "report.pdf").read_bytes() != pdf_before
        assert (out / ".chalkboard-stamp").read_text() != stamp_before   # stamped once the PDF was in
        assert urllib.request.urlopen(url + VERSION_PATH).read() != version   # the open page reloads
        good = {n: (out / n).read_bytes() for n in ("report.html", "results.json", "report.pdf")}
        lines_before = len(stdout.read_text().splitlines())

        # a bad edit: a bandwidth without its per-second; one line, the output left as it was
        _set_bandwidth(proj / "hardware.yaml", "6.5 TB")
        err = _wait("the error line", lambda: stderr.read_text().count("\n") >= 1 and stderr.read_text(), proc)
        assert err.startswith(f"error: hardware.yaml: {FEATURED_HARDWARE}: hbm_bandwidth:"), err
        assert "Traceback" not in err
        assert {n: (out / n).read_bytes() for n in good} == good
        assert proc.poll() is None   # still watching

        # the next good edit builds again: the bandwidth as it was (its figures kept from the first build)
        _set_bandwidth(proj / "hardware.yaml", f"{was:g} TB/s")
        _wait("results.json after the fix", lambda: _full_hbm_step_time(out) == pytest.approx(before, rel=1e-9), proc)
        _wait("its line", lambda: len(stdout.read_text().splitlines()) > lines_before, proc)
        assert "hardware.yaml changed: page and results.json in" in stdout.read_text().splitlines()[-1]
        # the loop works one edit at a time: all the bad edit said was said before this build, in one line
        assert stderr.read_text() == err and err.count("\n") == 1, stderr.read_text()
    finally:
        status = _stop(proc)
    assert status == 130
    err = stderr.read_text()
    assert err.endswith("chalkboard watch: stopped\n") and "Traceback" not in err, err
    assert not _leftovers(proj), _leftovers(proj)


@pytest.mark.slow   # two cold starts of the worker (about 20 s on a busy 2-core machine); CI runs it
def test_an_edit_to_the_program_starts_a_fresh_worker(tmp_path):
    """No stale code after an edit to the program: a new worker, a new interpreter, runs the edited
    module (which here says so by writing its process id) and builds again."""
    proj = tmp_path / "proj"
    shutil.copytree(ROOT, proj, ignore=shutil.ignore_patterns(".git", "build", "__pycache__", ".pytest_cache"))
    stdout, stderr, mark = tmp_path / "stdout", tmp_path / "stderr", tmp_path / "loaded-by"
    with open(stdout, "w") as so, open(stderr, "w") as se:
        proc = subprocess.Popen([sys.executable, "build.py", "watch", "--no-pdf"], cwd=proj,
                                stdout=so, stderr=se, stdin=subprocess.DEVNULL)
    try:
        _wait("first build", lambda: "first build:" in stdout.read_text(), proc)
        featured = proj / "chalkboard" / "data" / "featured.py"
        featured.write_text(featured.read_text() + f"\nimport os\nopen({str(mark)!r}, 'w').write(str(os.getpid()))\n")
        _wait("a fresh worker's build", lambda: stdout.read_text().count("first build:") == 2, proc)
        lines = stdout.read_text().splitlines()
        assert "chalkboard/data/featured.py changed: starting again with the new program" in lines[-2]
        assert lines[-1].split(" ", 1)[1].startswith("first build: ")
        worker = int(mark.read_text())
        assert worker not in (proc.pid, os.getpid())
    finally:
        status = _stop(proc)
    assert status == 130 and "Traceback" not in stderr.read_text()
    assert not _leftovers(proj), _leftovers(proj)


def test_watch_options_no_edit_can_mend_end_it(tmp_path, cli):
    (tmp_path / "a-file").write_text("")
    r = cli("watch", "--out", str(tmp_path / "a-file"))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [f"error: --out {tmp_path / 'a-file'}: exists and is not a folder"]


def test_snapshot_sees_edits_new_and_removed_files(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "a.yaml").write_text("x: 1\n")
    (tmp_path / "d" / "t.j2").write_text("{{ x }}")
    snap = Snapshot(tmp_path, ["a.yaml", "d", "absent.yaml"])
    assert snap.changed() == []
    (tmp_path / "a.yaml").write_text("x: 22\n")            # a new size
    (tmp_path / "d" / "u.j2").write_text("new")
    (tmp_path / "d" / "__pycache__").mkdir()
    (tmp_path / "d" / "__pycache__" / "m.pyc").write_text("")   # not an input
    assert snap.changed() == ["a.yaml", "d/u.j2"]
    os.utime(tmp_path / "d" / "t.j2", ns=(1, 1))           # same size, another time
    (tmp_path / "d" / "u.j2").unlink()
    (tmp_path / "absent.yaml").write_text("")
    assert snap.changed() == ["absent.yaml", "d/t.j2", "d/u.j2"]
    assert snap.changed() == []


def test_reload_script_goes_before_the_end_of_the_body():
    page = b"<html><body><p>x</p></body></html>"
    got = with_reload(page)
    assert got.startswith(b"<html><body><p>x</p><script>") and got.endswith(b"</script>\n</body></html>")
    assert with_reload(b"<p>no body</p>").endswith(b"</script>\n")


def _next_result(typst_process, timeout=DEADLINE):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = typst_process.result()
        if got is not None:
            return got
        time.sleep(0.01)
    raise AssertionError("no PDF from Typst's process")


def test_the_warm_typst_makes_a_fresh_compiles_pdf_and_survives_its_process(tmp_path):
    """The kept compiler's PDF of an edited source is byte for byte what a fresh compile makes;
    an order sent while one compiles waits, only the newest is kept; a dead process is forked again.
    In a process of its own: Typst's process is forked, and a test run before in this one may have
    called Typst (a process forked after that could not run it; the watch's worker never calls it)."""
    here = Path(__file__).resolve()
    code = (f"import sys; sys.path[:0] = [{str(ROOT)!r}, {str(here.parents[1])!r}, {str(here.parent)!r}]; "
            f"import test_watch; test_watch.typst_process_checks(__import__('pathlib').Path({str(tmp_path)!r}))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=DEADLINE)
    assert r.returncode == 0, r.stdout + r.stderr


def typst_process_checks(tmp_path):
    import typst

    from chalkboard.watch.typst_process import TypstProcess

    figure = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="{}" height="10"/></svg>'
    source = '= Part {}\n#image("figures/a.svg")\n'
    process = TypstProcess()
    try:
        process.compile(1, source.format(1), {"a": figure.format(10)}, 0, "k1")
        process.compile(2, source.format(2), {"a": figure.format(5)}, 0, "k2")   # waits for the first
        process.compile(3, source.format(3), {"a": figure.format(3)}, 0, "k3")   # and replaces the second
        got = [_next_result(process), _next_result(process)]
        assert [g[:2] for g in got] == [(1, "k1"), (3, "k3")] and process.result() is None
        process.child.kill()
        process.child.join()
        process.compile(4, source.format(4), {"a": figure.format(3)}, 0, "k4")
        generation, _, _, (_, pdf) = _next_result(process)
        assert generation == 4 and pdf.startswith(b"%PDF")
    finally:
        process.stop()
    assert not process.folder.exists()
    # (only now does this process call Typst: a process forked after that could not run it)
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "a.svg").write_text(figure.format(3))
    fitted, pdf = got[1][3]
    assert fitted == source.format(3)
    assert pdf == typst.compile(source.format(3).encode(), root=str(tmp_path), timestamp=0)


def test_a_port_in_use_is_one_line(tmp_path, cli):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = cli("watch", "--serve", "--port", str(port), "--out", str(tmp_path / "out"))
    assert r.returncode == 2
    assert r.stderr.splitlines() == [f"error: --port {port}: Address already in use; choose another with --port"]
