"""What a verdict says it rests on: holds on independent evidence, the lecture's arithmetic
recomputed, or a definition of the encoding; a bound judged as a bound; a set-up that does not fit
never decides; a miss a reasonable sweep turns is "depends"; a claim reading a number another card
rejects inherits the rejection; transcript places with their links. Expected values are worked by
hand (the figures named beside them), not copied from the audit's output."""
import re

import pytest

from chalkboard.data import seeds
from chalkboard.audit import (DEFINITION, DEPENDS, FAILS, HOLDS, INCONCLUSIVE, RECOMPUTED, evaluate_claim,
                              inherit_rejections)
from chalkboard.audit.rules import loose_text
from chalkboard.audit.text import Audit, EVIDENCE_KINDS
from chalkboard.data.loader import DataError
from test_audit import CLAIMS_HEAD as HEAD, _claims as audit_claims   # one writer of test claims files

W = '"004_c06f65e5a6f00c72.txt:81"'


def _claims(tmp_path, data, body):
    return audit_claims(tmp_path, data, body, head=HEAD)


BODY = f"""
claims:
  - id: restated
    where: {W}
    quote: "weight fetches"
    claim: "The step is the max of compute and memory."
    kind: identity
    checks: ["step_time == Max(compute_time, memory_time)"]
  - id: derived-by-algebra
    where: {W}
    quote: "weight fetches"
    claim: "The KV fetch is linear in the batch."
    kind: identity
    checks: ["kv_fetch_time == batch*d(kv_fetch_time, batch)"]
  - id: arithmetic
    where: {W}
    quote: "weight fetches"
    claim: "A request waits at most two 20 ms steps."
    kind: arithmetic
    given: {{step_time: 20 ms}}
    quantity: worst_latency
    claimed: 40 ms
    tolerance: 1.1
  - id: lower-bound
    where: {W}
    quote: "weight fetches"
    claim: "Latency is at least the time to read every weight."
    kind: derived
    scope: gb200-nvl72
    expr: latency_floor_layout/weight_fetch_time_all
    claimed: '> 1'
  - id: does-not-fit
    where: {W}
    quote: "weight fetches"
    claim: "Compute sets the cost floor."
    kind: derived
    scope: b200
    expr: context_crossover/context
    claimed: '> 1'
  - id: fits
    where: {W}
    quote: "weight fetches"
    claim: "Compute sets the cost floor."
    kind: derived
    scope: b200
    set: {{batch: 1000 sequence}}
    expr: context_crossover/context
    claimed: '> 1'
  - id: hop-rejected
    where: "transcript@1:15:21"
    quote: "on the order of a few milliseconds"
    claim: "A hop costs a few ms."
    kind: derived
    quantity: hop_time_from_data
    lecture_input: hop_latency
    claimed: 2.5 ms
    tolerance: 10
    band: 10
  - id: reads-the-hop
    where: {W}
    quote: "weight fetches"
    claim: "Four hops add 10 ms to a 20 ms step."
    kind: arithmetic
    given: {{micro_batch_step_time: 20 ms}}
    set: {{pipeline_stages: '4'}}
    quantity: pipeline_token_latency
    claimed: 30 ms
    tolerance: 1.1
"""


@pytest.fixture(scope="module")
def judged(tmp_path_factory, data):
    cs, chips = _claims(tmp_path_factory.mktemp("rules"), data, BODY)
    vs = [evaluate_claim(data, c, chips) for c in cs.values()]
    inherit_rejections(vs)
    return {v.claim.id: v for v in vs}


def test_an_identity_that_restates_a_definition_is_not_evidence(judged):
    # derivations/roofline.py declares step_time = Max(compute_time, memory_time): it cannot fail
    assert judged["restated"].verdict == DEFINITION
    # linearity in the batch takes a derivative: the lecture's algebra redone, still not evidence
    assert judged["derived-by-algebra"].verdict == RECOMPUTED


def test_the_lectures_own_arithmetic_is_recomputed_not_held(judged):
    # worst latency = 2 × 20 ms = 40 ms (the lecture's train schedule): its own numbers, redone
    assert judged["arithmetic"].verdict == RECOMPUTED


def test_a_lower_bound_is_judged_as_a_bound_and_shows_how_loose(judged):
    v = judged["lower-bound"]
    assert v.verdict == HOLDS and v.computed["value"] > 1
    assert v.loose == loose_text(v.computed["value"], 1, ">") and v.loose.startswith("loose by ×")
    assert v.decision.startswith("holds:") and v.loose in v.decision
    assert loose_text(2.15, 1, ">") == "loose by ×2.15"
    assert loose_text(0.5, 1, "<") == "loose by ×2"
    assert loose_text(1.001, 1, ">") == ""       # tight: nothing to say


def test_a_setup_that_does_not_fit_in_hbm_never_decides(judged):
    # B200 (hardware.yaml: 180 GB) holds DeepSeek-V3 with 2,000 sequences of 8k context only
    # past its HBM; with 1,000 sequences it fits, and the same ratio is judged
    v = judged["does-not-fit"]
    assert v.verdict == INCONCLUSIVE and v.fit and "does not fit" in v.detail
    assert judged["fits"].verdict in (FAILS, DEPENDS, HOLDS)
    assert not judged["fits"].fit


