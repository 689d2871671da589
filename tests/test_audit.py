"""The claim audit: verdict logic on synthetic claims, and claims.yaml against the seeds."""
import json
import textwrap

import pytest
import yaml

from chalkboard import seeds
from chalkboard.audit import FAILS, HOLDS, ND, ROUGHLY, evaluate_claim, judge, load_claims
from chalkboard.data import DataError
from conftest import ROOT

SEED_DIR = ROOT / "lecture" / "seeds"


# -- verdict logic --------------------------------------------------------------------------
def test_judge_bands():
    assert judge(300, 300, 300, 0.1, 0.5) == HOLDS
    assert judge(330, 300, 300, 0.1, 0.5) == HOLDS
    assert judge(400, 300, 300, 0.1, 0.5) == ROUGHLY
    assert judge(600, 300, 300, 0.1, 0.5) == FAILS
    assert judge(17, 15, 20, 0.1, 0.5) == HOLDS      # inside a claimed range
    assert judge(12, 15, 20, 0.1, 0.5) == ROUGHLY


def _claims(tmp_path, data, body):
    p = tmp_path / "claims.yaml"
    p.write_text(textwrap.dedent(body))
    return load_claims(p, "claims.yaml", data, seeds.places(SEED_DIR))


SYNTHETIC = """
claims:
  - id: holds
    where: "004_c06f65e5a6f00c72.txt:57"
    quote: "288 gigabytes divided by 20 terabytes per second"
    claim: "Rubin drains its HBM in about 15 ms."
    kind: derivable
    quantity: drain_time
    applies_to: {hardware: rubin}
    claimed: "15 ms"
    tolerance: 0.3
  - id: off-by-two
    where: "004_c06f65e5a6f00c72.txt:57"
    quote: "x"
    claim: "Rubin drains its HBM in 30 ms (twice the real figure)."
    kind: derivable
    quantity: drain_time
    applies_to: {hardware: rubin}
    claimed: "30 ms"
    tolerance: 0.2
  - id: qualitative
    where: "004_c06f65e5a6f00c72.txt:23"
    quote: "power delivery weight, and cooling"
    claim: "Rack size is bounded by power, weight and cooling."
    kind: qualitative
    why: "physical limits of a rack are not modelled"
  - id: thumb
    where: "004_c06f65e5a6f00c72.txt:73"
    quote: "Around 300"
    claim: "R is about 300 on most chips."
    kind: rule_of_thumb
    quantity: hardware_ratio
    applies_to: {hardware: all, model: llama-3-70b}
    set: {format: bf16}
    claimed: "300 token"
    tolerance: 0.3
"""


def test_synthetic_verdicts(tmp_path, data):
    cs = {c.id: c for c in _claims(tmp_path, data, SYNTHETIC)}
    # Rubin: 288 GB / 22 TB/s (NVIDIA Vera Rubin NVL72 figures) = 13.1 ms, within 30% of 15 ms
    v = evaluate_claim(data, cs["holds"])
    assert v.verdict == HOLDS and v.computed["value"] == pytest.approx(288 / 22, rel=0.01)
    assert evaluate_claim(data, cs["off-by-two"]).verdict == FAILS
    assert evaluate_claim(data, cs["qualitative"]).verdict == ND
    t = evaluate_claim(data, cs["thumb"])
    assert set(t.computed) >= {"min", "median", "max", "outside"}
    assert t.computed["min"] <= t.computed["median"] <= t.computed["max"]
    assert "tpu-v6e" in t.computed["outside"]  # 918 TFLOP/s / 1.64 TB/s = 560, far from 300
    assert "dense vs sparse" in t.sensitivity or "sparse" in t.sensitivity


