"""The edit loop's rebuild redoes only what an edit reaches (chalkboard/cache/incremental.py), and
writes what a fresh build of the same inputs writes, byte for byte."""
import dataclasses
import filecmp
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT, run_cli
from chalkboard.cache import incremental
from chalkboard.cache.figcache import WHOLE, traced
from chalkboard.data.loader import load
from chalkboard.evaluation.results import evaluate_all
from chalkboard.data.featured import FEATURED_HARDWARE, FEATURED_MODEL

OTHER_CHIP = "h100-sxm"


def _edited(data, table: str, eid: str, field: str, factor: float):
    """``data`` with one value of one entry scaled by ``factor`` (a new Data; ``data`` unchanged)."""
    entries = dict(getattr(data, table))
    entry = entries[eid]
    old = entry.values[field]
    value = dataclasses.replace(old, quantity=old.quantity * factor, text=f"{old.text} x {factor}")
    entries[eid] = dataclasses.replace(entry, values={**entry.values, field: value})
    return dataclasses.replace(data, **{table: entries})


@pytest.fixture(scope="module")
def data():
    return load(ROOT)


def test_a_pair_reads_no_other_chip_or_model(data):
    """What incremental.evaluate relies on: a pair evaluated alone reads, of the chips and models,
    its own chip and model only (the tables evaluate_all goes through aside)."""
    for hid in data.hardware:
        for mid in data.models:
            log: set = set()
            alone = dataclasses.replace(data, hardware={hid: data.hardware[hid]}, models={mid: data.models[mid]})
            evaluate_all(traced(alone, log), {}, vectorised=False)
            other = {r for r in log if r[0] in ("hardware", "models") and r[1] not in (hid, mid, WHOLE)}
            assert not other, (hid, mid, sorted(other))


def test_an_edit_to_one_chip_evaluates_its_pairs_again_and_keeps_the_others(data, monkeypatch):
    kept = incremental.Kept()
    kept.use(data)
    incremental.evaluate(kept, data, {})
    edited = _edited(data, "hardware", FEATURED_HARDWARE, "hbm_bandwidth", 0.8)
    seen = []
    from chalkboard.evaluation import results as results_module
    real = results_module.evaluate_all

    def counting(part, overrides, *a, **k):
        seen.append(sorted(part.hardware))
        return real(part, overrides, *a, **k)
    monkeypatch.setattr(results_module, "evaluate_all", counting)   # (imported where it is called)
    kept.use(edited)
    got = incremental.evaluate(kept, edited, {})
    assert seen == [[FEATURED_HARDWARE]]   # the edited chip's pairs only
    monkeypatch.undo()
    full = evaluate_all(edited, {})
    assert list(got.values) == list(full.values)   # the same pairs in the same order
    for f in ("values", "missing", "inputs", "fit", "flags", "formats"):
        assert getattr(got, f) == getattr(full, f), f
    assert (got.count_ok, got.count_na, got.errors) == (full.count_ok, full.count_na, full.errors)
    assert kept.get("pair", ((OTHER_CHIP, FEATURED_MODEL), incremental.digest([]))) is not incremental.MISS
    assert got.values[(FEATURED_HARDWARE, FEATURED_MODEL)] != evaluate_all(data, {}).values[
        (FEATURED_HARDWARE, FEATURED_MODEL)]   # the edited chip's pairs follow the edit


def test_a_kept_part_is_made_again_only_when_what_it_read_changes(data):
    kept = incremental.Kept()
    calls = []

    def bandwidth(d, chip):
        calls.append(chip)
        return d.hardware[chip].values["hbm_bandwidth"].text

    kept.use(data)
    first = kept.traced("test", FEATURED_HARDWARE, bandwidth, FEATURED_HARDWARE)
    kept.use(_edited(data, "hardware", FEATURED_HARDWARE, "hbm_capacity", 2.0))   # a value it did not read
    assert kept.traced("test", FEATURED_HARDWARE, bandwidth, FEATURED_HARDWARE) == first and len(calls) == 1
    kept.use(_edited(data, "hardware", OTHER_CHIP, "hbm_bandwidth", 2.0))         # another chip's
    assert kept.traced("test", FEATURED_HARDWARE, bandwidth, FEATURED_HARDWARE) == first and len(calls) == 1
    kept.use(_edited(data, "hardware", FEATURED_HARDWARE, "hbm_bandwidth", 2.0))  # what it read
    assert kept.traced("test", FEATURED_HARDWARE, bandwidth, FEATURED_HARDWARE) == first + " x 2.0"
    assert len(calls) == 2
    kept.use(dataclasses.replace(data, default_price="another"))                  # a setting: in every key
    kept.traced("test", FEATURED_HARDWARE, bandwidth, FEATURED_HARDWARE)
    assert len(calls) == 3


def test_the_kept_audit_is_the_audit(data):
    """incremental.audit gives what run_audit gives, after an edit too, and redoes only the
    claims that read what was edited."""
    from chalkboard.audit import read_claims, run_audit

    path = ROOT / "claims.yaml"
    kept = incremental.Kept()
    for d in (data, _edited(data, "hardware", FEATURED_HARDWARE, "hbm_bandwidth", 0.8)):
        kept.use(d)
        claims = read_claims(d, path, "claims.yaml")
        audit, new = incremental.audit(kept, claims)
        incremental.take(kept, new)
        assert audit.for_report() == run_audit(d, path, "claims.yaml", None, claims).for_report()
        redone = [k[0] for k in new]
    verdicts, values = redone.count("verdict"), redone.count("value")
    assert 0 < verdicts < len(claims.claims) / 2, verdicts
    # of the claims redone, only the entries that read the edited chip are evaluated again
    kept_values = sum(1 for k in kept.parts if k[0] == "value")
    assert 0 < values < kept_values / 2, (values, kept_values)


