"""Seams made public: a name one module of the program imports from another is public (no
leading underscore), so a module's private names are its own to change. Third-party modules
are left out (matplotlib's private SVG helpers, which drawing.py reads, are named in KNOWN)."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = [*ROOT.glob("chalkboard/**/*.py"), *ROOT.glob("derivations/*.py"), *ROOT.glob("units/*.py"),
           ROOT / "build.py"]
OURS = ("chalkboard", "derivations", "units")
# third-party internals still read, each for a measured reason (report/drawing.py: one SVG draw)
KNOWN = {("matplotlib", "_path"), ("matplotlib.backends.backend_svg", "_short_float_fmt")}


def _private_imports(path: Path, text: str | None = None):
    tree = ast.parse(path.read_text(encoding="utf-8") if text is None else text)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            ours = node.level > 0 or (node.module or "").split(".")[0] in OURS
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    if ours or (node.module, alias.name) not in KNOWN:
                        yield f"{path.name}: from {'.' * node.level}{node.module or ''} import {alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if any(part.startswith("_") and not part.startswith("__") for part in alias.name.split(".")):
                    yield f"{path.name}: import {alias.name}"


def test_no_private_name_is_imported_across_modules():
    found = [hit for p in PROGRAM if "bundled" not in p.parts for hit in _private_imports(p)]
    assert not found, "\n".join(found)


def test_the_check_sees_a_private_import():
    here = ROOT / "chalkboard" / "probe.py"
    assert list(_private_imports(here, "from .data import _hidden\n"))
    assert list(_private_imports(here, "from derivations import _core\n"))
    assert not list(_private_imports(here, "from matplotlib import _path\nfrom .data import load\n"))
