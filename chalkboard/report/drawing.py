"""What every figure draws with: the style, the colours, SVG output with fixed layout, a quantity
swept over an input, the hatch past what fits, legends below the axes. The figure modules
(figures.py, figures_chapters.py, figures_pipeline.py, figures_prices.py, figures_validation.py) import this; it
imports none of them."""
from __future__ import annotations

import io
import re
from contextlib import contextmanager

from ..errors import MissingInput, NotApplicable

from ..evaluation.evaluate import Scenario

_STYLE = {
    "svg.hashsalt": "chalkboard",      # deterministic ids: two builds give identical SVG
    "svg.fonttype": "path",            # text as outlines: renders the same everywhere
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.25,
    "figure.dpi": 100,
}


class _Pyplot:
    """matplotlib.pyplot, imported and styled the first time a figure is drawn (not on import:
    commands that draw nothing never pay for matplotlib)."""
    _module = None

    def __getattr__(self, name):
        if _Pyplot._module is None:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot

            matplotlib.pyplot.rcParams.update(_STYLE)
            from . import textsizes

            textsizes.install()   # each text measured once, not once a draw
            _Pyplot._module = matplotlib.pyplot
        return getattr(_Pyplot._module, name)


plt = _Pyplot()
C = {"compute": "#1f77b4", "weights": "#d62728", "kv": "#2ca02c", "step": "#111111",
     "mem": "#9467bd", "up": "#1f77b4", "out": "#ff7f0e", "comm": "#8c564b"}


# One colour a chip, the same in every figure and in the explorer: Paul Tol's "muted" qualitative
# scheme (nine colours told apart with the common colour-vision deficiencies), by the chip's place in
# hardware.yaml, the chips with a rental price first (they are drawn together, in the cost plots); from
# the tenth chip on the colours repeat with a dashed line. The featured or picked chip is drawn
# heavier, in black.
CHIP_PALETTE = ("#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677", "#882255", "#AA4499")


