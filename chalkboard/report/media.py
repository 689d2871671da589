"""A figure set for where it is read: on paper (the PDF) and on a phone (the page's narrow layout).

The figure modules draw a figure once, at the size and with the type sizes they chose; ``fitted``
sets it again for a medium before it is written: narrower where the medium is, every text at
least the medium's body size once the figure is shown at the width it is given there (a figure
wider than the medium is scaled down to it), long texts broken over lines to fit, legends with as
many columns as fit, and on a phone every legend under its axes in one column. matplotlib's
constrained layout then makes room for what grew. The figure's SVG is drawn by ``draw`` (drawing.py)
and, where it came out wider than planned (a label past the axes), drawn again narrower.
"""
from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class Medium:
    name: str
    width: float          # the widest a figure is shown there (pt); a wider one is scaled down to it
    body: float           # the body text's size there (pt)
    legends_below: bool   # every legend under its axes, one column (no room beside the curves)


# The PDF: A4 less 2 cm margins each side (templates/report.typ.j2), 10 pt text; a figure is set at
# its own size (in pt) up to the text's width.
PRINT = Medium("print", 482.0, 10.0, False)
# A phone: a 390 px screen less the page's padding of .75rem each side (templates/report.html.j2's
# narrow layout), 366 px = 274.5 pt, and 16 px (12 pt) body text.
PHONE = Medium("phone", 274.5, 12.0, True)
MEDIA = (PRINT, PHONE)
SLACK = 1.04      # text set this much above the body size: it stays at least that if the crop is a bit wide
PAD_IN = 0.2      # savefig's padding, both sides (the crop keeps it)


def size(medium: Medium) -> float:
    """The type size (pt) every text of a figure has at least, for ``medium``."""
    return medium.body * SLACK


def view_width(svg: str) -> float:
    """The SVG's width in pt (its view box: matplotlib's user unit is the point)."""
    return float(re.search(r'viewBox="[-\d.e]+ [-\d.e]+ ([\d.e]+) ', svg[:3000]).group(1))


def fitted(fig, medium: Medium, draw) -> str:
    """``fig`` set for ``medium`` and drawn by ``draw`` (figure -> SVG text); drawn again narrower
    (at most twice) where what it covers is wider than the medium allows at this type size."""
    from matplotlib.text import Text

    w0, h0 = fig.get_size_inches()
    if medium.legends_below:
        h0 *= 0.8 * _stacked(fig) if _stacked(fig) > 1 else 1
    width = min(w0, medium.width / 72 - PAD_IN)
    fig.set_size_inches(width, _height(fig, medium, w0, h0, width))
    f = size(medium)
    for ax in fig.axes:
        ax.tick_params(axis="both", which="both", labelsize=f)
    for t in fig.findobj(Text):
        if t.get_fontsize() < f:
            t.set_fontsize(f)
    fig.set_layout_engine("none")
    _legends(fig, medium, f)
    for ax in fig.axes:
        spec = ax.get_subplotspec()
        if spec is not None:   # the space the figure left between its panels: the layout's own instead
            spec.get_gridspec().hspace = spec.get_gridspec().wspace = None
    suptitle = getattr(fig, "_suptitle", None)
    if suptitle is not None:   # placed by the layout, not where it was put
        fig.suptitle(_original(suptitle), fontsize=suptitle.get_fontsize())
    room = _foot_room(fig)   # (the layout places a figure's legend only when matplotlib put it "outside")
    fig.set_layout_engine(_Layout(h_pad=0.04, w_pad=0.04, hspace=0.03, wspace=0.03, rect=(0, room, 1, 1 - room)))
    # what follows measures the figure as the layout last placed it: one layout (most of the time
    # a figure takes) before the one that draws it; a text broken or an axis thinned changes the
    # sizes measured, not the places, which the drawing's own layout settles
    fig.draw_without_rendering()
    _thinned(fig)
    _wrapped(fig, f)
    for _ in range(2):   # a figure of a chip a row: grown until its rows have room, as laid out
        if not _rows_apart(fig, f):
            break
        room = _foot_room(fig)
        fig.get_layout_engine().set(rect=(0, room, 1, 1 - room))
        fig.draw_without_rendering()
        _wrapped(fig, f)
    _placed(fig)
    limit = medium.width * SLACK   # wider than this, the text would be shown below the body size
    out = draw(fig)
    for _ in range(2):   # a text past the axes (an annotation near the edge) makes it wider
        w, h = fig.get_size_inches()
        over = (view_width(out) - limit) / 72
        if over <= 0 or w - over < 0.6 * width:
            break
        fig.set_size_inches(w - over - 0.05, h)
        _wrapped(fig, f)
        _placed(fig)
        out = draw(fig)
    return out


