"""The PDF kept between builds (chalkboard/cache/pdfcache.py): taken only when the Typst source, every
figure, the date, the fonts and Typst's version are what it was made from."""
import pytest

from chalkboard.cache import pdfcache

SRC, FIGS, WHEN = "= Title\nSome text.\n", {"a": "<svg>1</svg>", "b": "<svg>2</svg>"}, 1_700_000_000


def test_the_key_changes_with_everything_the_pdf_is_made_from():
    k = pdfcache.key(SRC, FIGS, WHEN)
    assert pdfcache.key(SRC, dict(reversed(list(FIGS.items()))), WHEN) == k   # the order figures come in: no
    assert pdfcache.key(SRC + " ", FIGS, WHEN) != k
    assert pdfcache.key(SRC, {**FIGS, "b": "<svg>3</svg>"}, WHEN) != k
    assert pdfcache.key(SRC, {**FIGS, "c": "<svg>2</svg>"}, WHEN) != k
    assert pdfcache.key(SRC, {"a": FIGS["a"], "c": FIGS["b"]}, WHEN) != k   # a figure renamed
    assert pdfcache.key(SRC, FIGS, WHEN + 1) != k


def test_a_font_installed_changes_the_key(tmp_path, monkeypatch):
    monkeypatch.setattr(pdfcache, "FONT_DIRS", (str(tmp_path),))
    k = pdfcache.key(SRC, FIGS, WHEN)
    (tmp_path / "Libertinus-Serif.otf").write_bytes(b"font")
    assert pdfcache.key(SRC, FIGS, WHEN) != k


def test_kept_and_taken_back_and_a_damaged_file_is_not_used(tmp_path):
    assert pdfcache.get(tmp_path, "k1") is None
    pdfcache.put(tmp_path, "k1", "fitted", b"%PDF-1.7 body")
    assert pdfcache.get(tmp_path, "k1") == ("fitted", b"%PDF-1.7 body")
    (tmp_path / pdfcache.FOLDER / "k1.pickle").write_bytes(b"\x80\x05 not a pickle")
    assert pdfcache.get(tmp_path, "k1") is None
    pdfcache.put(tmp_path, "k2", "fitted", b"not a PDF")
    assert pdfcache.get(tmp_path, "k2") is None


def test_only_the_most_recent_are_kept(tmp_path):
    import os
    for i in range(pdfcache.KEEP + 3):
        pdfcache.put(tmp_path, f"k{i}", "f", b"%PDF")
        os.utime(tmp_path / pdfcache.FOLDER / f"k{i}.pickle", ns=(i * 10**9, i * 10**9))
    pdfcache.put(tmp_path, "last", "f", b"%PDF")
    kept = sorted(p.stem for p in (tmp_path / pdfcache.FOLDER).glob("*.pickle"))
    assert len(kept) == pdfcache.KEEP and "last" in kept and "k0" not in kept


def _build(out, epoch):
    import os
    import subprocess
    import sys

    from conftest import ROOT
    r = subprocess.run([sys.executable, str(ROOT / "build.py"), "build", "--force", "--out", str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=300, env={**os.environ, "SOURCE_DATE_EPOCH": str(epoch)})
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout + r.stderr


@pytest.mark.slow
def test_a_forced_build_with_nothing_changed_takes_the_pdf_and_it_is_the_same_file(tmp_path):
    import secrets
    epoch = 1_600_000_000 + secrets.randbelow(10**8)   # a date no earlier build was made with: nothing kept
    KEPT = "(report kept; "   # the build log's pdf stage says which PDF it kept
    assert KEPT not in _build(tmp_path / "one", epoch)
    assert KEPT in _build(tmp_path / "two", epoch)
    assert (tmp_path / "one" / "report.pdf").read_bytes() == (tmp_path / "two" / "report.pdf").read_bytes()
    assert (tmp_path / "one" / "report.typ").read_bytes() == (tmp_path / "two" / "report.typ").read_bytes()
    # another date is another PDF: compiled again, not taken
    assert KEPT not in _build(tmp_path / "three", epoch + 86_400)
    assert (tmp_path / "three" / "report.pdf").read_bytes() != (tmp_path / "one" / "report.pdf").read_bytes()
