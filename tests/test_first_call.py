"""The library's first call in a fresh interpreter starts from SymPy's results shipped with the
project (derivations/solved.pickle) and solves nothing again: each of cb.scenario, cb.sweep,
cb.compare, cb.plan, cb.verdicts and cb.validate is run with sympy's solvers replaced by a
function that fails, against a copy of the data files whose cache folder is empty (so only the
shipped file can serve). Its time is measured by bench/speed.py, not here."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ("hardware.yaml", "models.yaml", "prices.yaml", "measurements.yaml", "claims.yaml")

PROBE = r"""
import sys
sys.path.insert(0, {src!r})
import sympy, sympy.solvers, sympy.solvers.solvers

def refused(*a, **k):
    raise AssertionError("sympy.solve called: the shipped results were not used")

sympy.solve = sympy.solvers.solve = sympy.solvers.solvers.solve = refused
import chalkboard as cb
root = {root!r}
{call}
print("ok")
"""

CALLS = {
    "scenario": "cb.scenario('h100-sxm', 'llama-3-70b', root=root).evaluate('step_time')",
    "sweep": "cb.sweep('step_time', 'h100-sxm', 'llama-3-70b', over={'batch': [1, 64]}, root=root)",
    "compare": "cb.compare(['step_time', 'cost_per_token'], hardware=['h100-sxm', 'b200'], models=['llama-3-70b'], root=root)",
    "plan": "cb.plan('llama-3-70b', 30, context=4096, root=root)",
    "verdicts": "cb.verdicts(root=root)",
    "validate": "cb.validate(root=root)",
}


@pytest.fixture(scope="module")
def data_only(tmp_path_factory):
    """The project's data files, templates and lecture notes, and no cache: what the library reads."""
    root = tmp_path_factory.mktemp("data-only")
    for f in DATA:
        shutil.copy(ROOT / f, root / f)
    for d in ("lecture", "templates"):
        shutil.copytree(ROOT / d, root / d)
    return root


def _pinned(package: str) -> str:
    """The version constraints.txt pins for ``package`` (what the shipped results are made with)."""
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        name, _, version = line.partition("==")
        if name.strip().lower() == package:
            return version.strip()
    return ""


# two calls in the default run (the set-up and the planner, which imports the most); every call in the slow set
@pytest.mark.parametrize("call", [c if c in ("scenario", "plan") else pytest.param(c, marks=pytest.mark.slow)
                                  for c in sorted(CALLS)])
def test_a_first_call_solves_nothing_again(data_only, call):
    import pint
    import sympy

    if (sympy.__version__, pint.__version__, sys.version_info[:2]) != (_pinned("sympy"), _pinned("pint"), (3, 11)):
        pytest.skip("the shipped results are made with the pinned SymPy and Pint on Python 3.11")
    code = PROBE.format(src=str(ROOT), root=str(data_only), call=CALLS[call])
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=data_only)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]
