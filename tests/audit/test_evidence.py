"""What a verdict's evidence is: independent only where an input a source gives can move it; one
point per published set-up, not every point of a sweep. Expected figures are worked by hand from the
sources named beside them."""
import pytest

from chalkboard.audit import ROUGHLY, run_audit
from conftest import ROOT


@pytest.fixture(scope="module")
def audit(data):
    return run_audit(data, ROOT / "claims.yaml", "claims.yaml")


def test_measured_batches_count_one_point_per_set_up(audit):
    v = next(v for v in audit.verdicts if v.claim.id == "measured-batch-2-to-3x-balance")
    # nine set-ups (chip x model x formats); the largest published batch of each over its balance batch
    # (measurements.yaml, TensorRT-LLM 0.6.1 on H100 and A100, 0.7 on H200, DeepSeek-R1 on B200 and H200,
    # Oracle's MI300X, JetStream bf16 and int8 on v5e, NIM on H100): sorted, the fifth is MI300X's 1.04
    assert len(v.values) == 9
    assert v.computed["median"] == pytest.approx(1.04, rel=5e-3)
    assert v.verdict == ROUGHLY      # 1.04 is outside 2-3 by ×/÷1.3 but within ×/÷2 (1-6)
