import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import warm  # noqa: E402


@pytest.fixture(scope="session")
def data():
    from chalkboard.data.loader import load
    return load(ROOT)


def run_cli(*args, root=ROOT):
    """Run ROOT/build.py as a user would, from that folder; returns the CompletedProcess
    (tests/warm.py: a forked child of a process that has imported the libraries once)."""
    return warm.run(root / "build.py", args, cwd=root, timeout=300)


@pytest.fixture
def cli():
    return run_cli


def shared(tmp_path_factory, name: str, make) -> Path:
    """A folder made once for the whole run, whatever the number of xdist workers: the first worker
    to ask makes it (``make(folder)``) under a lock in the run's own temporary folder (the one the
    workers' folders are in), and the others wait on that lock and reuse what it made. A failed
    ``make`` is recorded, so every worker fails with its message rather than repeating it."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent   # .../pytest-N/popen-gwK: the run's folder, the workers' alike
    folder, made, failed = base / name, base / f"{name}.made", base / f"{name}.failed"
    with open(base / f"{name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)   # held while it is made; released when the maker's file closes
        try:
            if not made.exists() and not failed.exists():
                try:
                    make(folder)
                except BaseException as e:
                    failed.write_text(f"{type(e).__name__}: {e}", encoding="utf-8")
                    raise
                made.touch()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    if failed.exists():
        pytest.fail(f"{name} could not be made (in another worker): {failed.read_text(encoding='utf-8')[-3000:]}")
    return folder


@pytest.fixture(scope="session")
def report_build(tmp_path_factory):
    """One `python build.py` as a user runs it (HTML, PDF, figures, results.json), made once for the
    whole run (``shared``: the first xdist worker builds, the others reuse it) and shared by the
    tests that only read what it wrote: a test that writes beside it works on a copy.
    Returns (the output folder, the CompletedProcess)."""
    def make(folder):
        folder.mkdir()
        r = run_cli("--out", str(folder / "out"))
        (folder / "run.json").write_text(json.dumps({"args": list(map(str, r.args)), "returncode": r.returncode,
                                                     "stdout": r.stdout, "stderr": r.stderr}), encoding="utf-8")
        assert r.returncode == 0, r.stderr

    folder = shared(tmp_path_factory, "report", make)
    run = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    return folder / "out", subprocess.CompletedProcess(**run)


def pdf_pages(path) -> list[str]:
    """The text of each page of a PDF, read by PDFium (pypdfium2: a twentieth of pypdf's time on the
    reference's 330 pages, which every run reads)."""
    import pypdfium2
    pdf = pypdfium2.PdfDocument(str(path))
    try:
        return [page.get_textpage().get_text_range() for page in pdf]
    finally:
        pdf.close()


def pdf_text(path) -> str:
    """The text of a PDF, page by page joined by newlines."""
    return "\n".join(pdf_pages(path))


def pdf_outline(path) -> list[str]:
    """The titles of a PDF's outline (its bookmarks), every level, in order."""
    import pypdfium2
    pdf = pypdfium2.PdfDocument(str(path))
    try:
        return [b.get_title() for b in pdf.get_toc()]
    finally:
        pdf.close()


@pytest.fixture(scope="session")
def _pdf_texts(report_build, tmp_path_factory):
    """The shared build's two PDFs' text, read once for the whole run."""
    def make(folder):
        folder.mkdir()
        for doc in ("report", "reference"):
            (folder / f"{doc}.txt").write_text(pdf_text(report_build[0] / f"{doc}.pdf"), encoding="utf-8")

    folder = shared(tmp_path_factory, "report-pdf-text", make)
    return {doc: (folder / f"{doc}.txt").read_text(encoding="utf-8") for doc in ("report", "reference")}


@pytest.fixture(scope="session")
def report_pdf_text(_pdf_texts):
    """The text of the shared build's PDFs, the report's then the reference's: what the two
    documents say together."""
    return _pdf_texts["report"] + "\n" + _pdf_texts["reference"]


@pytest.fixture(scope="session")
def main_pdf_text(_pdf_texts):
    """The text of the shared build's report PDF alone."""
    return _pdf_texts["report"]


@pytest.fixture(scope="session")
def whole_audit(data):
    """claims.yaml judged once a worker, for every test that only reads its verdicts (an audit is
    seconds of work; a test that filters it gets a new Audit, never changes this one)."""
    from chalkboard.audit import run_audit
    return run_audit(data, ROOT / "claims.yaml", "claims.yaml")
