"""results.json is written as it is made, while the PDF compiles on the other core
(chalkboard/build.py: ``results_json_parts`` into ``Staging.write``, chalkboard/runtime/staging.py): 300 MB at 6,400 pairs are
never held whole. The file must be the text ``results_json`` gives, its recorded hash must let
the next build find the output up to date, and a build that fails after writing it (the PDF
failing) must leave the previous output as it was and nothing beside it."""
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, run_cli

# the PDF made to fail once results.json has been written beside it
FAIL_IN_PDF = (
    "import sys, runpy; sys.path.insert(0, {root!r}); import chalkboard.build as b, chalkboard.report.pdf as pdf\n"
    "def fail(*a, **k):\n"
    "    raise b.BuildError('stopped on purpose while compiling the PDF')\n"
    "pdf.compile_pdf = fail\n"
    "b.pdfcache.get = lambda *a: None\n"   # a PDF kept from an earlier build would skip the compile
    "sys.argv = ['build.py', *{argv!r}]\n"
    "runpy.run_path({script!r}, run_name='__main__')")


def leftovers(parent, name):
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(f".{name}.tmp-"))


@pytest.mark.slow   # a build of its own; test_report.py::test_results_json_is_written_as_json_dumps_would_write_each_entry reads the shared build's
def test_results_written_in_parts_are_the_results_text_and_its_hash_is_recorded(tmp_path, data):
    from chalkboard.report.results_json import results_json
    from chalkboard.evaluation.results import evaluate_all
    from derivations import REGISTRY

    out = tmp_path / "out"
    r = run_cli("build", "--force", "--no-pdf", "--out", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    assert (out / "results.json").read_text() == results_json(data, evaluate_all(data), REGISTRY)
    again = run_cli("build", "--no-pdf", "--out", str(out))
    assert again.returncode == 0 and "up to date" in again.stderr, again.stderr[-2000:]


@pytest.mark.slow   # a whole build up to its PDF; test_report.py::test_failed_build_leaves_previous_report_untouched covers a failed build in the default run
def test_a_build_failing_after_results_were_written_leaves_the_old_output(report_build, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(report_build[0], out)   # the previous output: a whole build's, stamp and PDFs included
    assert (out / "results.json").exists() and (out / "report.pdf").exists()
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    code = FAIL_IN_PDF.format(root=str(ROOT), argv=["build", "--force", "--out", str(out), "--set", "context=4096"],
                              script=str(ROOT / "build.py"))
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "stopped on purpose while compiling the PDF" in r.stderr, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert leftovers(tmp_path, "out") == []

