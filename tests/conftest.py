import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def data():
    from chalkboard.data import load
    return load(ROOT)


def run_cli(*args, root=ROOT):
    """Run ROOT/build.py as a user would, from that folder; returns the CompletedProcess."""
    return subprocess.run([sys.executable, str(root / "build.py"), *args], cwd=root,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def cli():
    return run_cli
