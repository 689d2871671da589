"""A verdict's text names at most LISTED chips (chalkboard/audit/rules.py): with hundreds of chips a
list is read by no one, and the PDF could not be set at all (Typst refuses a paragraph holding over
512 ids, each kept whole by the report's show rule: `build.py` of the project with 50 copies of
every chip failed with "maximum grouping depth exceeded")."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from chalkboard.audit import Audit, read_claims
from chalkboard.audit.rules import LISTED, listed
from chalkboard.audit.verdicts import evaluate_claim
from chalkboard.data.loader import load

ROOT = Path(__file__).resolve().parents[2]


def test_listed_names_the_first_and_counts_the_rest():
    names = [f"chip-{i}" for i in range(LISTED + 7)]
    assert listed(names[:3]) == "chip-0, chip-1, chip-2"
    assert listed(names) == ", ".join(names[:LISTED]) + " and 7 more"


def test_a_rule_over_many_chips_names_at_most_listed_of_them():
    data = load(ROOT, "hardware.yaml", "models.yaml", "prices.yaml")
    copies = 10   # 160 chips: the rule's misses alone are over LISTED
    many = dataclasses.replace(data, hardware={(h if i == 0 else f"{h}-copy{i}"): e
                                               for i in range(copies) for h, e in data.hardware.items()})
    claims = read_claims(many, ROOT / "claims.yaml", "claims.yaml")
    claim = next(c for c in claims.claims if c.id == "reciprocal-300-across-platforms")
    v = evaluate_claim(many, claim, claims.chips)
    ids = re.compile("|".join(re.escape(h) for h in sorted(many.hardware, key=len, reverse=True)))
    texts = [v.miss or "", v.detail or "", v.scope or ""]
    assert any("more" in t for t in texts), texts      # the list was long, and is cut
    for t in texts:
        for part in t.split(";"):
            assert len(ids.findall(part)) <= LISTED + 3, part[:300]
    # the PDF's card lists the first LISTED values and says how many more (the page lists them all)
    card = Audit([v]).for_report()["claims"][0]
    assert len(card["per_chip"]) == len(v.values) > LISTED
    assert card["per_chip_more"] == len(v.values) - LISTED
