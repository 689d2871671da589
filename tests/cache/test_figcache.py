"""Figures kept between builds (chalkboard/cache/figcache.py): a kept figure is used only while
everything it read is as it was, so a build with the cache draws the same figures as one without.
Each edit below is checked both ways: which figures are drawn again, and that every figure equals
the one drawn with no cache at all."""
from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from chalkboard import FEATURED_HARDWARE as HW, FEATURED_MODEL as MODEL
from chalkboard.build import VALIDATION_FIGURES
from chalkboard.data.loader import load
from chalkboard.data.loader import Data
from chalkboard.cache.figcache import (FIELDS, MISS, PRESENT, SETTINGS, TABLES, VALUE, WHOLE, FigureCache, _Traced, code_digest,
                                      read_digest, traced)
from chalkboard.report.figure_process import Drawing
from chalkboard.report.figures import FIGURES, PER_CHIP

ROOT = Path(__file__).resolve().parents[2]
OTHER_CHIP = "h100-sxm"   # not the featured chip


@pytest.fixture(scope="module")
def data():
    return load(ROOT)


def scaled(entry, field: str, factor: float):
    """``entry`` with its ``field`` multiplied by ``factor`` (an edit to one number of the data)."""
    v = entry.values[field]
    return dataclasses.replace(entry, values={**entry.values, field: dataclasses.replace(v, quantity=v.quantity * factor)})


def edited(data, table: str, entry_id: str, field: str, factor: float = 1.5):
    tab = getattr(data, table)
    return dataclasses.replace(data, **{table: {**tab, entry_id: scaled(tab[entry_id], field, factor)}})


def drawn_with(folder: Path, data, overrides=None, refs=None):
    """(the figures, the names drawn rather than taken from the cache) for one build's drawing
    with the cache in ``folder``, the cache saved afterwards as the build saves it."""
    kept = FigureCache(folder, code="this program")
    d = Drawing(data, HW, MODEL, overrides, None, refs, kept)
    figures = d.wait()
    kept.save()
    return figures, set(d.drawn)


def without_cache(data, overrides=None, refs=None):
    return Drawing(data, HW, MODEL, overrides, None, refs).wait()


@pytest.mark.slow
def test_a_figure_is_drawn_again_exactly_when_what_it_read_changed(data, tmp_path):
    first, drawn = drawn_with(tmp_path, data)
    assert drawn == set(FIGURES) and first == without_cache(data)

    again, drawn = drawn_with(tmp_path, data)
    assert drawn == set() and again == first            # nothing changed: nothing drawn

    other = edited(data, "hardware", OTHER_CHIP, "hbm_bandwidth")
    got, drawn = drawn_with(tmp_path, other)
    assert drawn == set(PER_CHIP)                        # only the figures that list every chip
    assert got == without_cache(other)
    assert any(got[n] != first[n] for n in PER_CHIP)     # and the edit shows in them

    back, drawn = drawn_with(tmp_path, data)
    assert drawn == set() and back == first              # the edit undone: both versions are kept

    added = dataclasses.replace(other, hardware={**other.hardware, "my-chip": dataclasses.replace(
        other.hardware[OTHER_CHIP], id="my-chip", name="a chip of my own")})
    got, drawn = drawn_with(tmp_path, added)
    assert drawn == set(PER_CHIP)                        # a chip added: the lists of every chip
    assert got == without_cache(added)

    featured = edited(other, "hardware", HW, "hbm_bandwidth")
    got, drawn = drawn_with(tmp_path, featured)
    assert drawn >= {"step_time_vs_batch", "context_sweep", *PER_CHIP}
    assert got == without_cache(featured)

    model = edited(featured, "models", MODEL, "params_active", 0.9)
    got, drawn = drawn_with(tmp_path, model)
    # each value of an entry is traced on its own: a figure that never read the model's active
    # parameters (the chips by year, each chip's pipelining) is kept, and is what a drawing gives
    assert "step_time_vs_batch" in drawn and not drawn >= {"hardware_by_year", "pipelining_by_chip"}
    assert got == without_cache(model)


