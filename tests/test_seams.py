"""Seams made public: a name one module of the program imports from another, or reads as an
attribute of a module of ours it imported (``printers._node``), is public (no leading underscore),
so a module's private names are its own to change. Third-party modules
are left out (matplotlib's private path writer, which drawing.py's SVG renderer calls, is named in KNOWN)."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = [*ROOT.glob("chalkboard/**/*.py"), *ROOT.glob("derivations/*.py"), *ROOT.glob("units/*.py"),
           ROOT / "build.py"]
OURS = ("chalkboard", "derivations", "units")
# third-party internals still read, each for a measured reason (report/drawing.py: one SVG draw)
KNOWN = {("matplotlib", "_path")}


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


def _private_attributes(path: Path, text: str | None = None):
    """``M._x`` where M is a module of ours that ``path`` imported (``from . import printers as P``)."""
    tree = ast.parse(path.read_text(encoding="utf-8") if text is None else text)
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level > 0 or (node.module or "").split(".")[0] in OURS):
            modules.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            modules.update(a.asname or a.name.split(".")[0] for a in node.names if a.name.split(".")[0] in OURS)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            yield f"{path.name}:{node.lineno}: {node.value.id}.{node.attr}"


def test_no_private_name_is_imported_across_modules():
    found = [hit for p in PROGRAM if "bundled" not in p.parts for hit in _private_imports(p)]
    assert not found, "\n".join(found)


def test_no_private_name_is_read_through_another_module():
    found = [hit for p in PROGRAM if "bundled" not in p.parts for hit in _private_attributes(p)]
    assert not found, "\n".join(found)


def test_the_check_sees_a_private_import():
    here = ROOT / "chalkboard" / "probe.py"
    assert list(_private_imports(here, "from .data import _hidden\n"))
    assert list(_private_imports(here, "from derivations import _core\n"))
    assert not list(_private_imports(here, "from matplotlib import _path\nfrom .data import load\n"))
    assert list(_private_attributes(here, "from . import printers as P\nP._node(1)\n"))
    assert not list(_private_attributes(here, "from . import printers as P\nimport re\nP.expr_tree(1); re._x\n"))
