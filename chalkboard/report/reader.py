"""Text as a reader meets it: the lecture's notes cited by their time in the lecture rather than by
the notes' file, and long addresses shown as their host (the whole address kept in the link)."""
from __future__ import annotations

import functools
import re
from html import escape
from pathlib import Path
from urllib.parse import urlsplit

from ..data.seeds import BULLET, CHAPTERS_FILE
from ..runtime.home import ROOT

LECTURE = ROOT / "lecture"
# 'chapters-3-7.md#T-02', 'chapters-3-7.md, R-06' and a following '#T-06' of the same list
_CITED = re.compile(re.escape(CHAPTERS_FILE) + r"(?:#|, )([A-Z]-\d\d)((?:, #[A-Z]-\d\d)*)")
_TIME = re.compile(r"^\((~?\d+:\d\d(?:\s*[–-]\s*~?\d+:\d\d)?)\)")
_URL = re.compile(r"https?://[^\s<>()\"']+[^\s<>()\"'.,;:]")


@functools.cache
def lecture_times(folder: Path = LECTURE) -> dict[str, str]:
    """Each note of the later chapters ('T-02') -> its time in the lecture ('~1:23'), as the notes give it."""
    out = {}
    path = folder / CHAPTERS_FILE
    if not path.exists():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        m = BULLET.match(line)
        if m:
            t = _TIME.match(m["text"])
            out[m["id"]] = t.group(1).replace(" ", "") if t else ""
    return out


def cite_lecture(text):
    """``text`` with each note of the lecture cited as 'lecture ~1:23' instead of by file and id."""
    if not isinstance(text, str) or CHAPTERS_FILE not in text:
        return text
    times = lecture_times()

    def one(m):
        ids = [m.group(1)] + re.findall(r"[A-Z]-\d\d", m.group(2) or "")
        when = [times.get(i) or i for i in ids]
        return "lecture " + ", ".join(dict.fromkeys(when))
    return type(text)(_CITED.sub(one, text))


def host(url: str) -> str:
    """'https://www.nvidia.com/content/.../datasheet.pdf' -> 'nvidia.com'."""
    h = urlsplit(url).hostname or url
    return h[4:] if h.startswith("www.") else h


def linked(text) -> str:
    """``text`` as HTML with each address in it a link showing only its host."""
    from markupsafe import Markup

    if text is None:
        return ""
    s = str(text)
    out, at = [], 0
    for m in _URL.finditer(s):
        out.append(escape(s[at:m.start()]))
        out.append(f'<a href="{escape(m.group())}" title="{escape(m.group())}">{escape(host(m.group()))}</a>')
        at = m.end()
    out.append(escape(s[at:]))
    return Markup("".join(out))


def _spans(text) -> list[tuple[bool, str]]:
    """``text`` split at its `code spans`: (is code, piece) in order; an unpaired ` stays as written."""
    s = "" if text is None else str(text)
    parts = s.split("`")
    if len(parts) % 2 == 0:   # an odd number of backticks: not code spans
        return [(False, s)]
    return [(i % 2 == 1, p) for i, p in enumerate(parts) if p]


def code_html(text) -> str:
    """A caption as HTML: its `code spans` set as code, the backticks not shown."""
    from markupsafe import Markup

    return Markup("".join(f"<code>{escape(p)}</code>" if code else escape(p) for code, p in _spans(text)))


def code_typst(text, typst_str) -> str:
    """A caption as Typst markup: each piece a string literal, shown as written, its code spans raw."""
    return "".join(f"#raw({typst_str(p)});" if code else f"#{typst_str(p)};" for code, p in _spans(text))


# -- symbols written in prose ------------------------------------------------------------------
# A definition's meaning or a takeaway writes a formula as text ("c_F·N_active·W/(F·L_thr)"): each
# token that is a declared symbol's text form is set with its subscript, as the formulas beside it.
_SYMBOL_TOKEN = re.compile(r"(?<![\w`.])([^\W\d_]{1,4})_([^\W_]+(?:,[^\W_]+)?)(?![\w`])")


@functools.cache
def _symbols() -> frozenset[str]:
    from derivations import REGISTRY
    from ..typeset.printers import text_symbol

    return frozenset(t for q in REGISTRY.quantities.values() if "_" in (t := text_symbol(q)))


def _prose_parts(text) -> list[tuple[str, str | None]]:
    """``text`` as (plain, None) and (base, subscript) pieces: each declared symbol's text form found."""
    s = "" if text is None else str(text)
    known, out, at = _symbols(), [], 0
    for m in _SYMBOL_TOKEN.finditer(s):
        if m.group() not in known:
            continue
        out.append((s[at:m.start()], None))
        out.append((m.group(1), m.group(2)))
        at = m.end()
    out.append((s[at:], None))
    return [p for p in out if p[0] or p[1]]


def prose_html(text) -> str:
    """Prose as HTML: a declared symbol written as text (N_active) set as N<sub>active</sub>."""
    from markupsafe import Markup

    return Markup("".join(escape(a) if b is None else f"<i>{escape(a)}</i><sub>{escape(b)}</sub>"
                          for a, b in _prose_parts(text)))


def prose_typst(text, typst_str) -> str:
    """Prose as Typst markup: each piece a string literal, a declared symbol set as math with its subscript."""
    def sym(a, b):
        base = a if len(a) == 1 else f"upright({typst_str(a)})"
        return f"${base}_{typst_str(b)}$"
    return "".join(f"#{typst_str(a)};" if b is None else sym(a, b) for a, b in _prose_parts(text))