def chip_styles(hardware: dict) -> dict[str, tuple[str, bool]]:
    """Each chip id of ``hardware`` (the data's chips: id -> entry) -> (colour, dashed)."""
    n = len(CHIP_PALETTE)
    priced = [h for h, e in hardware.items() if e.get("rental_price") is not None]
    order = priced + [h for h in hardware if h not in priced]
    return {h: (CHIP_PALETTE[i % n], i // n % 2 == 1) for i, h in enumerate(order)}


_SUPERSCRIPT = str.maketrans("0123456789-−", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁻")


def superscript(n: int | str) -> str:
    """10 and an exponent as plain text: superscript(24) -> '²⁴'."""
    return str(n).translate(_SUPERSCRIPT)


def plain_log_labels(fig) -> None:
    """Tick labels of log axes as plain text (10³, 2×10⁴) instead of mathtext: the same labels,
    without parsing each one with matplotlib's TeX-like parser (a third of the drawing time)."""
    import matplotlib.ticker as mt

    class PlainLog(mt.LogFormatterSciNotation):
        def __call__(self, x, pos=None):
            s = super().__call__(x, pos)
            m = re.fullmatch(r"\$\\mathdefault\{(?:([\d.]+)\\times)?(?:(\d+)\^\{([^}]*)\}|([\d.]+))\}\$", s)
            if not m:
                return s
            coeff, base, exp, plain = m.groups()
            if plain is not None:
                return plain
            exp = exp.replace("\\mathdefault", "").replace("{", "").replace("}", "").replace("\\minus", "-")
            return f"{coeff + '×' if coeff else ''}{base}{superscript(exp.strip())}"

    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() != "log":
                continue
            for which, get, put in (("major", axis.get_major_formatter, axis.set_major_formatter),
                                    ("minor", axis.get_minor_formatter, axis.set_minor_formatter)):
                f = get()
                if type(f) is mt.LogFormatterSciNotation:
                    put(PlainLog(base=f._base, labelOnlyBase=f.labelOnlyBase,
                                 minor_thresholds=f.minor_thresholds, linthresh=f._linthresh))


def bars(ax, y, widths, colors, height: float) -> None:
    """Horizontal bars from 0, centred on ``y``: ax.barh's picture and axis limits, as one collection
    (barh makes a patch a bar, each added and drawn on its own: slow at a row per chip)."""
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    bars = PatchCollection([Rectangle((0, yy - height / 2), w, height) for yy, w in zip(y, widths)],
                           facecolors=colors, edgecolors="none", linewidths=0)
    bars.sticky_edges.x.append(0)   # as barh: no margin left of the bars' common start
    ax.add_collection(bars, autolim=True)
    ax.autoscale_view()


def points_right(ax, points: float):
    """Data coordinates shifted ``points`` to the right: a label beside a bar's end, placed as
    annotate(xytext=(points, 0), textcoords="offset points") places it, as a plain text (an
    annotation costs several times as much to draw, at one a row per chip)."""
    from matplotlib.transforms import offset_copy

    return offset_copy(ax.transData, fig=ax.get_figure(), x=points, y=0, units="points")


def unmeasured_row_labels(ax) -> None:
    """For an axis with one labelled row per chip and no y label: matplotlib measures every row's
    label on every draw to place the empty y label; it is placed where that puts it instead."""
    ax.yaxis.set_label_coords(0, 0.5)


class Figure(str):
    """A figure's SVG for paper and a wide screen, with ``phone``: its SVG for a phone's column
    (media.py). A str, so whatever writes or compares a figure's SVG reads the one for paper."""
    phone: str

    def __new__(cls, svg: str, phone: str):
        self = super().__new__(cls, svg)
        self.phone = phone
        return self

    def __reduce__(self):   # kept in the figure cache and sent between processes whole
        return (Figure, (str(self), self.phone))


def svg(fig) -> Figure:
    """The figure as SVG for each medium (media.py: paper, a phone), each drawn once and cropped
    to what is drawn (with savefig's padding).

    savefig(bbox_inches="tight") draws a figure twice: once to measure what it covers, once to
    write it at that size. Here it is written at its own size, measured after the one draw, and
    the SVG's view box set to the measured area: the same picture (rendered, the same pixels but
    for anti-aliasing), one draw fewer. It relies on matplotlib's SVG writer as it is (3.8 to
    3.11); where that differs, savefig's two draws are used."""
    from . import media

    plain_log_labels(fig)
    axes = []
    try:
        # the measuring passes of fitted() compute ticks as the SVG's draw does: once a state
        ticks_made_once(fig, axes)
        drawn = {m.name: media.fitted(fig, m, _drawn) for m in (media.MEDIA if not _PAPER_ONLY else media.MEDIA[:1])}
    finally:
        for axis in axes:
            del axis._update_ticks
        plt.close(fig)
    return Figure(drawn["print"], phone=_own_ids(drawn["phone"], "ph-") if "phone" in drawn else "")


_PAPER_ONLY = []   # set while for_paper() holds: figures drawn for paper alone


@contextmanager
def for_paper():
    """Within it, a figure is drawn for paper alone, with no phone's version: a page shows that
    one in a phone's column too, scaled to it (the chip reports of --all-hardware, where the
    phone's drawing was half the work)."""
    _PAPER_ONLY.append(True)
    try:
        yield
    finally:
        _PAPER_ONLY.pop()


def _drawn(fig) -> str:
    try:
        svg = svg_drawn_once(fig)
    except (ImportError, AttributeError, TypeError):
        svg = None
    if svg is None:
        buf = io.StringIO()
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
        svg = buf.getvalue()
    return svg


def _own_ids(svg: str, prefix: str) -> str:
    """The SVG's ids (and what refers to them) prefixed: a page that holds both of a figure's SVGs,
    one of them hidden, resolves each reference within the one shown."""
    svg = re.sub(r'\bid="', f'id="{prefix}', svg)
    return re.sub(r'(href="#|url\(#)', rf"\1{prefix}", svg)


def svg_drawn_once(fig) -> str | None:
    from matplotlib import rcParams
    from matplotlib.backends.backend_mixed import MixedModeRenderer
    from matplotlib.backends.backend_svg import FigureCanvasSVG, RendererSVG

    class Renderer(RendererSVG):
        """matplotlib's SVG renderer, trimming lines to the figure with a margin of its own size
        on every side instead of to the figure itself: what is drawn just outside it (a legend below the axes) is kept, as
        savefig keeps it by enlarging the figure first (the view box hides the rest)."""
        def _convert_path(self, path, transform=None, clip=None, simplify=None, sketch=None):
            from matplotlib import _path

            clip = (-self.width, -self.height, 2 * self.width, 2 * self.height) if clip else None  # x0 y0 x1 y1
            return _path.convert_to_string(path, transform, clip, simplify, sketch, 6,
                                           [b"M", b"L", b"Q", b"C", b"z"], False).decode("ascii")

    FigureCanvasSVG(fig)   # the canvas savefig(format="svg") would switch to
    buf = io.StringIO()
    dpi, fig.dpi = fig.dpi, 72   # as print_svg: SVG user units are points
    width, height = fig.get_size_inches()
    renderer = MixedModeRenderer(fig, width, height, dpi,
                                 Renderer(width * 72, height * 72, buf, image_dpi=dpi, metadata={"Date": None}))
    axes = []
    try:
        minor_ticks_as_one_line(fig)
        ticks_made_once(fig, axes)
        fig.draw(renderer)
        box = fig.get_tightbbox(renderer).padded(rcParams["savefig.pad_inches"])
        renderer.finalize()
    finally:
        for axis in axes:
            del axis._update_ticks
        fig.dpi = dpi
    return cropped(buf.getvalue(), width * 72, height * 72,
                    *(v * 72 for v in (box.x0, height - box.y1, box.width, box.height)))


def minor_ticks_as_one_line(fig) -> None:
    """Unlabelled minor ticks (a log axis's 2, 3, ... 9 × 10ⁿ) drawn as one line of tick marks per
    axis instead of a tick object each (two lines, two labels and a grid line apiece, made and laid
    out on every draw: a fifth of the drawing time): the same marks, with the ticks' own style,
    at the places the axis's minor locator gives (without the major ticks' places), drawn with the
    axis. An axis keeps its ticks where this would not be the same picture: minor ticks labelled
    or with grid lines, an axis shared with another axes (they share the locator), an axes drawn
    without its axes, or one whose aspect moves its limits while it is drawn."""
    import matplotlib.ticker as mt
    from matplotlib.lines import Line2D

    for ax in fig.axes:
        if not ax.axison or (ax.get_aspect() != "auto" and ax.get_adjustable() == "datalim"):
            continue
        for axis, tick_transform, shared in ((ax.xaxis, ax.get_xaxis_transform, ax.get_shared_x_axes()),
                                             (ax.yaxis, ax.get_yaxis_transform, ax.get_shared_y_axes())):
            if (isinstance(axis.get_minor_locator(), mt.NullLocator) or not axis.get_visible()
                    or len(shared.get_siblings(ax)) > 1):
                continue
            low, high = sorted(axis.get_view_interval())
            places = [x for x in axis.get_minorticklocs() if low <= x <= high]
            if not places:
                continue
            tick = axis.get_minor_ticks(1)[0]
            if (tick.gridline.get_visible() or tick.label1.get_visible() and any(axis.get_minor_formatter().format_ticks(places))
                    or tick.label2.get_visible()):
                continue
            for mark, which, at in ((tick.tick1line, "tick1", 0), (tick.tick2line, "tick2", 1)):
                if not mark.get_visible():
                    continue
                line = Line2D([], [])
                line.update_from(mark)
                xy = (places, [at] * len(places)) if axis is ax.xaxis else ([at] * len(places), places)
                line.set_data(*xy)
                line.set_transform(tick_transform(which=which))
                line.set_clip_on(False)
                line.set_in_layout(False)   # as ticks: the tight box counts tick labels, not tick marks
                line.set_zorder(axis.get_zorder())   # drawn where the axis draws its ticks
                ax.add_artist(line)
            axis.set_minor_locator(mt.NullLocator())


def ticks_made_once(fig, changed: list) -> None:
    """Each axis of ``fig`` made to compute its ticks once for as long as what they depend on is
    unchanged (the view limits, the locators and formatters, the axes' place): matplotlib
    computes them again each time it measures an axis, its label, a neighbour's labels or the
    title's place, about nine times an axis in one draw and its measuring, which was a third of
    the drawing time. Each axis changed is appended to ``changed`` as it is; deleting its
    ``_update_ticks`` restores it."""
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if "_update_ticks" in vars(axis):
                continue   # made once already, by a caller (which restores it)
            compute, memo = axis._update_ticks, {}

            def update(axis=axis, compute=compute, memo=memo):
                state = (tuple(axis.get_view_interval()), tuple(axis.axes.bbox.bounds),
                         *(id(x) for x in (axis.major.locator, axis.minor.locator,
                                           axis.major.formatter, axis.minor.formatter)))
                if memo.get("state") != state:
                    memo["ticks"], memo["state"] = compute(), state
                return memo["ticks"]
            axis._update_ticks = update
            changed.append(axis)


def cropped(svg: str, fw: float, fh: float, x0: float, y0: float, w: float, h: float) -> str | None:
    """An SVG matplotlib wrote for a figure fw x fh points, shown from (x0, y0) at w x h: its size
    and view box changed, and the figure's background stretched over the whole view (what is
    drawn outside the figure, e.g. a title above it, sits on the background as with savefig).
    None if the SVG does not start as this expects."""
    def _num(x: float) -> str:   # as matplotlib's SVG backend writes a number: %f, trailing zeros dropped
        return f"{x:f}".rstrip("0").rstrip(".")

    head = f'width="{_num(fw)}pt" height="{_num(fh)}pt" viewBox="0 0 {_num(fw)} {_num(fh)}"'
    patch = f'<path d="M 0 {_num(fh)} \nL {_num(fw)} {_num(fh)} \nL {_num(fw)} 0 \nL 0 0 \nz'
    if head not in svg[:2000] or patch not in svg[:4000]:
        return None
    x1, y1 = x0 + w, y0 + h
    return (svg.replace(head, f'width="{_num(w)}pt" height="{_num(h)}pt" '
                              f'viewBox="{_num(x0)} {_num(y0)} {_num(w)} {_num(h)}"', 1)
            .replace(patch, f'<path d="M {_num(x0)} {_num(y1)} \nL {_num(x1)} {_num(y1)} \nL {_num(x1)} {_num(y0)} '
                            f'\nL {_num(x0)} {_num(y0)} \nz', 1))


def sweep_values(data, hw, model, names, var, values, unit, extra=None, to=""):
    """Evaluate quantities ``names`` with input ``var`` swept over ``values``: name -> array in ``to``.

    One scenario, evaluated over the whole array at once (the compiled, vectorised path)."""
    from ..evaluation.compiled import base_factor, declared
    from units import unit as parse_unit

    base = Scenario(data, hw, model, dict(extra or {}))
    out = base.sweep(names, var, values, unit or None)
    return {n: v * declared(n)[1] / base_factor(parse_unit(to)) for n, v in out.items()}


def shade_unfit(ax, base: Scenario, xmax: float) -> None:
    """Hatch the batches whose weights and KV cache do not fit in the chips' HBM, and say so."""
    try:
        cap = base.value("max_batch_capacity").to("sequence").magnitude
    except NotApplicable:
        cap = 0.0
    except MissingInput:
        return
    if cap >= xmax:
        return
    ax.axvspan(max(cap, 1e-9 if ax.get_xscale() == "log" else 0), xmax, facecolor="none", edgecolor="#b22",
               hatch="///", lw=0, alpha=0.35,
               label=f"does not fit in HBM (more than {cap:,.0f} sequences)" if cap >= 1
               else "does not fit in HBM at any batch")
    if cap >= 1:
        ax.axvline(cap, color="#b22", lw=0.9)


def legend_below(ax, ncol=2, **kw) -> None:
    """The legend under the axes, on its own ground: no curve can run through its entries."""
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=ncol, frameon=False, **kw)


def featured_batch(base: Scenario) -> tuple[float, str]:
    """The scenario's batch and how to call it ("the lecture's batch" when it is the lecture's default)."""
    b = base.value("batch").to("sequence").magnitude
    src = str(base.records["batch"].source)
    return b, ("the lecture's batch" if "lecture" in src and "--set" not in src else "the featured batch")