def _stacked(fig) -> int:
    """Panels side by side (one row of a grid) set one under another, each with its row labels:
    on a phone each gets the column's width. How many there were (1: nothing to do); done once."""
    from matplotlib.gridspec import GridSpec

    specs = [ax.get_subplotspec() for ax in fig.axes]
    if getattr(fig, "_stacked", None) is not None or None in specs:
        return getattr(fig, "_stacked", None) or 1
    grids = {id(ss.get_gridspec()) for ss in specs}
    grid = specs[0].get_gridspec()
    fig._stacked = 1
    if len(grids) != 1 or grid.nrows != 1 or grid.ncols < 2:
        return 1
    column = GridSpec(grid.ncols, 1, figure=fig)
    for ax, ss in zip(fig.axes, specs):
        ax.set_subplotspec(column[ss.colspan.start, 0])
        ax.tick_params(axis="y", labelleft=True)
    fig._stacked = grid.ncols
    return grid.ncols


def _Layout(**pads):
    """matplotlib's constrained layout, leaving out the texts placed on the axes (annotations,
    values beside bars): they move with the axes, so the layout cannot make room for them, but
    the crop (which counts what is in the layout) keeps them."""
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    class Layout(ConstrainedLayoutEngine):
        def execute(self, fig):
            texts = [t for ax in fig.axes for t in ax.texts if t.get_in_layout()]
            for t in texts:
                t.set_in_layout(False)
            try:
                return super().execute(fig)
            finally:
                for t in texts:
                    t.set_in_layout(True)
    return Layout(**pads)


def _height(fig, medium: Medium, w0: float, h0: float, width: float) -> float:
    """A figure made narrower keeps its height (its plots get taller than wide on a phone, where the
    legends move under them: their lines are added)."""
    h = h0
    if medium.legends_below:
        legends = _all_legends(fig)
        lines = sum(len(leg.get_texts()) for leg in legends)
        h += lines * size(medium) * 1.45 / 72 + 0.3 * len(legends)
    return h


def _all_legends(fig) -> list:
    return [leg for leg in [*fig.legends, *(ax.get_legend() for ax in fig.axes)] if leg is not None]


def _rows_apart(fig, f: float) -> bool:
    """An axes labelled row by row (a chip a row) gets the height its labels need at the new size:
    the figure grows by what it lacks. True if it grew."""
    extra = 0.0
    for ax in fig.axes:
        labels = [t for t in ax.get_yticklabels() if t.get_visible() and t.get_text()]
        if len(labels) < 6:
            continue
        need = len(labels) * f * 1.5 / 72          # inches (and room for the labels above and below grown)
        extra = max(extra, need - ax.bbox.height / fig.dpi)
    if extra > 0.05:
        w, h = fig.get_size_inches()
        fig.set_size_inches(w, h + extra)
    return extra > 0.05


def _handles(leg) -> list:
    return list(getattr(leg, "legend_handles", None) or getattr(leg, "legendHandles"))


