"""Figures are drawn once and cropped (chalkboard/report/drawing.py, ``svg``): the picture must be the one
matplotlib's savefig(bbox_inches="tight") gives with its two draws. Both SVGs are rendered to pixels
by Typst (as the PDF renders them) and compared: only anti-aliasing may differ.

A first version of the one-draw path lost the line of every legend entry below the axes (matplotlib
trims lines to the figure before savefig's enlarged second draw): that differed by up to 241 of 255
in 210 pixels of a2a_vs_racks, and fails here."""
import io

import numpy as np
import pytest

from chalkboard.report import drawing, figures

HW, MODEL = "gb200-nvl72", "deepseek-v3"
AA = 64   # anti-aliasing moves an edge by a fraction of a pixel: measured at most 29 of 255


def _pixels(svg: str, tmp_path) -> np.ndarray:
    import typst
    from PIL import Image

    (tmp_path / "f.svg").write_text(svg)
    (tmp_path / "d.typ").write_text('#set page(width: auto, height: auto, margin: 0pt, fill: rgb("#ff00ff"))\n'
                                    '#image("f.svg")\n')
    png = typst.compile(str(tmp_path / "d.typ"), format="png", ppi=144)
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)


@pytest.mark.slow   # draws every figure twice (about 7 s); CI runs it
def test_a_figure_drawn_once_is_the_picture_savefig_draws_twice(data, tmp_path, monkeypatch):
    once = figures.draw_all(data, HW, MODEL, {}, {}, None)
    monkeypatch.setattr(drawing, "svg_drawn_once", lambda fig: None)   # savefig(bbox_inches="tight")
    twice = figures.draw_all(data, HW, MODEL, {}, {}, None)
    assert set(once) == set(twice) and len(once) >= 10
    for name in once:
        assert once[name][0] != twice[name][0], f"{name}: the one-draw path was not taken"
        a, b = _pixels(once[name][0], tmp_path), _pixels(twice[name][0], tmp_path)
        assert a.shape == b.shape, name   # the same size: cropped to the same area
        diff = np.abs(a - b).max(axis=2)
        assert (diff > AA).sum() == 0, f"{name}: {(diff > AA).sum()} pixels differ by up to {diff.max()}"
        assert not (a == [255, 0, 255]).all(axis=2).any(), f"{name}: no background behind part of it"


def test_minor_ticks_drawn_as_one_line_are_matplotlibs_on_shared_twin_and_bare_axes(tmp_path, monkeypatch):
    """drawing.minor_ticks_as_one_line replaces a log axis's minor tick objects by one line of
    marks: on axes that share an axis (they share its locator), a twin, an axes turned off and
    an axes with inward ticks, the picture must still be matplotlib's own."""
    def draw():
        fig, (top, bottom) = drawing.plt.subplots(2, 1, sharex=True, figsize=(4, 4))
        for ax in (top, bottom):
            ax.plot([1, 10, 1000], [1, 5, 2])
            ax.set_xscale("log")
        twin = bottom.twinx()
        twin.plot([1, 1000], [10, 1000], color="#d62728")
        twin.set_yscale("log")
        top.tick_params(which="minor", direction="in", length=4)
        bare = fig.add_axes([0.7, 0.7, 0.2, 0.2])
        bare.plot([1, 100], [1, 100])
        bare.set_xscale("log")
        bare.set_axis_off()
        return fig
    once = drawing.svg(draw())
    monkeypatch.setattr(drawing, "svg_drawn_once", lambda fig: None)   # savefig(bbox_inches="tight")
    twice = drawing.svg(draw())
    a, b = _pixels(once, tmp_path), _pixels(twice, tmp_path)
    assert a.shape == b.shape
    diff = np.abs(a - b).max(axis=2)
    assert (diff > AA).sum() == 0, f"{(diff > AA).sum()} pixels differ by up to {diff.max()}"
