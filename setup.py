"""The package's build (pyproject.toml declares it; this file adds what a declaration cannot):
the code's packages, and the project's default data, templates/, lecture/ and build.py copied
into chalkboard/bundled/, where the installed program reads them (chalkboard/runtime/home.py)."""
import importlib.util
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
# chalkboard/runtime/home.py names the project's files the package carries (read alone: the build has
# none of the program's dependencies)
_spec = importlib.util.spec_from_file_location("home", HERE / "chalkboard" / "runtime" / "home.py")
home = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(home)
# the code: every folder of chalkboard/, derivations/ and units/ that holds a module (chalkboard/cli is
# a namespace package, which setuptools' own search would miss)
PACKAGES = sorted(".".join(d.relative_to(HERE).parts) for top in ("chalkboard", "derivations", "units")
                  for d in [HERE / top, *(HERE / top).rglob("*")]
                  if d.is_dir() and "__pycache__" not in d.parts and d.name != "bundled" and any(d.glob("*.py")))


SCRATCH = HERE / ".setuptools-build"   # setuptools' own files, not build/ (the report's output folder)


class BuildWithData(build_py):
    def run(self):
        super().run()
        target = Path(self.build_lib) / "chalkboard" / "bundled"
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for name in home.PROJECT_FILES:
            src = HERE / name
            if src.is_dir():
                shutil.copytree(src, target / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy2(src, target / name)


SCRATCH.mkdir(exist_ok=True)
setup(packages=PACKAGES,
      package_data={"derivations": ["solved.pickle"], "units": ["definitions.txt"], "chalkboard.validation": ["engine_fit.json"]},
      cmdclass={"build_py": BuildWithData},
      options={"build": {"build_base": str(SCRATCH)}, "egg_info": {"egg_base": str(SCRATCH)}})
