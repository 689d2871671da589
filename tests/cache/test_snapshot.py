"""The declared registry kept between runs (derivations.load, core.Registry.snapshot/restore):
a later run of the same sources restores it instead of running the lecture modules, and must get
the same quantities, equations, sections, rules and tables."""
import subprocess
import sys
from dataclasses import fields

import pytest

from conftest import ROOT

import derivations
from derivations import REGISTRY as R
from derivations.core import Registry

_PROGRAM = """
import hashlib, pickle, sys
sys.path.insert(0, {root!r})
from derivations import core
import derivations
if len(sys.argv) > 2:   # hand in the snapshot, as chalkboard.cache.symcache.load does
    core.PRELOADED[derivations.SNAPSHOT] = open(sys.argv[1], "rb").read()
R = derivations.load()
if len(sys.argv) == 2:
    open(sys.argv[1], "wb").write(R.fresh[derivations.SNAPSHOT])
lecture = sorted(m for m in sys.modules if m.startswith("derivations.") and m[12:] in derivations.MODULES)
text = repr([(q.name, q.unit, q.origin, str(q.expr), q.section) for q in R.quantities.values()])
text += repr([(e.name, str(e.lhs), str(e.rhs)) for e in R.equations.values()])
text += repr(sorted((k, v[0].__qualname__, v[1]) for k, v in R.rules.items()))
text += repr(derivations.CHOICES) + repr(derivations.NUMBER_FORMATS)
print(len(lecture), hashlib.sha256(text.encode()).hexdigest())
"""


def test_a_restored_registry_is_the_declared_one():
    again, tables = Registry.restore(R.fresh[derivations.SNAPSHOT])
    assert list(again.quantities) == list(R.quantities) and len(R.quantities) > 300
    for name, q in R.quantities.items():
        r = again.quantities[name]
        for f in fields(q):
            assert getattr(r, f.name) == getattr(q, f.name), (name, f.name)
        assert again.by_symbol[q.sym] is r
    for name, e in R.equations.items():
        assert (again.equations[name].lhs, again.equations[name].rhs) == (e.lhs, e.rhs), name
    assert again.sections == R.sections
    assert again.rules == R.rules   # the same functions (derivations/rules.py), inputs and words
    for name in derivations._EXPORTS[1:]:
        assert tables[name] == getattr(derivations, name), name
    assert again.closed_form("step_time") == R.closed_form("step_time")


def test_restoring_runs_no_lecture_module_and_gives_what_declaring_gives(tmp_path):
    blob = tmp_path / "snapshot"
    prog = _PROGRAM.format(root=str(ROOT))
    declared = subprocess.run([sys.executable, "-c", prog, str(blob)], capture_output=True, text=True, check=True)
    restored = subprocess.run([sys.executable, "-c", prog, str(blob), "restore"], capture_output=True, text=True,
                              check=True)
    n_declared, digest_declared = declared.stdout.split()
    n_restored, digest_restored = restored.stdout.split()
    assert int(n_declared) == len(derivations.MODULES) and int(n_restored) == 0
    assert digest_restored == digest_declared


@pytest.mark.slow   # declares everything again; test_restoring_runs_no_lecture_module_and_gives_what_declaring_gives declares once in the default run
def test_an_unreadable_snapshot_is_declared_again(tmp_path):
    blob = tmp_path / "snapshot"
    blob.write_bytes(b"not a snapshot")
    prog = _PROGRAM.format(root=str(ROOT))
    out = subprocess.run([sys.executable, "-c", prog, str(blob), "restore"], capture_output=True, text=True, check=True)
    assert int(out.stdout.split()[0]) == len(derivations.MODULES)
