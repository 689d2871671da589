"""The PDF kept between builds under everything Typst reads to make it.

Typst lays out the report's 100-odd pages on one core, the last and longest step of a build. Its
output depends only on what it is given: the report's Typst source (before its formulas are
fitted, which Typst itself does from the same source), the figures it embeds, the timestamp the
PDF is dated with, Typst's version, and the fonts it may find on the system. The key hashes all of
them; a build whose key was kept takes the fitted source and the PDF from ``.cache/pdf/`` and
compiles nothing. So an edit that changes neither the text nor a figure (a comment, the HTML
template, ``--force`` with nothing changed) skips Typst, while any change to the text, a figure, a
font or the Typst version compiles again. A kept file that cannot be read, or does not match
the digest it carries (chalkboard/cache/sealed.py), is compiled again; one
that cannot be written is not kept. Only the most recently used few are kept.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
import time
from pathlib import Path

from ..runtime.home import cache
from . import sealed

FOLDER = Path(".cache") / "pdf"
KEEP = 8   # the most recently used PDFs kept (a few chips or --set variants built in turn)

# where Typst looks for system fonts on Linux, macOS and in a user's home (typst's font search)
FONT_DIRS = ("/usr/share/fonts", "/usr/local/share/fonts", "/Library/Fonts", "/System/Library/Fonts",
             "~/.fonts", "~/.local/share/fonts", "~/Library/Fonts")


def _fonts(h) -> None:
    """Each font file Typst may read: its path, size and modification time (not its bytes: a font
    replaced in place gets a new time)."""
    for d in FONT_DIRS:
        top = Path(d).expanduser()
        if not top.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            for name in sorted(filenames):
                p = Path(dirpath) / name
                try:
                    st = p.stat()
                except OSError:
                    continue
                h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())


def key(typ_src: str, figures: dict[str, str], timestamp: int) -> str:
    """The hash of everything the PDF is made from (see the module's docstring)."""
    from importlib import metadata

    h = hashlib.sha256()
    try:
        version = metadata.version("typst")
    except metadata.PackageNotFoundError:
        version = None
    h.update(f"typst {version} python {sys.version_info[:2]} timestamp {timestamp}\n".encode())
    h.update(hashlib.sha256(typ_src.encode("utf-8")).digest())
    # the code that fits the formulas to the page before the compile (report/pdf.py) makes the PDF too
    h.update(hashlib.sha256((Path(__file__).resolve().parents[1] / "report" / "pdf.py").read_bytes()).digest())
    for name in sorted(figures):
        h.update(name.encode() + b"\0" + hashlib.sha256(figures[name].encode("utf-8")).digest())
    _fonts(h)
    return h.hexdigest()[:32]


def get(root: Path, k: str) -> tuple[str, bytes] | None:
    """The fitted source and the PDF kept under ``k``, or None."""
    p = cache(root) / FOLDER.name / f"{k}.pickle"
    try:
        fitted, pdf = sealed.read(p)   # checked against its digest: an altered PDF is compiled again
        if not (isinstance(fitted, str) and isinstance(pdf, bytes) and pdf.startswith(b"%PDF")):
            return None
        os.utime(p)   # most recently used
        return fitted, pdf
    except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError, AttributeError):
        return None


def put(root: Path, k: str, fitted: str, pdf: bytes) -> None:
    """Keep ``fitted`` and ``pdf`` under ``k`` (written whole, then renamed); best effort."""
    folder = cache(root) / FOLDER.name
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".pdf-", dir=folder)
        with os.fdopen(fd, "wb") as f:
            f.write(sealed.dumps((fitted, pdf)))
        os.replace(tmp, folder / f"{k}.pickle")
        kept = sorted(folder.glob("*.pickle"), key=lambda q: q.stat().st_mtime_ns, reverse=True)
        for old in kept[KEEP:]:
            old.unlink(missing_ok=True)
        for left in folder.glob(".pdf-*"):   # what a killed build left half-written
            if left.stat().st_mtime < time.time() - 3600:
                left.unlink(missing_ok=True)
    except OSError:
        return