def _legends(fig, medium: Medium, f: float) -> None:
    """Each legend made again at size ``f``, with as many columns as fit the figure's width. One
    under its axes is placed a fixed distance under the axis's labels (not at a fraction of the
    axes' height, which the layout could not solve); on a phone every legend is put there (an
    axes and its twins share one), in one column, its labels broken to the figure's width; a
    figure's legend goes under the figure."""
    from matplotlib.transforms import ScaledTranslation, TransformedBbox

    width_px = fig.bbox.width * 0.96
    handle_px = 3 * f * fig.dpi / 72
    figure_legends = list(fig.legends)
    groups: dict = {}
    for ax in fig.axes:   # twins share their place (and, on a phone, one legend)
        leg = ax.get_legend()
        if leg is not None:
            key = tuple(round(v, 4) for v in ax.get_position().bounds) if medium.legends_below else id(ax)
            groups.setdefault(key, []).append((ax, leg))
    for members in groups.values():
        ax, first = members[0]
        handles, labels = [], []
        for _, leg in members:
            handles += _handles(leg)
            labels += [_original(t) for t in leg.get_texts()]
        anchor = first._bbox_to_anchor
        x = None   # where an anchor under the axes is (axes fraction), None for one inside them
        if medium.legends_below:
            x = 0.5
        elif (isinstance(anchor, TransformedBbox) and anchor._transform == ax.transAxes
                and anchor._bbox.y0 < 0):
            x = anchor._bbox.x0
        ncol = 1 if medium.legends_below else _columns(first, width_px)
        if x is not None and not 0 <= x <= 1:   # under several panels: the figure's legend, under them all
            for _, leg in members:
                leg.remove()
            _keep(labels, fig.legend(handles, _broken(labels, width_px / ncol - handle_px, f, fig.dpi),
                                     ncol=ncol, fontsize=f, **_FOOT))
            continue
        kw = {"loc": first._loc, "bbox_to_anchor": anchor, "frameon": first.get_frame_on()}
        if x is not None:
            kw = {"loc": "upper center", "frameon": False, "bbox_to_anchor": (x, 0),
                  "bbox_transform": ax.transAxes + ScaledTranslation(0, -_under(ax), fig.dpi_scale_trans)}
        for _, leg in members:
            leg.remove()
        new = ax.legend(handles, _broken(labels, width_px / ncol - handle_px, f, fig.dpi), ncol=ncol, fontsize=f, **kw)
        _keep(labels, new)
        new._under = x   # placed under the axis's labels (again once they are broken: _placed)
    for leg in figure_legends:
        handles, labels = _handles(leg), [_original(t) for t in leg.get_texts()]
        ncol = 1 if medium.legends_below else _columns(leg, width_px)
        leg.remove()
        _keep(labels, fig.legend(handles, _broken(labels, width_px / ncol - handle_px, f, fig.dpi),
                                 ncol=ncol, fontsize=f, **_FOOT))


def _under(ax) -> float:
    """How far under the axes (inches) their x axis's ticks and label reach, and a little more."""
    box = ax.xaxis.get_tightbbox()
    return ((ax.bbox.y0 - box.y0) if box is not None else 0) / ax.get_figure().dpi + 0.08


def _placed(fig) -> None:
    """The legends under their axes moved to where the axes' labels now end."""
    from matplotlib.transforms import ScaledTranslation

    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is not None and getattr(leg, "_under", None) is not None:
            leg.set_bbox_to_anchor((leg._under, 0), transform=ax.transAxes + ScaledTranslation(
                0, -_under(ax), fig.dpi_scale_trans))


def _thinned(fig) -> bool:
    """An axis with its ticks at fixed places (each stage, a speed 1-2-5) keeps every second or
    third where their labels would run into each other at the new size."""
    import math

    import matplotlib.ticker as mt

    thinned = False
    for ax in fig.axes:
        axis = ax.xaxis
        if not isinstance(axis.get_major_locator(), mt.FixedLocator):
            continue
        low, high = sorted(axis.get_view_interval())
        labels = [t for t in axis.get_ticklabels() if t.get_visible() and t.get_text()]
        if len(labels) < 2 or not all(re.fullmatch(r"[\d.,−×⁰¹²³⁴⁵⁶⁷⁸⁹⁻-]+", t.get_text()) for t in labels):
            continue   # categories (named ticks): each kept
        need = sum(t.get_window_extent().width for t in labels) + 0.6 * labels[0].get_fontsize() * len(labels)
        if need <= ax.bbox.width:
            continue
        step = math.ceil(need / ax.bbox.width)
        locs = [v for v in axis.get_major_locator().tick_values(low, high) if low <= v <= high]
        axis.set_major_locator(mt.FixedLocator(locs[::step]))
        thinned = True
    return thinned


# A figure's legend at the foot of the figure, where the layout keeps room for it (_Layout's rect):
# matplotlib's "outside" placement lands a few points elsewhere when savefig crops.
_FOOT = {"loc": "lower center", "bbox_to_anchor": (0.5, 0.0), "frameon": False}


def _foot_room(fig) -> float:
    """The share of the figure's height its legends at the foot take (with a little space)."""
    height = sum(leg.get_window_extent().height for leg in fig.legends)
    return min(0.6, (height + 6 * fig.dpi / 72) / fig.bbox.height) if fig.legends else 0.0


def _original(t) -> str:
    """A text as the figure's module wrote it, before it was broken for a medium."""
    return getattr(t, "_unbroken", None) or t.get_text()


def _keep(labels: list[str], legend) -> None:
    for t, label in zip(legend.get_texts(), labels):
        t._unbroken = label


def _columns(leg, width_px: float) -> int:
    """As many of the legend's columns as fit ``width_px`` at its new size (they are about equally
    wide, and grow with the type)."""
    ncol = leg._ncols
    grown = leg.get_window_extent().width   # measured at the new size
    while ncol > 1 and grown * ncol / leg._ncols > width_px:
        ncol -= 1
    return ncol


