"""Symmetric judging: a verdict is tried under the same reasonable sweeps whichever way it first came
out, and one that a sweep turns to the other side -- a hold broken, or a miss made good -- is
"depends", naming the choices on each side. Expected figures are worked by hand from the data files
named beside them."""
import pytest

from chalkboard.audit import DEPENDS, FAILS, HOLDS, ND, INCONCLUSIVE, evaluate_claim
from chalkboard.audit.rules import REASONABLE_SWEEPS, verdict_side
from test_audit import CLAIMS_HEAD as HEAD, _claims as audit_claims

# DeepSeek-V3 on the GB200 NVL72: the KV fetch equals the compute near 2.7K tokens (its MLA cache,
# 70.3 kB/token, models.yaml), so "context over the crossover above 1" holds at the default 8,192
# tokens and fails at 1,024
KV_ABOVE = """
claims:
  - id: kv-above-compute
    where: "004_c06f65e5a6f00c72.txt:81"
    quote: "weight fetches"
    claim: "The KV fetch outweighs the compute."
    kind: derived
    threshold: "The crossover (1)."
    scope: gb200-nvl72
    model: deepseek-v3
    expr: context/context_crossover
    claimed: '> 1'
"""


def test_a_hold_that_a_reasonable_sweep_breaks_depends(tmp_path, data):
    cs, chips = audit_claims(tmp_path, data, KV_ABOVE, head=HEAD)
    v = evaluate_claim(data, cs["kv-above-compute"], chips)
    assert v.as_set == HOLDS
    assert any(s.startswith("context 1,024 tokens: does not hold") for s in v.swept)
    assert v.verdict == DEPENDS
    # the card names both sides: as set (and the larger contexts) it holds, at 1,024 tokens it does not
    assert "holds as set and with context 32,768 tokens" in v.decision
    assert "breaks it: context 1,024 tokens: does not hold" in v.decision


def test_a_value_the_claim_sets_is_its_premise_and_is_not_swept(tmp_path, data):
    body = KV_ABOVE.replace("    claimed: '> 1'", "    claimed: '> 1'\n    set: {context: 8192 token/sequence, format: fp8, kv_format: bf16}")
    cs, chips = audit_claims(tmp_path, data, body, head=HEAD)
    v = evaluate_claim(data, cs["kv-above-compute"], chips)
    assert not any(s.startswith("context ") for s in v.swept)
    assert v.verdict == HOLDS, v.decision


@pytest.fixture(scope="module")
def audit(whole_audit):
    return whole_audit


def test_no_verdict_changes_side_under_the_audits_reasonable_sweeps(audit):
    """Every claim of claims.yaml through the sweeps its card lists: a verdict that is not "depends"
    (nor inherited from another card, nor unjudged) keeps its side under each reasonable one."""
    turned = []
    for v in audit.verdicts:
        if v.verdict in (DEPENDS, ND, INCONCLUSIVE) or v.inherited_from:
            continue
        for s in v.swept:
            label, result = s.split(": ", 1)
            got = next(x for x in ("holds roughly", "does not hold", "holds") if result.startswith(x))
            if label.startswith(REASONABLE_SWEEPS) and verdict_side(got) != verdict_side(v.verdict):
                turned.append((v.claim.id, s))
    assert turned == []


def test_the_issues_one_sided_holds_now_depend(audit):
    by = {v.claim.id: v for v in audit.verdicts}
    # two racks at batch 2,000: the off-rack all-to-all over the step is 1.31 at 8K context but 0.45 at
    # 32K (the step grows with the KV read) and 0.66 with 1-byte activations (half the traffic)
    for cid in ("two-racks-offrack-is-bottleneck", "fast-mode-price-matches-batch-cost",
                "attention-compute-small-beside-weights", "decode-mfu-one-fifth-of-prefill"):
        assert by[cid].verdict == DEPENDS, cid
        assert by[cid].as_set != FAILS and "breaks it" in by[cid].decision, cid
