"""Each text's size measured once per process, not once per draw.

matplotlib keeps a text's measured size (width, height, descent) per renderer object, and every
draw here makes a new renderer: the layout passes media.py runs before a figure is written, the
SVG itself, each medium. So the same tick labels, titles and legend entries were measured again
and again (text layout was about a quarter of the figures' time). A size depends only on the kind
of renderer (Agg for the layout passes, SVG for the file), its dpi, the text, its font
properties, whether it is mathtext, and the text settings of rcParams: with those as the key, a
size measured once is the size any later draw would measure, so the figures are unchanged. The
font files a text's properties pick are found once too (matplotlib looks them up again each time
it lays out a text, for the font's line height).

SIZES is carried back from the forked figure processes to the process that forked them
(chalkboard/cache/forked.py, ``carry``): under `build.py watch` the next rebuild's figure processes
start with every size the earlier ones measured. Kept in memory only (a size depends on the
installed fonts and matplotlib, which the caches on disk are not keyed by).
"""
from __future__ import annotations

SIZES: dict = {}
# rcParams that change how a text is measured (fixed while a build runs; read into the key anyway)
_SETTINGS = ("text.hinting", "text.hinting_factor", "text.kerning_factor", "text.antialiased",
             "text.usetex", "mathtext.fontset", "mathtext.default", "mathtext.fallback")
# and those that pick a font file (a generic family is looked up in its list)
_FONTS = ("font.family", "font.sans-serif", "font.serif", "font.monospace", "font.cursive", "font.fantasy")


def _font(prop) -> tuple:
    """What matplotlib's FontProperties hashes on: everything that picks the font and its size."""
    return (tuple(prop.get_family()), prop.get_slant(), prop.get_variant(), prop.get_weight(),
            prop.get_stretch(), prop.get_size_in_points(), prop.get_file(), prop.get_math_fontfamily())


def install() -> None:
    """matplotlib's cached measure of a text replaced by one keyed without the renderer object
    (once per process; matplotlib imported by then)."""
    import matplotlib
    import matplotlib.text as mtext

    kept = getattr(mtext, "_get_text_metrics_with_cache", None)
    if kept is None or getattr(kept, "per_process", False):
        return   # a matplotlib without that internal measures as it does (the figures are the same)
    from ..cache.forked import carry

    carry("text sizes", SIZES)
    rc = matplotlib.rcParams
    setting = dict.__getitem__   # an rcParams value as stored (RcParams' own lookup costs ten times more)

    def measured(renderer, text, fontprop, ismath, dpi):
        inner = getattr(renderer, "_renderer", renderer)   # a MixedModeRenderer measures with its vector one
        key = (type(inner).__module__, type(inner).__qualname__, getattr(inner, "dpi", None), text,
               _font(fontprop), ismath, dpi, tuple(setting(rc, s) for s in _SETTINGS))
        got = SIZES.get(key)
        if got is None:
            got = SIZES[key] = renderer.get_text_width_height_descent(text, fontprop.copy(), ismath)
        return got

    measured.per_process = True
    mtext._get_text_metrics_with_cache = measured
    _fonts_found_once(rc, setting)


def _fonts_found_once(rc, setting) -> None:
    from matplotlib import font_manager

    manager = font_manager.fontManager
    find = getattr(manager, "_find_fonts_by_props", None)
    if find is None:   # an older matplotlib: it finds them as it does
        return
    found: dict = {}

    def fonts(prop, fontext="ttf", directory=None, fallback_to_default=True, rebuild_if_missing=True):
        if not isinstance(prop, font_manager.FontProperties):
            return find(prop, fontext, directory, fallback_to_default, rebuild_if_missing)
        key = (_font(prop), fontext, directory, fallback_to_default, rebuild_if_missing,
               tuple(str(setting(rc, s)) for s in _FONTS))
        got = found.get(key)
        if got is None:
            got = found[key] = find(prop, fontext, directory, fallback_to_default, rebuild_if_missing)
        return list(got)   # (a caller may change the list it is given)

    manager._find_fonts_by_props = fonts