@pytest.mark.slow
def test_the_arguments_are_part_of_a_figures_key(data, tmp_path):
    drawn_with(tmp_path, data)
    got, drawn = drawn_with(tmp_path, data, {"context": "4096"})
    assert drawn == set(FIGURES) and got == without_cache(data, {"context": "4096"})
    from units import Quantity
    got, drawn = drawn_with(tmp_path, data, None, {"drain_time": Quantity(30, "ms")})
    assert "hardware_by_year" in drawn and got == without_cache(data, None, {"drain_time": Quantity(30, "ms")})


def test_the_programs_files_are_part_of_every_key(tmp_path):
    for rel in ("chalkboard", "derivations", "units"):
        shutil.copytree(ROOT / rel, tmp_path / rel, ignore=shutil.ignore_patterns("__pycache__"))
    before = code_digest(tmp_path)
    assert code_digest(tmp_path) == before
    path = tmp_path / "chalkboard" / "report" / "figures.py"
    path.write_text(path.read_text() + "\n# edited\n")
    assert code_digest(tmp_path) != before


def test_a_kept_figure_from_another_program_is_not_used(data, tmp_path):
    kept = FigureCache(tmp_path, code="one program")
    key = kept.key("step_time_vs_batch", HW, MODEL)
    kept.put(key, {}, ("<svg/>", HW))
    kept.save()
    assert FigureCache(tmp_path, code="one program").lookup(key, data) == ("<svg/>", HW)
    other = FigureCache(tmp_path, code="another program")
    assert other.lookup(other.key("step_time_vs_batch", HW, MODEL), data) is MISS


def test_an_unreadable_kept_figure_is_drawn_again(data, tmp_path):
    kept = FigureCache(tmp_path, code="x")
    key = kept.key("step_time_vs_batch")
    (tmp_path / ".cache" / "figures").mkdir(parents=True)
    (tmp_path / ".cache" / "figures" / f"{key}-0123.pickle").write_bytes(b"not a pickle")
    assert kept.lookup(key, data) is MISS


def test_the_traced_tables_record_what_is_read(data):
    log: set = set()
    t = traced(data, log)
    t.hardware[HW]
    t.models.get(MODEL)
    _ = "no-such-chip" in t.hardware
    t.models.get("no-such-model")
    # an entry looked up: its fields but its values; a test of presence: that alone; an absent one
    assert log == {("hardware", HW, FIELDS), ("models", MODEL, FIELDS), ("hardware", "no-such-chip", PRESENT),
                   ("models", "no-such-model")}
    log.clear()
    chip = t.hardware[HW]
    chip.values["hbm_bandwidth"]
    _ = "flops_fp4" in chip
    chip.values.get("no-such-field")
    assert log == {("hardware", HW, FIELDS), ("hardware", HW, VALUE, "hbm_bandwidth"),
                   ("hardware", HW, VALUE, "flops_fp4"), ("hardware", HW, VALUE, "no-such-field")}
    assert chip.values["hbm_bandwidth"] is data.hardware[HW].values["hbm_bandwidth"] and chip.name == data.hardware[HW].name
    for whole in (list, len, lambda d: d.keys(), lambda d: d.items(), lambda d: dict(d), lambda d: d.copy()):
        log.clear()
        whole(chip.values)
        assert ("hardware", HW) in log, whole   # all its values seen: the whole entry
    for whole in (list, len, lambda d: d.keys(), lambda d: d.values(), lambda d: d.items(), lambda d: {**d},
                  lambda d: dict(d), lambda d: d.copy()):
        log.clear()
        whole(t.prices)
        assert ("prices", WHOLE) in log, whole   # (a copy also looks each entry up)
    assert isinstance(t.hardware, _Traced) and t.hardware == data.hardware


