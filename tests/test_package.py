"""chalkboard as a package: `pip install .` gives a `chalkboard` command and `import chalkboard`
that work from any folder, reading the data bundled in the package and writing where the user
says (chalkboard/runtime/home.py, setup.py, pyproject.toml)."""
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT, run_cli

from chalkboard.cli.parser import PATHS
from chalkboard.runtime.home import PROJECT_FILES


def _requirements() -> set[str]:
    """requirements.txt's lines, comments and the constraints line left out."""
    lines = (ln.split("#")[0].strip() for ln in (ROOT / "requirements.txt").read_text().splitlines())
    return {ln for ln in lines if ln and not ln.startswith("-")}


def test_the_package_depends_on_what_requirements_txt_names():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = set(project["dependencies"]) | set(project["optional-dependencies"]["test"])
    assert declared == _requirements()
    assert project["requires-python"] == ">=3.11"
    assert project["scripts"] == {"chalkboard": "chalkboard.__main__:main"}


def test_every_default_file_the_program_reads_is_bundled():
    defaults = {v for k, v in PATHS.items() if k != "out"}
    assert defaults | {"templates", "lecture", "build.py"} == set(PROJECT_FILES)
    assert all((ROOT / f).exists() for f in PROJECT_FILES)


def _can_build_offline() -> bool:
    """setuptools can write a wheel without downloading anything (bdist_wheel from `wheel`, or
    built into setuptools from 70.1)."""
    try:
        import wheel  # noqa: F401
        return True
    except ImportError:
        import setuptools
        return tuple(int(x) for x in re.findall(r"\d+", setuptools.__version__)[:2]) >= (70, 1)


@pytest.mark.slow
def test_installed_command_works_from_any_folder(tmp_path):
    # a copy of the project, so that the build's scratch files stay out of the checkout
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", "build", ".cache", "__pycache__", ".pytest_cache",
                                                             ".setuptools-build", "*.egg-info", "tests", "bench"))
    dist = tmp_path / "dist"
    # the wheel is built without downloading where setuptools can (else pip fetches setuptools and
    # wheel into an isolated build, as `pip install .` does); the install takes the program's
    # dependencies from this interpreter's site-packages (a venv with --system-site-packages)
    isolation = ["--no-build-isolation"] if _can_build_offline() else []
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w", str(dist), str(src)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120)
    r = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                        *map(str, dist.glob("*.whl"))], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr

    user = tmp_path / "user"
    user.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")

    def chalkboard(*args):
        return subprocess.run([str(venv / "bin" / "chalkboard"), *args], cwd=user, env=env,
                              capture_output=True, text=True, timeout=300)

    # the same answer as the checkout's build.py, from the bundled data (measurements included)
    asked = ["eval", "step_time_expected", "--hardware", "h100-sxm", "--model", "llama-3-70b", "--set", "batch=64",
             "--set", "context=4096"]
    installed, checkout = chalkboard(*asked), run_cli(*asked)
    assert installed.returncode == 0, installed.stderr
    assert installed.stdout == checkout.stdout
    assert "fitted to" in installed.stdout   # the measurements were found

    r = chalkboard("--help")
    assert r.returncode == 0 and r.stdout.startswith("usage: chalkboard ")

    r = subprocess.run([str(venv / "bin" / "python"), "-c", "import chalkboard, derivations, units; "
                        "print(chalkboard.__file__); print(float(chalkboard.scenario('h100-sxm', 'llama-3-70b').evaluate('chips')))"],
                       cwd=user, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert Path(r.stdout.splitlines()[0]).is_relative_to(venv)

    # a user's own data file, named relative to the folder the command runs from
    (user / "mine.yaml").write_text((ROOT / "hardware.yaml").read_text().replace("3.35 TB/s", "6.7 TB/s", 1))
    r = chalkboard("eval", "hbm_bandwidth", "--hardware", "h100-sxm", "--hardware-file", "mine.yaml")
    assert r.returncode == 0 and r.stdout.startswith("hbm_bandwidth = 6.7 TB/s"), r.stdout + r.stderr
    r = chalkboard("check", "--hardware-file", "nothere.yaml")
    assert r.returncode == 2 and r.stderr.strip() == f"error: {user / 'nothere.yaml'}: file not found"

    # a build writes into the user's folder, its caches into the user's cache folder, nothing into the package
    package = next(venv.glob("lib/python*/site-packages/chalkboard"))
    before = sorted(p for p in package.rglob("*") if "__pycache__" not in p.parts)
    r = chalkboard("build", "--no-pdf", "--out", "report")
    assert r.returncode == 0, r.stderr
    assert (user / "report" / "report.html").is_file() and (user / "report" / "results.json").is_file()
    assert (tmp_path / "cache" / "chalkboard").is_dir()
    assert sorted(p for p in package.rglob("*") if "__pycache__" not in p.parts) == before
    r = chalkboard("build", "--no-pdf")   # no --out: build/ in the folder it is run from
    assert r.returncode == 0 and (user / "build" / "report.html").is_file(), r.stderr