_BANDWIDTH = re.compile(rf"(\n  {re.escape(FEATURED_HARDWARE)}:\n(?:    .*\n)*?    hbm_bandwidth: {{value: \")([^\"]*)\"")


def _wait(what, predicate, proc, timeout=240):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        assert proc.poll() is None, f"watch ended (status {proc.returncode}) while waiting for {what}"
        time.sleep(0.1)
    raise AssertionError(f"no {what} within {timeout} s")


def _edit_hardware(proj):
    """The featured chip's HBM bandwidth: its pairs evaluated again and the figures that show them drawn."""
    hardware = proj / "hardware.yaml"
    hardware.write_text(_BANDWIDTH.sub(lambda m: m.group(1) + "6.5 TB/s\"", hardware.read_text(), count=1))


def _edit_model(proj):
    """One more layer for the featured model."""
    models = proj / "models.yaml"
    src = models.read_text()
    at = src.index(f"\n  {FEATURED_MODEL}:\n")
    layers = re.compile(r"(    layers: \{value: \")(\d+)").search(src, at)
    models.write_text(src[:layers.start(2)] + str(int(layers.group(2)) + 1) + src[layers.end(2):])


def _rebuilds_write_what_fresh_builds_write(tmp_path, edits):
    """Under a running watch, each edit of ``edits`` made in turn: after each, the output is the
    output of a fresh `build.py` of the edited files (its figures drawn anew)."""
    proj = tmp_path / "proj"
    shutil.copytree(ROOT, proj, ignore=shutil.ignore_patterns(".git", "build", "__pycache__", ".pytest_cache"))
    out, stdout = tmp_path / "watched", tmp_path / "stdout"
    with open(stdout, "w") as so:
        proc = subprocess.Popen([sys.executable, "build.py", "watch", "--no-pdf", "--out", str(out)], cwd=proj,
                                stdout=so, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def lines():
        return [line for line in stdout.read_text().splitlines() if "page and results.json in" in line]

    def same_as_fresh(n):
        shutil.rmtree(proj / ".cache" / "figures", ignore_errors=True)   # drawn anew
        fresh = tmp_path / f"fresh{n}"
        r = run_cli("--no-pdf", "--force", "--out", str(fresh), root=proj)
        assert r.returncode == 0, r.stderr
        for name in ("report.html", "results.json", "report.typ"):
            assert (out / name).read_bytes() == (fresh / name).read_bytes(), name
        figures = filecmp.dircmp(out / "figures", fresh / "figures")
        assert not figures.diff_files and not figures.left_only and not figures.right_only

    try:
        _wait("the first build", lambda: len(lines()) == 1, proc)
        for n, edit in enumerate(edits, start=1):
            edit(proj)
            _wait("the rebuild", lambda: len(lines()) == n + 1, proc)
            if edit is _edit_hardware:
                assert "hardware.yaml changed" in lines()[-1] and "figures drawn" in lines()[-1]
            same_as_fresh(n)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise


@pytest.mark.slow   # a watch, a rebuild and a fresh build drawing every figure
def test_a_rebuild_after_an_edit_writes_what_a_fresh_build_writes(tmp_path):
    """Under a running watch, the featured chip's HBM bandwidth edited: the output is the output of
    a fresh `build.py` of the edited files. (A second edit under the same watch, a model's, is
    test_two_rebuilds_in_a_row_write_what_fresh_builds_write.) The default run keeps what a rebuild
    keeps in test_an_edit_to_one_chip_evaluates_its_pairs_again_and_keeps_the_others and
    test_the_kept_audit_is_the_audit, and a rebuild's new numbers in tests/cli/test_watch.py."""
    _rebuilds_write_what_fresh_builds_write(tmp_path, [_edit_hardware])


@pytest.mark.slow
def test_two_rebuilds_in_a_row_write_what_fresh_builds_write(tmp_path):
    """The chip's edit, then a model's under the same watch: each rebuild writes what a fresh build
    writes. Run by CI's slow set; by default test_a_rebuild_after_an_edit_writes_what_a_fresh_build_writes
    covers the first rebuild, and test_an_edit_to_one_chip_evaluates_its_pairs_again_and_keeps_the_others
    and test_the_kept_audit_is_the_audit what a rebuild keeps."""
    _rebuilds_write_what_fresh_builds_write(tmp_path, [_edit_hardware, _edit_model])


def test_a_file_read_again_unchanged_is_not_parsed_again(tmp_path, monkeypatch):
    from chalkboard.data import loader as data_module

    monkeypatch.setattr(data_module, "PARSED", {})
    parsed = []
    real = data_module.yaml.load
    monkeypatch.setattr(data_module.yaml, "load", lambda text, Loader: parsed.append(text) or real(text, Loader=Loader))
    path = tmp_path / "x.yaml"
    path.write_text("a: {b: [1, 2]}\n")
    first = data_module.read_yaml(path, "x.yaml")
    first["a"]["b"].append(3)   # what the reader does with it is its own
    assert data_module.read_yaml(path, "x.yaml") == {"a": {"b": [1, 2]}} and len(parsed) == 1
    path.write_text("a: {b: [1, 2, 4]}\n")
    assert data_module.read_yaml(path, "x.yaml") == {"a": {"b": [1, 2, 4]}} and len(parsed) == 2
    path.write_text("a: {b: [1, 2, 4]\n")   # a YAML error: its line, as when nothing is kept
    with pytest.raises(data_module.DataError, match="x.yaml: YAML syntax error"):
        data_module.read_yaml(path, "x.yaml")
