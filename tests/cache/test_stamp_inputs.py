"""The up-to-date stamp hashes every file a build reads: a build is traced (Python's audit hook on
`open`, inherited by its forked processes) and each file it opened inside the project must be one
the fingerprint hashes, and editing it must change the fingerprint. (lecture/chapters-3-7.md was
read by the claims loader but not hashed: with a quoted sentence removed, `build` said "up to
date" while `--force` failed.)"""
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from chalkboard.cache import uptodate  # noqa: E402

DRIVER = """
import os, runpy, sys
log = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes)):
        os.write(log, os.path.abspath(os.fsdecode(args[0])).encode("utf-8", "surrogateescape") + b"\\n")
sys.addaudithook(hook)
sys.argv = ["build.py", "build", "--force", "--out", sys.argv[2]]
runpy.run_path("build.py", run_name="__main__")
"""

DEFAULTS = SimpleNamespace(hardware_file="hardware.yaml", models_file="models.yaml", prices_file="prices.yaml",
                           claims_file="claims.yaml", measurements_file="measurements.yaml", model_config=None)


@pytest.fixture(scope="module")
def read_by_a_build(tmp_path_factory):
    """The project's files a forced build opens (not its output, its caches or bytecode)."""
    tmp = tmp_path_factory.mktemp("traced")
    log, out = tmp / "opened.txt", tmp / "out"
    r = subprocess.run([sys.executable, "-c", DRIVER, str(log), str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    opened = set()
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        p = Path(line)
        if not p.is_relative_to(ROOT) or not p.is_file():
            continue
        rel = p.relative_to(ROOT)
        if rel.parts[0] in (".cache", ".git", ".pytest_cache", "build") or "__pycache__" in rel.parts:
            continue
        opened.add(rel)
    return opened


def test_every_file_a_build_reads_is_hashed(read_by_a_build):
    hashed = {f.relative_to(ROOT) for f in uptodate.hashed_files(ROOT, DEFAULTS)}
    assert Path("lecture/chapters-3-7.md") in read_by_a_build   # the trace sees what the claims quote
    assert Path("hardware.yaml") in read_by_a_build
    missing = sorted(str(p) for p in read_by_a_build - hashed)
    assert not missing, f"read by the build but not in the stamp's fingerprint: {missing}"


def test_editing_any_file_a_build_reads_changes_the_fingerprint(read_by_a_build, tmp_path):
    proj = tmp_path / "proj"
    shutil.copytree(ROOT, proj, ignore=shutil.ignore_patterns(".git", "build", ".cache", "__pycache__",
                                                              ".pytest_cache"))
    before = uptodate.fingerprint(proj, SimpleNamespace(**vars(DEFAULTS), hardware="h", model="m", set=[],
                                                        no_pdf=False))
    for rel in sorted(read_by_a_build):
        f = proj / rel
        original = f.read_bytes()
        f.write_bytes(original + b"\n")
        try:
            after = uptodate.fingerprint(proj, SimpleNamespace(**vars(DEFAULTS), hardware="h", model="m", set=[],
                                                               no_pdf=False))
        finally:
            f.write_bytes(original)
        assert after != before, f"{rel} edited, yet the build would be called up to date"


def test_the_library_versions_in_the_stamp_are_what_importlib_metadata_reads():
    # uptodate.library_versions reads each 'Version:' line itself (faster than metadata.version's
    # parse of the whole file); it must give the same answer for every library the stamp names
    from importlib import metadata

    from chalkboard.cache.uptodate import LIBRARIES, library_versions

    def official(lib):
        try:
            return metadata.version(lib)
        except metadata.PackageNotFoundError:
            return None
    assert dict(library_versions()) == {lib: official(lib) for lib in LIBRARIES}
    assert all(dict(library_versions())[lib] for lib in ("sympy", "pint", "matplotlib", "typst"))