def test_each_read_digests_what_it_read_and_nothing_else(data):
    """The digest of a read changes with what it read (one value of a chip, its other fields,
    whether it is there) and not with anything else."""
    import dataclasses

    def edited(field, factor):
        chip = data.hardware[HW]
        v = chip.values[field]
        values = {**chip.values, field: dataclasses.replace(v, quantity=v.quantity * factor)}
        return dataclasses.replace(data, hardware={**data.hardware, HW: dataclasses.replace(chip, values=values)})

    reads = [("hardware", HW, VALUE, "hbm_bandwidth"), ("hardware", HW, VALUE, "hbm_capacity"),
             ("hardware", HW, FIELDS), ("hardware", HW, PRESENT), ("hardware", HW), ("hardware", WHOLE)]
    before = {r: read_digest(data, r) for r in reads}
    after = {r: read_digest(edited("hbm_bandwidth", 2), r) for r in reads}
    assert {r for r in reads if before[r] != after[r]} == {reads[0], ("hardware", HW), ("hardware", WHOLE)}
    renamed = dataclasses.replace(data, hardware={**data.hardware, HW: dataclasses.replace(data.hardware[HW], name="x")})
    assert read_digest(renamed, ("hardware", HW, FIELDS)) != before[("hardware", HW, FIELDS)]
    assert read_digest(renamed, reads[0]) == before[reads[0]]
    gone = dataclasses.replace(data, hardware={k: v for k, v in data.hardware.items() if k != HW})
    assert all(read_digest(gone, r) != before[r] for r in reads)


def test_every_field_of_the_data_is_traced_or_keyed():
    """A field added to Data must be read through a traced table or be part of every figure's
    key; otherwise a figure that read it would be kept across a change to it."""
    assert {f.name for f in dataclasses.fields(Data)} == set(TABLES) | set(SETTINGS)
    assert not set(TABLES) & set(SETTINGS)


