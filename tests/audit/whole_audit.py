import pytest

from conftest import ROOT


@pytest.fixture(scope="session")
def whole_audit(data):
    """claims.yaml judged once for the files that only read its verdicts."""
    from chalkboard.audit import run_audit
    return run_audit(data, ROOT / "claims.yaml", "claims.yaml")
