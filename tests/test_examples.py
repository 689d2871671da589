"""Every library example in the docs and the docstrings runs, as shown: the `>>>` lines of
docs/*.md and README.md, and of every docstring under chalkboard/ (the `$ python3 build.py` blocks
are checked by tests/test_readme.py)."""
import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@pytest.mark.parametrize("page", [p for p in PAGES if ">>> " in p.read_text(encoding="utf-8")],
                         ids=lambda p: p.name)
def test_the_examples_of_a_page_run_as_shown(page):
    result = doctest.testfile(str(page), module_relative=False, optionflags=FLAGS, encoding="utf-8")
    assert result.attempted and not result.failed


def _modules_with_examples():
    import chalkboard

    names = ["chalkboard"]
    for m in pkgutil.walk_packages(chalkboard.__path__, "chalkboard."):
        names.append(m.name)
    out = []
    for name in names:
        path = ROOT / (name.replace(".", "/") + ".py")
        init = ROOT / name.replace(".", "/") / "__init__.py"
        text = (path if path.exists() else init).read_text(encoding="utf-8") if (path.exists() or init.exists()) else ""
        if ">>> " in text:
            out.append(name)
    return out


def test_some_docstring_has_examples():
    assert "chalkboard.api" in _modules_with_examples()


@pytest.mark.parametrize("name", _modules_with_examples())
def test_the_examples_of_a_docstring_run_as_shown(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=FLAGS)
    assert result.attempted and not result.failed
