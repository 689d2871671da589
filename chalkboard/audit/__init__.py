"""The claim audit: every checkable statement of the lecture, judged by stated rules.

claims.yaml says what was claimed, where, which quantity (or expression) tests it, and on
which chips; the verdict is computed here, never typed. Each claim has a kind, saying what
its verdict tested:

* derived     -- the lecture against hardware and model data, through the derivations;
* arithmetic  -- the lecture's own numbers recomputed (values the lecture states are fixed);
* identity    -- a relation between derivations, verified symbolically by SymPy;
* input       -- one datum read back from hardware.yaml or models.yaml (said so, not derived);
* sourced     -- judged against a figure cited from an external source;
* qualitative -- not judged, with the reason.

Judging rules. "About X" holds within a factor (×/÷ tolerance, 1.3 unless the claim says
otherwise) and holds roughly within a wider factor (the band, ×/÷ 2 by default), so no band
ever reaches 0. A bound ("> X", "< X") holds on the claimed side, holds roughly when it misses by no
more than the tolerance (the band does not widen it), and otherwise does not hold, by the stated
percentage. A claim over several chips (a rule of thumb) holds when the
median is within the tolerance, at least two thirds of the distinct chips in its scope are too
and none is outside the band; holds roughly when the median is but fewer chips are or one is
outside the band, or when the median is only within the band; does not hold when the median is
outside the band.

Scope. A claim names its chips: a declared scope (all, GPUs, NVIDIA) or a list. Chips that
share their silicon (claims.yaml `chips.same_silicon`) count once; announced parts are shown
but not counted (unless a claim names only announced parts). Each chip is evaluated at its serving format: of the formats the model can be served
in, the one the chip has the highest dense rate for.

Every row carries its evidence: the formula with numbers substituted, the inputs with their
sources, the band, the scope, every chip's value, and a sweep over what can flip the verdict
(context, batch, number formats, activation bytes, chip set, spec-sheet conventions).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..data import seeds
from ..data.loader import Data
from ..runtime.home import ROOT

from .rules import AGREES, DEFINITION, DEPENDS, FAILS, HOLDS, INCONCLUSIVE, KINDS, ND, RECOMPUTED, ROUGHLY, VERDICTS, judge, judge_rule, miss_text, rule_of_thumb
from . import context
from .scope import Chips, load_chips
from .claims import claims_document, read_claims_file, Claim, load_claims
from .verdicts import decision, evaluate_claim, inherit_rejections
from .text import Audit
from .evidence import DUPLICATE, mark_duplicates


def seed_dir(root: Path) -> Path:
    return root / "lecture" / "seeds"


@dataclass
class Claims:
    """A claims file read and checked, not yet evaluated: its claims and its chip settings."""
    claims: list[Claim]
    chips: Chips

    def rule_of_thumb(self, quantity: str):
        return rule_of_thumb(self.claims, quantity)


def read_claims(data: Data, path: Path, label: str, doc=None) -> Claims:
    """The claims file at ``path`` (``doc``: its YAML, if the caller has read it), read and checked:
    a bad claim fails here, before anything is evaluated."""
    root = path.resolve().parent
    if not seed_dir(root).is_dir():  # a claims file kept elsewhere cites the project's own seeds
        root = ROOT
    places = seeds.places(seed_dir(root)) if seed_dir(root).is_dir() else None
    if places is not None:  # the later chapters, cited by id: 'chapters-3-7.md#T-02'
        places = {**places, **seeds.chapter_places(seed_dir(root).parent)}
    doc = read_claims_file(path, label) if doc is None else claims_document(doc, label)
    chips = load_chips(label, data, doc)
    loaded = load_claims(path, label, data, places, chips, doc)
    context.attach(loaded, places, context.transcript_paragraphs(seeds.transcript_file(root)))
    return Claims(loaded, chips)


def run_audit(data: Data, path: Path, label: str, doc=None, claims: Claims | None = None) -> Audit:
    """The audit of the claims file at ``path`` (``claims``: already read by ``read_claims``)."""
    claims = claims if claims is not None else read_claims(data, path, label, doc)
    return audit_of([evaluate_claim(data, c, claims.chips) for c in claims.claims])


def audit_of(verdicts: list) -> Audit:
    """The audit of each claim's own verdict, in file order, with what is judged across claims: a
    rejection a claim inherits from the one it rests on, and a card that repeats an earlier one's
    values (a duplicate). run_audit and the edit loop's kept verdicts both end here."""
    inherit_rejections(verdicts)
    mark_duplicates(verdicts)
    for v in verdicts:
        if v.inherited_from or v.evidence == DUPLICATE:
            v.decision = decision(v)
    return Audit(verdicts)


# the audit's face: what the build, the commands and the tests use
__all__ = ["AGREES", "Audit", "Chips", "Claim", "Claims", "DEFINITION", "DEPENDS", "RECOMPUTED", "FAILS", "HOLDS", "INCONCLUSIVE", "KINDS", "ND", "ROUGHLY", "VERDICTS",
           "decision", "evaluate_claim", "inherit_rejections", "judge", "judge_rule", "load_claims", "miss_text", "read_claims", "rule_of_thumb",
           "audit_of", "run_audit", "seed_dir"]
