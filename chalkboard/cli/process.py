"""The process around a command: output that never fails on encoding, and SIGTERM that stops
forked workers and unwinds like Ctrl-C (half-written output is removed)."""
from __future__ import annotations

import codecs
import os
import sys


def _escape_unencodable(err):
    """Characters the output encoding lacks, written as JSON-style \\uXXXX escapes (ASCII-safe)."""
    out = []
    for ch in err.object[err.start:err.end]:
        c = ord(ch)
        if c > 0xFFFF:
            c -= 0x10000
            out.append(f"\\u{0xD800 + (c >> 10):04x}\\u{0xDC00 + (c & 0x3FF):04x}")
        else:
            out.append(f"\\u{c:04x}")
    return "".join(out), err.end


codecs.register_error("chalkboard-escape", _escape_unencodable)


def safe_streams() -> None:
    """Output never fails on encoding: UTF-8 where the locale has it, else escapes (PYTHONIOENCODING=ascii).
    A stream closed before the start (`build.py eval ... >&-`; Python then sets it to None) is
    not an error: what would go to it is dropped."""
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="chalkboard-escape")
            except (ValueError, OSError):
                pass