def test_a_miss_that_a_reasonable_sweep_turns_is_depends(judged):
    # at 1k tokens the context is far below the crossover: compute sets the floor there
    v = judged["fits"]
    assert v.verdict == DEPENDS
    assert any(f.startswith("context 1,024 tokens: holds") for f in v.flips_if)
    assert v.decision.startswith("depends:") and "context 1,024 tokens" in v.decision


def test_a_claim_reading_a_rejected_number_inherits_the_rejection(judged):
    rejecting, reader = judged["hop-rejected"], judged["reads-the-hop"]
    assert rejecting.verdict == FAILS
    # 20 ms + 4 × 2.5 ms = 30 ms would hold, but it reads the 2.5 ms the other card rejects
    assert reader.verdict == FAILS and reader.inherited_from == "hop-rejected"
    assert reader.claim.inherits == "hop-rejected" and "hop_latency" in reader.miss
    errors = Audit(list(judged.values())).errors()
    assert [e["id"] for e in errors if e["id"] in ("hop-rejected", "reads-the-hop")] == ["hop-rejected"]


def test_a_transcript_place_links_to_the_video_at_its_second(judged):
    # 1:15:21 = 3600 + 15·60 + 21 = 4521 s
    assert judged["hop-rejected"].claim.links == ["https://video.example/watch?v=abc&t=4521s"]
    assert seeds.transcript_seconds("transcript@0:04:23") == 263


def test_a_transcript_place_past_the_end_is_refused(tmp_path, data):
    body = BODY.replace('where: "transcript@1:15:21"', 'where: "transcript@2:30:00"')
    with pytest.raises(DataError, match="past the lecture's end"):
        _claims(tmp_path, data, body)


# -- the real audit -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def audit(whole_audit):
    return whole_audit


def test_the_two_bound_sentences_are_judged_as_bounds(audit):
    by = {v.claim.id: v for v in audit.verdicts}
    lat = by["latency-lower-bound-read-all-weights"]
    assert lat.claim.parts[0].compare == ">" and lat.verdict == HOLDS and "loose by ×" in lat.decision
    cost = by["cost-floor-is-a-lower-bound"]
    assert cost.claim.parts[0].compare == ">" and cost.verdict == HOLDS
    assert "limiting Lower bound on cost" in cost.claim.quote
    assert "read all of my total parameters" in lat.claim.quote


def test_the_headline_counts_what_the_verdicts_say(audit):
    text = audit.headline()
    # a hold no sourced figure moves (an echo, x/x, a constant, a duplicate) is counted apart
    independent = [v for v in audit.verdicts if v.claim.kind in EVIDENCE_KINDS and v.evidence in ("", "independent")]
    n = {k: sum(1 for v in independent if v.verdict == k) for k in (HOLDS, FAILS, DEPENDS)}
    assert f"{n[HOLDS]} hold," in text and f"{n[FAILS]} do not hold" in text
    assert f"{sum(1 for v in audit.verdicts if v.verdict == RECOMPUTED)} recomputed" in text
    assert f"{sum(1 for v in audit.verdicts if v.verdict == DEFINITION)} definitions" in text
    # no identity or arithmetic row is counted as independent evidence
    assert not [v for v in audit.verdicts if v.verdict == HOLDS and v.claim.kind in ("identity", "arithmetic")]
    m = re.match(r"(\d+) verdicts on independent evidence", text)
    assert int(m.group(1)) == sum(1 for v in independent if v.verdict in (HOLDS, "holds roughly", DEPENDS, FAILS))


def test_no_error_rests_on_a_setup_that_does_not_fit(audit):
    for v in audit.verdicts:
        if v.verdict == FAILS and v.values:
            counted = [k for k, x in v.values.items() if x.get("counted")]
            assert counted, v.claim.id


def test_a_derived_claim_whose_model_cancels_is_refused(tmp_path, data):
    # the off-rack and in-rack halves of a two-rack all-to-all carry the same bytes: their ratio is
    # NVLink over the NIC whatever the model, batch or bytes per activation (a ratio of two figures)
    body = f"""
    claims:
      - id: cancels
        where: {W}
        quote: "weight fetches"
        claim: "Rack-to-rack traffic is the bottleneck."
        kind: derived
        set: {{racks: '2', batch: 2000 sequence}}
        expr: a2a_time_scaleout/a2a_time_scaleup
        claimed: '> 1'
    """
    with pytest.raises(DataError, match="cancels.*use kind 'spec'"):
        _claims(tmp_path, data, body)
    cs, _ = _claims(tmp_path, data, body.replace("kind: derived", "kind: spec"))
    assert cs["cancels"].kind == "spec"


def test_identities_are_shown_in_the_reports_notation(judged):
    from chalkboard.audit.fixed import notation
    # the parser's names become the report's symbols (t_step, t_compute, t_mem, t_KV, B), '==' an '='
    assert judged["restated"].computed_text == "✓ t_step = max(t_compute, t_mem)"
    assert notation("kv_fetch_time == batch*d(kv_fetch_time, batch)") == "t_KV = B·∂(t_KV)/∂(B)"
    assert "==" not in judged["derived-by-algebra"].computed_text
