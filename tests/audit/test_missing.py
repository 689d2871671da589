"""The statements a reader checks first are in the audit and judged: the interviewer's premises
(a million-token ceiling, output 50% dearer than input, capex), the second square-root sentence, the
HBM forecast, the RL bookkeeping, the deployment time, the exponential case, Blackwell's year and the
models larger than GPT-4. Expected figures are worked by hand from the sources named beside them."""
import pytest

from chalkboard.audit import FAILS, HOLDS, ND, ROUGHLY

TEN = ("no-company-over-a-million-token-context", "sparse-attention-get-out-square-root",
       "hbm-not-getting-hugely-better", "output-fifty-percent-more-than-input", "rl-alpha-beta-one-tenth",
       "deployed-two-months-before-obsolete", "equal-cost-also-for-exponentials", "blackwell-deployed-last-year",
       "bigger-than-gpt-4-only-in-last-six-months", "hyperscaler-capex-high-hundreds-of-billions")


@pytest.fixture(scope="module")
def audit(whole_audit):
    return whole_audit


def test_the_ten_statements_are_in_the_audit_and_judged(audit):
    by = {v.claim.id: v for v in audit.verdicts}
    also = {a["id"]: v for v in audit.verdicts for a in v.claim.also}
    for cid in TEN:
        v = by.get(cid) or also.get(cid)   # said twice: folded into the card that tests the same thing
        assert v is not None, cid
        assert v.verdict != ND, cid
    # the second square-root sentence is the same test as the first, one card listing both places
    assert also["sparse-attention-get-out-square-root"].claim.id == "sparse-attention-square-root"


def test_the_premises_that_the_sources_contradict(audit):
    by = {v.claim.id: v for v in audit.verdicts}
    # Gemini 1.5 Pro's 2M window (Google's long-context page) is twice the 'million' ceiling
    assert by["no-company-over-a-million-token-context"].verdict == FAILS
    # prices.yaml, Claude Opus 4.5: $25 / $5 = 5, not 1.5
    out = by["output-fifty-percent-more-than-input"]
    assert out.verdict == FAILS and out.computed["value"] == pytest.approx(5.0)
    # (2 FLOP / 6 FLOP) / 0.3 = 1.11: the efficiency divides, the spoken 1/10 multiplied by it
    rl = by["rl-alpha-beta-one-tenth"]
    assert rl.verdict == FAILS
    assert [p["value"] for p in rl.computed["parts"]] == pytest.approx([2 / 6 / 0.3] * 2)


def test_the_statements_the_sources_bear_out(audit):
    by = {v.claim.id: v for v in audit.verdicts}
    # $200B + $180B + $125B + $150B (2026 plans, midpoints) = $655B: within ×/÷1.3 of 700 billion
    assert by["hyperscaler-capex-high-hundreds-of-billions"].verdict == HOLDS
    # flagship successions of 2025: 75, 97, 111 and 238 days, median 104 against 'two months'
    d = by["deployed-two-months-before-obsolete"]
    assert d.computed["median"] == pytest.approx(104) and d.verdict == ROUGHLY
    # hardware.yaml: H100 3.35 TB/s over A100 80GB 2.039 TB/s is 1.64, B200 8 TB/s over H100 2.39
    hbm = by["hbm-not-getting-hugely-better"]
    assert hbm.computed["median"] == pytest.approx((3.35 / 2.039 + 8 / 3.35) / 2, rel=0.01)
    assert hbm.verdict in (HOLDS, ROUGHLY)     # median 2.01, a hair over doubling: within the tolerance