def _broken(labels: list[str], width_px: float, f: float, dpi: float) -> list[str]:
    """Labels broken over lines at spaces to about ``width_px`` (a character taken as 0.55 em)."""
    chars = max(12, int(width_px / (0.55 * f * dpi / 72)))
    return [_wrap(s, chars) for s in labels]


def _wrap(s: str, chars: int) -> str:
    """``s`` broken at spaces into lines of at most ``chars``, never inside $mathtext$."""
    if len(s) <= chars or "\n" in s:
        return s
    parts = re.split(r"(\$[^$]*\$)", s)
    glued = "".join(p.replace(" ", "\0") if p.startswith("$") else p for p in parts)
    return "\n".join(line.replace("\0", " ") for line in textwrap.wrap(glued, chars, break_on_hyphens=False))


def _wrapped(fig, f: float) -> bool:
    """Titles, axis labels and texts wider than the room they have broken over lines: a title or
    an x label the axes' width, a y label its height, the figure's title and any other text the
    figure's width from where it starts."""
    from matplotlib.text import Text

    fb = fig.bbox
    room, changed = {}, False
    for ax in fig.axes:
        # a title or an x label is centred on the axes and may reach over the y labels beside them
        middle = (ax.bbox.x0 + ax.bbox.x1) / 2
        across = 0.98 * 2 * min(middle - fb.x0, fb.x1 - middle)
        room[id(ax.title)] = room[id(ax._left_title)] = room[id(ax._right_title)] = across
        room[id(ax.xaxis.label)] = across
        room[id(ax.yaxis.label)] = -ax.bbox.height   # rotated: its height
        for t in (*ax.get_xticklabels(), *ax.get_yticklabels()):
            room[id(t)] = None
    for leg in _all_legends(fig):   # a legend's column: the figure's width shared, less the handles
        share = 0.96 * fb.width / leg._ncols - (leg.handlelength + leg.handletextpad + leg.columnspacing) * f * fig.dpi / 72
        for t in leg.get_texts():
            room[id(t)] = share
    changed = _room_beside_bars(fig)
    for t in fig.findobj(Text):
        if room.get(id(t), 0) is None:
            continue
        before, text = t.get_text(), _original(t)
        t._unbroken = text
        t.set_text(text)
        changed |= _broken_to_fit(t, text, room.get(id(t), 0), fb, t is getattr(fig, "_suptitle", None)) != before
    return changed


def _a_value(text: str) -> bool:
    """A bar's value ('0.562   (P ≤ 103)'), kept on one line."""
    return len(text) < 12 or text[:1].isdigit() and len(text) < 24


def _room_beside_bars(fig) -> bool:
    """A short text placed in data coordinates past the right of its axes (a bar's value beside
    its end) gets room: the axis reaches that much further. True if one did."""
    moved = False
    for ax in fig.axes:
        if ax.get_xscale() != "linear":
            continue
        past = max((t.get_window_extent().x1 - ax.bbox.x1 for t in ax.texts
                    if t.get_visible() and _a_value(t.get_text()) and t.get_transform().contains_branch(ax.transData)),
                   default=0)
        if past > 1:
            low, high = ax.get_xlim()
            ax.set_xlim(low, high + (high - low) * past / max(ax.bbox.width - past, 0.3 * ax.bbox.width))
            moved = True
    return moved


def _broken_to_fit(t, text: str, have: float, fb, whole: bool) -> str:
    """``t`` (showing ``text``) broken over lines to fit ``have`` px (negative: its height, for a
    rotated label; 0: from where it is anchored to the figure's edge, or the figure's width where
    ``whole``); its text."""
    if not t.get_visible() or not text.strip():
        return text
    box = t.get_window_extent()
    used = box.width
    if have < 0:
        have, used = -have, box.height
    elif have == 0:
        ha = t.get_horizontalalignment()
        if whole:
            have = fb.width * 0.98
        elif ha == "right":
            have = box.x1 - fb.x0
        elif ha == "center":
            have = 2 * min((box.x0 + box.x1) / 2 - fb.x0, fb.x1 - (box.x0 + box.x1) / 2)
        else:
            have = fb.x1 - box.x0
        have = max(have, 0.3 * fb.width)
    if used <= have or _a_value(text):
        return text
    longest = max(len(line) for line in text.split("\n"))
    t.set_text("\n".join(_wrap(line, max(12, int(longest * have / used * 0.97))) for line in text.split("\n")))
    return t.get_text()
