"""results.json made in a forked process beside the build (chalkboard/build.py, BackgroundFile).

With many chip x model pairs the build writes results.json on the other core from the moment the
numbers exist. The bundled data has fewer pairs than that threshold, so these tests lower it in
the process that builds: the file must be byte for byte the one written in line, nothing may be
left beside the output folder, and a build that fails after the writer started must leave the
old output as it was and no file behind.
"""
import subprocess
import sys
import time

import yaml

from conftest import ROOT

BUILD_WITH_THRESHOLD = (
    "import sys, runpy; sys.path.insert(0, {root!r}); import chalkboard.build as b; "
    "b.RESULTS_BESIDE_FROM = {threshold}; {before}; sys.argv = ['build.py', *{argv!r}]; "
    "runpy.run_path({script!r}, run_name='__main__')")
# the report's rendering made to fail a few seconds in, when results.json is long written
FAIL_WHEN_RENDERING = (
    "import time, chalkboard.report as r\n"
    "def stop(*a, **k):\n"
    "    time.sleep(3)\n"
    "    raise b.BuildError('stopped on purpose while rendering')\n"
    "r.context = stop")


def build(threshold: int, *argv: str, before: str = "pass") -> subprocess.CompletedProcess:
    code = BUILD_WITH_THRESHOLD.format(root=str(ROOT), threshold=threshold, argv=list(argv),
                                       script=str(ROOT / "build.py"), before=f"exec({before!r})")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)


def leftovers(parent, name):
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(f".{name}.tmp-"))


def test_results_made_beside_equal_those_made_in_line(tmp_path):
    inline, beside = tmp_path / "inline", tmp_path / "beside"
    r1 = build(10**9, "build", "--force", "--no-pdf", "--out", str(inline))
    r2 = build(1, "build", "--force", "--no-pdf", "--out", str(beside))
    assert r1.returncode == 0 and r2.returncode == 0, r1.stderr[-2000:] + r2.stderr[-2000:]
    assert (beside / "results.json").read_bytes() == (inline / "results.json").read_bytes()
    assert leftovers(tmp_path, "beside") == [] and leftovers(tmp_path, "inline") == []
    # the stamp records the file's hash, so the next build finds the output up to date
    r3 = build(1, "build", "--no-pdf", "--out", str(beside))
    assert r3.returncode == 0 and "up to date" in r3.stderr, r3.stderr[-2000:]


def test_a_build_failing_after_the_writer_started_leaves_nothing(tmp_path):
    out = tmp_path / "out"
    r = build(1, "build", "--force", "--no-pdf", "--out", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    before = (out / "results.json").read_bytes()
    # a claim quoting words its cited line does not have: found by the audit, after the numbers
    doc = yaml.safe_load((ROOT / "claims.yaml").read_text())
    doc["claims"][1]["quote"] = "words the lecture never said"
    bad = tmp_path / "claims.yaml"
    bad.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False))
    r = build(1, "build", "--force", "--no-pdf", "--out", str(out), "--claims-file", str(bad))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert "quote: not found in the cited seed text" in r.stderr
    assert (out / "results.json").read_bytes() == before
    # the writer was stopped, not left running: nothing appears beside the output later either
    time.sleep(3)
    assert leftovers(tmp_path, "out") == []


def test_a_build_failing_after_the_file_was_written_leaves_nothing(tmp_path):
    out = tmp_path / "out"
    r = build(1, "build", "--force", "--no-pdf", "--out", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    before = (out / "results.json").read_bytes()
    r = build(1, "build", "--force", "--no-pdf", "--out", str(out), "--set", "context=4096",
              before=FAIL_WHEN_RENDERING)
    assert r.returncode != 0 and "stopped on purpose while rendering" in r.stderr, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    assert (out / "results.json").read_bytes() == before
    assert leftovers(tmp_path, "out") == []
