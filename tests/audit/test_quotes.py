"""Every quote of claims.yaml is the lecture's own words: present verbatim (case, whitespace,
punctuation and link markup aside) in the seeds or in the public cleaned transcript. A quote that
joins two speakers' turns (" — ") or skips words ("…") is checked piece by piece, in order. The
transcript sits beside the project (../shared/lecture/transcript.md) and is never copied into it:
where it is absent, the transcript's half of the check is skipped."""
import re

import pytest
import yaml

from conftest import ROOT

TRANSCRIPT = ROOT.parent / "shared" / "lecture" / "transcript.md"
SEEDS = ROOT / "lecture" / "seeds"


def _bare(text: str) -> str:
    """Letters and digits only, lower case, with a markdown link read as its text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^a-z0-9]+", "", text.lower())


def _found(quote: str, source: str) -> bool:
    at = 0
    for piece in re.split(r"\s*[—…]\s*|\.\.\.", quote):
        bare = _bare(piece)
        if not bare:
            continue
        at = source.find(bare, at)
        if at < 0:
            return False
        at += len(bare)
    return True


def _quotes():
    doc = yaml.safe_load((ROOT / "claims.yaml").read_text(encoding="utf-8"))
    return [(c["id"], str(c["quote"])) for c in doc["claims"]]


def test_the_bare_reading_ignores_only_markup_case_and_punctuation():
    source = _bare("He was doing [TPU](https://en.wikipedia.org/wiki/TPU) architecture. — Yes, 2023.")
    assert _found("he was doing TPU architecture", source)
    assert _found("doing TPU architecture — yes, 2023", source)
    assert not _found("doing GPU architecture", source)
    assert not _found("2023 — doing TPU", source)     # pieces must come in order


def test_the_fabricated_reversible_quote_is_gone():
    quotes = dict(_quotes())
    # the lecture says RevNets need not store the activations; it never says the footprint is eliminated
    assert "eliminates your memory footprint" not in quotes["reversible-memory-flat-in-depth"]


def test_every_quote_is_in_the_seeds_or_the_transcript():
    if not TRANSCRIPT.is_file():
        pytest.skip("the public transcript is not beside the project")
    sources = [_bare(TRANSCRIPT.read_text(encoding="utf-8"))]
    sources += [_bare(p.read_text(encoding="utf-8")) for p in sorted(SEEDS.glob("*.txt"))]
    missing = [(cid, q) for cid, q in _quotes() if not any(_found(q, s) for s in sources)]
    assert missing == []
