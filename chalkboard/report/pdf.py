"""The PDF: formulas fitted to the text width, the Typst compile (in a forked process beside the
build), and the date it carries (SOURCE_DATE_EPOCH, else the newest as-of date of the data)."""
from __future__ import annotations

import calendar
import json
import math
import os
import re
from pathlib import Path


from ..errors import BuildError, InputError
from ..cache.forked import Forked
from ..typeset import WIDTH_EM


# a formula estimated narrower than the line budget always fits (see the note above fit_formulas): only
# those from there up (a piece that cannot break) are measured by Typst
FIT_FROM_EM = WIDTH_EM
FIT_FROM_CHARS = 80   # Typst source without a width estimate: none under 131 characters fills a line
MAYBE_WIDE = re.compile(r"^#fit\[\$ (.*) \$\]$", re.M)
SETTINGS_END = "// -- end of settings --"


def typst_display(src: str) -> str:
    """A display formula; marked #fit[...] when it may be wider than the text (see fit_formulas)."""
    em = getattr(src, "em", None)
    wide = em >= FIT_FROM_EM if em is not None else len(src) >= FIT_FROM_CHARS
    return f"#fit[$ {src} $]" if wide else f"$ {src} $"


# A display formula wider than the text is set over lines (chalkboard/typeset/linebreak.py, lines of at
# most 49 em of the printers' estimate, printers.width_em); one still wider (a piece that cannot break)
# is scaled down to the text's width. Which ones are wide is measured by Typst itself, but only for
# formulas that might be: on the report's formulas the set width is at most 1.08x the estimate
# (0.97x above 30 em), and the text is 48.2 em wide (17 cm at 10 pt), so a formula estimated
# under 49 em always fits. tests/report/test_report_defects.py measures every formula of the report.


def unfitted(typ_src: str) -> str:
    """The report's Typst source with each formula marked #fit[...] set as it is: without a PDF,
    nothing is measured, so Typst is neither needed nor imported (--no-pdf)."""
    return MAYBE_WIDE.sub(lambda m: f"$ {m.group(1)} $", typ_src)


def fit_formulas(typ_src: str) -> str:
    """The report's Typst source with each display formula marked #fit[...] set as it is if it fits
    the text's width, else scaled down to it: one Typst query measures them all, with the
    report's own settings (page, font, size), so the PDF's layout needs no measuring pass."""
    wide = MAYBE_WIDE.findall(typ_src)
    if not wide:
        return typ_src
    import typst

    settings = typ_src.split(SETTINGS_END, 1)[0]
    probe = [settings, "#layout(size => [#metadata(size.width.pt()) <chalkboard-width>])"]
    probe += [f"#context [#metadata(measure($ {f} $).width.pt()) <chalkboard-width>]" for f in wide]
    try:
        got = typst.query("\n".join(probe).encode("utf-8"), "<chalkboard-width>", field="value")
        text_width, *widths = json.loads(got)
    except Exception as e:  # typst reports source errors as exceptions with a message
        raise BuildError(f"Typst could not measure the formulas: {str(e).strip().splitlines()[0]}") from None
    if len(widths) != len(wide):
        raise BuildError(f"Typst measured {len(widths)} of {len(wide)} formulas")
    sizes = iter(widths)

    def place(m):
        w = next(sizes)
        if w <= text_width:
            return f"$ {m.group(1)} $"
        percent = math.floor(text_width / w * 1e4) / 100   # rounded down: never wider than the text
        if " \\ " in m.group(1):   # set over lines: smaller type, so it may still break across pages
            return f"#[#set text(size: {percent / 100:.4f}em); $ {m.group(1)} $]"
        return f"#scale({percent}%, reflow: true)[$ {m.group(1)} $]"
    return MAYBE_WIDE.sub(place, typ_src)


def compile_pdf(folder: Path, timestamp: int, typ_src: str, compiler=None) -> tuple[str, bytes]:
    """The report's Typst source with its formulas fitted (fit_formulas) and its PDF, compiled with
    ``folder`` as root (the figures are read from there) and dated ``timestamp``: reproducible.
    Typst starts threads: a process that has called it must not fork (the child would wait on
    threads it does not have), so the build calls it in the forked process or after the last fork.
    ``compiler``: a typst.Compiler kept from earlier compiles (the edit loop's), which lays out
    again only what changed; its PDF is byte for byte the one a fresh compile makes."""
    import typst

    fitted = fit_formulas(typ_src)
    try:
        if compiler is not None:
            return fitted, compiler.compile(input=fitted.encode("utf-8"), root=str(folder), timestamp=timestamp)
        return fitted, typst.compile(fitted.encode("utf-8"), root=str(folder), timestamp=timestamp)
    except Exception as e:  # typst reports source errors as exceptions with a message
        raise BuildError(f"Typst could not compile the PDF: {str(e).strip().splitlines()[0]}") from None


def compile_pdf_background(folder: Path, timestamp: int, typ_src: str) -> Forked:
    """compile_pdf in a forked process (Typst holds the interpreter while it compiles); its
    ``result()`` is (fitted source, PDF bytes)."""
    return Forked("compiling the PDF", compile_pdf, folder, timestamp, typ_src)


FALLBACK_DATE = "2026-04-29"   # the lecture's date, if no source gives an as-of date


def source_date_epoch() -> int | None:
    """SOURCE_DATE_EPOCH (reproducible-builds.org) as whole seconds, None if unset; InputError if malformed."""
    env = os.environ.get("SOURCE_DATE_EPOCH")
    if env is None or not env.strip():
        return None
    if not re.fullmatch(r"\d{1,12}", env.strip()) or int(env) > 253402300799:
        raise InputError(f"environment variable SOURCE_DATE_EPOCH={env[:40]!r}: expected a whole number "
                         "of seconds since 1970-01-01 (before the year 10000)")
    return int(env)


def pdf_timestamp(data) -> int:
    """Seconds since 1970 for the PDF's dates: SOURCE_DATE_EPOCH when set, else the newest as-of
    date among the sources (midnight UTC), so the PDF depends on the inputs only."""
    epoch = source_date_epoch()
    if epoch is not None:
        return epoch
    dates = []
    for src in data.sources.values():
        m = re.match(r"^(\d{4})(?:-(\d{2}))?(?:-(\d{2}))?", str(src.as_of))
        if m and 1970 <= int(m.group(1)) <= 9999 and 1 <= int(m.group(2) or 1) <= 12:
            dates.append((int(m.group(1)), int(m.group(2) or 1), min(int(m.group(3) or 1), 28) or 1))
    y, mo, d = max(dates) if dates else tuple(int(x) for x in FALLBACK_DATE.split("-"))
    return calendar.timegm((y, mo, d, 0, 0, 0))
