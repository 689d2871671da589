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