@pytest.mark.slow
def test_a_build_with_every_figure_kept_writes_the_same_files(tmp_path):
    """Two builds of a copy of the project: the first draws every figure and keeps it, the second
    takes every figure from .cache/figures; both write the same files, byte for byte."""
    import filecmp
    import subprocess
    import sys

    proj = tmp_path / "project"
    shutil.copytree(ROOT, proj, ignore=shutil.ignore_patterns(".git", "build", "__pycache__", ".pytest_cache",
                                                              "figures"))
    for n in ("first", "second"):
        r = subprocess.run([sys.executable, "build.py", "build", "--no-pdf", "--out", str(tmp_path / n)],
                           cwd=proj, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        if n == "first":
            assert len(list((proj / ".cache" / "figures").glob("*.pickle"))) == len(FIGURES) + len(VALIDATION_FIGURES)
            assert "kept from an earlier build" not in r.stdout
        else:
            assert f"{len(FIGURES) + len(VALIDATION_FIGURES)} figures ({len(FIGURES) + len(VALIDATION_FIGURES)} kept from an earlier build" in r.stdout, r.stdout
    (tmp_path / "first" / ".chalkboard-stamp").unlink()
    (tmp_path / "second" / ".chalkboard-stamp").unlink()
    cmp = filecmp.dircmp(tmp_path / "first", tmp_path / "second")
    assert not cmp.diff_files and not cmp.left_only and not cmp.right_only
    assert not filecmp.dircmp(tmp_path / "first" / "figures", tmp_path / "second" / "figures").diff_files


def test_a_program_edited_during_the_build_keeps_no_figure(tmp_path):
    """The program's digest is taken when the build starts, before its modules are imported, and
    again when the figures are saved: if a file changed in between, what was drawn is not what
    the digest says, and nothing is kept."""
    for rel in ("chalkboard", "derivations", "units"):
        shutil.copytree(ROOT / rel, tmp_path / rel, ignore=shutil.ignore_patterns("__pycache__"))
    kept = FigureCache(tmp_path, code_digest(tmp_path), recheck=True)
    kept.put(kept.key("step_time_vs_batch"), {}, ("<svg/>", HW))
    path = tmp_path / "chalkboard" / "report" / "figures.py"
    path.write_text(path.read_text() + "\n# edited during the build\n")
    kept.save()
    folder = tmp_path / ".cache" / "figures"
    assert not folder.exists() or not list(folder.glob("*.pickle"))
    again = FigureCache(tmp_path, code_digest(tmp_path), recheck=True)
    again.put(again.key("step_time_vs_batch"), {}, ("<svg/>", HW))
    again.save()
    assert len(list((tmp_path / ".cache" / "figures").glob("*.pickle"))) == 1


def test_every_matplotlibrc_matplotlib_may_read_is_in_the_digest(tmp_path, monkeypatch):
    for rel in ("chalkboard", "derivations", "units"):
        shutil.copytree(ROOT / rel, tmp_path / rel, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(tmp_path)
    for var in ("MATPLOTLIBRC", "MPLCONFIGDIR", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    before = code_digest(tmp_path)
    for var, folder in (("XDG_CONFIG_HOME", "xdg"), ("MPLCONFIGDIR", "mplconfig")):
        (tmp_path / folder / ("matplotlib" if var == "XDG_CONFIG_HOME" else "")).mkdir(parents=True, exist_ok=True)
        monkeypatch.setenv(var, str(tmp_path / folder))
        rc = tmp_path / folder / ("matplotlib/matplotlibrc" if var == "XDG_CONFIG_HOME" else "matplotlibrc")
        rc.write_text("lines.linewidth: 4\n")
        assert code_digest(tmp_path) != before, var
        rc.unlink()
        assert code_digest(tmp_path) == before, var
    (tmp_path / "matplotlibrc").write_text("lines.linewidth: 4\n")   # in the folder the build runs in
    assert code_digest(tmp_path) != before


def test_what_a_figure_read_digests_the_same_in_a_copy_of_the_data_and_differs_when_a_value_does():
    """The figure process on standby is sent the data pickled: the copy holds the same values in
    other objects (a dataclass's keys interned, strings no longer shared), and a figure it draws
    must be found by the next build, which digests its own data (a pickle of each entry differs)."""
    import copy as copies
    import pickle

    from chalkboard.cache.figcache import read_digest

    data = load(ROOT)
    copy = pickle.loads(pickle.dumps(data, protocol=5))
    assert pickle.dumps(data.hardware[HW], protocol=4) != pickle.dumps(copy.hardware[HW], protocol=4)
    for table in TABLES:
        for key in [WHOLE, *getattr(data, table), "no-such-id"]:
            assert read_digest(data, (table, key)) == read_digest(copy, (table, key)), (table, key)
    edited = copies.deepcopy(data)
    value = edited.hardware[HW].values["hbm_bandwidth"]
    edited.hardware[HW].values["hbm_bandwidth"] = dataclasses.replace(value, quantity=value.quantity * 1.0001)
    for read in (("hardware", HW), ("hardware", WHOLE)):
        assert read_digest(edited, read) != read_digest(data, read)
    assert read_digest(edited, ("models", WHOLE)) == read_digest(data, ("models", WHOLE))


def test_a_dataclass_without_a_dict_is_digested_by_its_fields():
    from chalkboard.cache.figcache import plain

    @dataclasses.dataclass(slots=True)
    class Slotted:
        a: int
        b: str

    assert plain(Slotted(1, "x")) == ("test_a_dataclass_without_a_dict_is_digested_by_its_fields.<locals>.Slotted",
                                      ("a", 1), ("b", "x"))
    assert plain(Slotted(1, "x")) != plain(Slotted(2, "x"))


def test_a_build_after_the_shared_one_takes_every_figure_from_the_cache(report_build, cli, tmp_path):
    """The shared build's figures are drawn by the figure process on standby, which is sent the
    data pickled; what it keeps must be found by the next build with the same inputs (a digest of
    the copy's pickles once made every figure be drawn again)."""
    r = cli("--force", "--no-pdf", "--out", str(tmp_path / "again"))
    assert r.returncode == 0, r.stderr
    n = len(FIGURES) + len(VALIDATION_FIGURES)   # and the validation figures
    assert f"{n} figures ({n} kept from an earlier build" in r.stdout, r.stdout


def test_work_shared_by_figures_is_done_once_and_keeps_their_reads():
    """once_per_data: the second figure that needs the same work takes it without computing it,
    and records what it read as if it had (its key stays whole); changed data computes it again."""
    import dataclasses

    from chalkboard.cache.figcache import PRESENT, once_per_data, traced
    from chalkboard.data.loader import load

    data = load(ROOT)
    calls = []

    def work(d):
        calls.append(1)
        return "h100-sxm" in d.hardware
    first, second = set(), set()
    assert once_per_data(traced(data, first), ("test", 1), work) is True
    assert once_per_data(traced(data, second), ("test", 1), work) is True
    assert len(calls) == 1 and first == second and ("hardware", "h100-sxm", PRESENT) in second
    fewer = dataclasses.replace(data, hardware={k: v for k, v in data.hardware.items() if k != "h100-sxm"})
    assert once_per_data(fewer, ("test", 1), work) is False and len(calls) == 2
