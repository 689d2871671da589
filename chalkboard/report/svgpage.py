"""The figures as one page holds them: matplotlib writes each text as glyph outlines defined in the
figure (a <path id="DejaVuSans-48"> a glyph), so the page's figures, each in its wide and its phone
rendering, repeat the same outlines some thirty times. On the page each outline is defined once,
in a hidden sprite at its top (a <use> finds its glyph anywhere in the document), and coordinates
are written to a hundredth of a point: the report's figures weigh about half as much. The figure
files (figures/*.svg, which the PDF reads) are left as drawn.
"""
from __future__ import annotations

import re

from markupsafe import Markup

_DEF = re.compile(r'<path id="([^"]+)" d="[^"]*"(?: transform="[^"]*")?\s*/>')
_EMPTY_DEFS = re.compile(r"\s*<defs>\s*</defs>")
_INDENT = re.compile(r"\n[ \t]+")
_COORDS = re.compile(r'\b(d|x|y|x1|x2|y1|y2|width|height)="([^"]*)"')
_LONG = re.compile(r"-?\d+\.\d{3,}")


def _short(m) -> str:
    """A number to a hundredth: 37.514813 -> 37.51 (a point is 1/72 inch: far under a pixel)."""
    s = f"{float(m.group(0)):.2f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def _coords(m) -> str:
    return f'{m.group(1)}="{_LONG.sub(_short, m.group(2).replace(" " + chr(10), " "))}"'


class Page:
    """The figures of one page, made lighter as they are put on it (``svg``), and the sprite of
    the glyphs they share (``sprite``), which the page sets before them."""

    def __init__(self):
        self.glyphs: dict[str, str] = {}

    def svg(self, text: str) -> str:
        def lift(m):
            key, whole = m.group(1), m.group(0)
            if self.glyphs.setdefault(key, whole) != whole:
                return whole   # the same id with another outline: left in its figure
            return ""
        text = _DEF.sub(lift, str(text))
        text = _EMPTY_DEFS.sub("", text)
        text = _INDENT.sub("\n", text)
        return _COORDS.sub(_coords, text)

    def sprite(self) -> Markup:
        if not self.glyphs:
            return Markup("")
        paths = "\n".join(_COORDS.sub(_coords, g) for g in self.glyphs.values())
        return Markup('<svg width="0" height="0" style="position: absolute" aria-hidden="true" focusable="false">'
                      f"<defs>\n{paths}\n</defs></svg>")


def lighten(sections: list[dict], validation: dict | None = None) -> Page:
    """The figures of ``sections`` (and the validation figure), each rendering lightened for one
    page, put in their place; returns the page, whose sprite the template sets at its top."""
    page = Page()

    def one(svg):
        out = page.svg(svg)
        phone = getattr(svg, "phone", None)
        if phone is not None:
            out = _with_phone(out, page.svg(phone))
        return out
    for s in sections:
        for f in s.get("figures", []):
            f["svg"] = one(f["svg"])
    if validation is not None and validation.get("svg") is not None:
        validation["svg"] = one(validation["svg"])
    return page


def _with_phone(wide: str, phone: str):
    from .drawing import Figure
    return Figure(wide, phone)


__all__ = ["Page", "lighten"]
