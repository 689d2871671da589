import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import warm  # noqa: E402


@pytest.fixture(scope="session")
def data():
    from chalkboard.data import load
    return load(ROOT)


def run_cli(*args, root=ROOT):
    """Run ROOT/build.py as a user would, from that folder; returns the CompletedProcess
    (tests/warm.py: a forked child of a process that has imported the libraries once)."""
    return warm.run(root / "build.py", args, cwd=root, timeout=300)


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(scope="session")
def report_build(tmp_path_factory):
    """One `python build.py` as a user runs it (HTML, PDF, figures, results.json), shared by the
    tests that only read what it wrote: a test that writes beside it works on a copy.
    Returns (the output folder, the CompletedProcess)."""
    out = tmp_path_factory.mktemp("report") / "out"
    r = run_cli("--out", str(out))
    assert r.returncode == 0, r.stderr
    return out, r


def pdf_text(path) -> str:
    """The text of a PDF, page by page joined by newlines."""
    from pypdf import PdfReader
    return "\n".join(p.extract_text() or "" for p in PdfReader(str(path)).pages)


@pytest.fixture(scope="session")
def report_pdf_text(report_build):
    """The text of the shared build's PDFs, the report's then the reference's (pypdf reads them once):
    what the two documents say together."""
    return pdf_text(report_build[0] / "report.pdf") + "\n" + pdf_text(report_build[0] / "reference.pdf")


@pytest.fixture(scope="session")
def main_pdf_text(report_build):
    """The text of the shared build's report PDF alone."""
    return pdf_text(report_build[0] / "report.pdf")