BOUNDS = """
claims:
  - id: bound-holds
    where: "004_c06f65e5a6f00c72.txt:17"
    quote: "x"
    claim: "Spreading a layer over two racks makes communication bound the step."
    kind: derivable
    quantity: comm_to_step
    applies_to: {hardware: gb200-nvl72, model: deepseek-v3}
    set: {racks: "2"}
    claimed: "> 1"
  - id: bound-fails
    where: "004_c06f65e5a6f00c72.txt:17"
    quote: "x"
    claim: "Inside one rack the all-to-all takes longer than the step (false)."
    kind: derivable
    quantity: comm_to_step
    applies_to: {hardware: gb200-nvl72, model: deepseek-v3}
    claimed: "> 1"
    band: 0.1
  - id: identity-holds
    where: "004_c06f65e5a6f00c72.txt:93"
    quote: "x"
    claim: "The latency floor is the time to read the weights."
    kind: derivable
    identity: [latency_floor, weight_fetch_time]
  - id: identity-fails
    where: "004_c06f65e5a6f00c72.txt:93"
    quote: "x"
    claim: "The latency floor is the compute time (false)."
    kind: derivable
    identity: [latency_floor, compute_time]
  - id: ratio
    where: "004_c06f65e5a6f00c72.txt:15"
    quote: "x"
    claim: "Blackwell's rack is nine times Hopper's 8-GPU tray."
    kind: derivable
    quantity: scaleup_domain
    applies_to: {hardware: gb200-nvl72, relative_to: {hardware: h100-sxm}}
    claimed: "9"
    tolerance: 0.01
    note: "the rack holds {scaleup_domain}"
"""


def test_bounds_identities_and_ratios(tmp_path, data):
    cs = {c.id: c for c in _claims(tmp_path, data, BOUNDS)}
    # two racks: half the all-to-all crosses a link 18x slower than NVLink (NVIDIA GB200 NVL72:
    # 1.8 TB/s NVLink per GPU vs a 400 Gb/s NIC), far longer than the step
    assert evaluate_claim(data, cs["bound-holds"]).verdict == HOLDS
    assert evaluate_claim(data, cs["bound-fails"]).verdict == FAILS
    assert evaluate_claim(data, cs["identity-holds"]).verdict == HOLDS
    assert evaluate_claim(data, cs["identity-fails"]).verdict == FAILS
    v = evaluate_claim(data, cs["ratio"])
    assert v.verdict == HOLDS and v.computed["value"] == pytest.approx(72 / 8)
    assert v.note == "the rack holds 72 chips"


def test_judge_bounds():
    assert judge(2, 1, 1, 0.3, 0.5, ">") == HOLDS
    assert judge(0.8, 1, 1, 0.3, 0.5, ">") == ROUGHLY
    assert judge(0.2, 1, 1, 0.3, 0.5, ">") == FAILS
    assert judge(0.5, 1, 1, 0.3, 0.5, "<") == HOLDS
    assert judge(22.000000000000004, 20, 20, 0.1, 0.2) == HOLDS  # on the edge, whatever the rounding


@pytest.mark.parametrize("edit,field", [
    (lambda s: s.replace('set: {format: bf16}', 'set: {format: bf15}', 1), "set"),
    (lambda s: s.replace("tolerance: 0.2", "tolerance: abc", 1), "tolerance"),
    (lambda s: s.replace("applies_to: {hardware: rubin}", "applies_to: [rubin]", 1), "applies_to"),
    (lambda s: s.replace("quantity: drain_time", "quantity: nonsense", 1), "quantity"),
    (lambda s: s.replace('claimed: "15 ms"', 'claimed: "15 GB"', 1), "claimed"),
    (lambda s: s.replace("hardware: rubin}", "hardware: rubin-9000}", 1), "applies_to.hardware"),
    (lambda s: s.replace("kind: qualitative", "kind: vibes", 1), "kind"),
    (lambda s: s.replace('where: "004_c06f65e5a6f00c72.txt:23"', 'where: "lecture line 23"', 1), "where"),
])
def test_bad_claims_name_the_field(tmp_path, data, edit, field):
    with pytest.raises(DataError) as e:
        _claims(tmp_path, data, edit(SYNTHETIC))
    assert e.value.field == field and e.value.file == "claims.yaml"


# -- claims.yaml against the seeds ------------------------------------------------------------
@pytest.fixture(scope="module")
def claims_doc():
    return yaml.safe_load((ROOT / "claims.yaml").read_text())


@pytest.fixture(scope="module")
def places():
    return seeds.places(SEED_DIR)


def test_there_are_many_claims_of_every_kind(claims_doc):
    kinds = {c["kind"] for c in claims_doc["claims"]}
    assert len(claims_doc["claims"]) >= 40
    assert {"derivable", "rule_of_thumb", "empirical", "qualitative", "consistency"} <= kinds


def test_every_claim_loads_and_refers_to_an_existing_quantity(data, places):
    claims = load_claims(ROOT / "claims.yaml", "claims.yaml", data, places)
    from derivations import REGISTRY
    for c in claims:
        assert c.quantity is None or c.quantity in REGISTRY


def test_every_quote_is_in_the_line_it_cites(claims_doc, places):
    for c in claims_doc["claims"]:
        where = c["where"] if isinstance(c["where"], list) else [c["where"]]
        text = " ".join(seeds.normalise(places[w]) for w in where)
        quote = seeds.normalise(c["quote"]).rstrip(".…").replace("...", " ")
        for piece in [p.strip() for p in quote.split("…") if p.strip()]:
            assert piece in text, (c["id"], piece)


def test_every_seed_line_with_a_number_is_claimed_or_skipped(claims_doc, places):
    covered = set()
    for c in claims_doc["claims"]:
        covered |= set(c["where"] if isinstance(c["where"], list) else [c["where"]])
    skipped = {}
    for s in claims_doc.get("skipped", []):
        assert s.get("reason"), s
        for w in (s["where"] if isinstance(s["where"], list) else [s["where"]]):
            skipped[w] = s["reason"]
    missing = [w for w, text in places.items() if seeds.has_number(text) and w not in covered | set(skipped)]
    assert missing == []
    assert not (set(skipped) - set(places)), "skipped places must exist in the seeds"


def test_audit_command_json(cli):
    r = cli("audit", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert len(rows) >= 40
    for row in rows:
        assert {"id", "where", "kind", "claimed", "computed", "verdict"} <= set(row)
        assert row["verdict"] in (HOLDS, ROUGHLY, FAILS, ND)
    by_id = {r["id"]: r for r in rows}
    assert any(r["kind"] == "rule_of_thumb" and r["computed"] and "median" in r["computed"] for r in rows)
    assert len(by_id) == len(rows)


def test_audit_command_text(cli):
    r = cli("audit")
    assert r.returncode == 0
    assert r.stdout.startswith("chalkboard audit:")


# -- the real claims: a few verdicts pinned against independently computed figures ------------
@pytest.fixture(scope="module")
def verdicts(data):
    from chalkboard.audit import run_audit
    audit = run_audit(data, ROOT / "claims.yaml", "claims.yaml")
    return {v.claim.id: v for v in audit.verdicts}


def test_scaleout_eight_times_slower_does_not_hold(verdicts):
    # GB200 NVL72: NVLink 5 is 1.8 TB/s bidirectional = 900 GB/s per direction per GPU (NVIDIA);
    # one 400 Gb/s ConnectX-7 NIC per GPU = 50 GB/s: 18x, not 8x. Hopper: 450 / 50 = 9x.
    v = verdicts["scaleout-about-eight-times-slower"]
    assert v.verdict == FAILS
    assert v.computed["values"]["gb200-nvl72"] == pytest.approx(18, rel=0.01)
    assert v.computed["values"]["h100-sxm"] == pytest.approx(9, rel=0.01)


def test_hardware_ratio_about_300_holds_on_the_median(verdicts):
    # H100 SXM: 989 TFLOP/s bf16 dense / 3.35 TB/s (NVIDIA datasheet) = 295
    v = verdicts["hardware-ratio-about-300"]
    assert v.verdict == HOLDS
    assert v.computed["values"]["h100-sxm"] == pytest.approx(989 / 3.35, rel=0.01)
    assert "tpu-v6e" in v.computed["outside"]  # Trillium: 918 TFLOP/s / 1.64 TB/s = 560


def test_rubin_drain_time_holds(verdicts):
    # the lecture's own figures: 288 GB / 20 TB/s = 14.4 ms, "about 15 ms"; hardware.yaml has 22 TB/s
    v = verdicts["rubin-drain-about-15-ms"]
    assert v.verdict == HOLDS and v.computed["value"] == pytest.approx(288 / 22, rel=0.01)


def test_deepseek_sparsity_as_spoken_does_not_hold(verdicts):
    # DeepSeek-V3 report: 8 routed of 256 experts -> 1 in 32, not 8
    v = verdicts["deepseek-sparsity-eight"]
    assert v.verdict == FAILS and v.computed["value"] == 32
