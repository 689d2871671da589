"""Lecture context for each claim: the two sentences before and after its quote, from the seed excerpt
or speaker turn it cites, or from the public cleaned transcript where that sits beside the project
(it is read, never copied in); else the neighbouring quoted places of the lecture. A quote whose
speech-to-text slips the seeds README lists ("deep sick", "HPM") gets its corrected reading beside
the verbatim words."""
from __future__ import annotations

import re
from pathlib import Path

from ..data import seeds

SPAN = 170          # characters of context either side of a quote in a seed excerpt without sentences
AROUND = 2          # sentences either side
# the seeds README's slips, as the public transcript and the vendors' pages read them
SLIPS = ((r"\bdeep[ -]?sick\b", "DeepSeek"), (r"\bHPM\b", "HBM"), (r"\bKBs?\b", "KV"), (r"\bHFP4\b", "FP4"),
         (r"\bspouse\b", "sparse"), (r"\bClod\b", "Claude"), (r"\bmatch size\b", "batch size"),
         (r"\bbash size\b", "batch size"), (r"\bwait fetch(es)?\b", r"weight fetch\1"),
         (r"\bwhite matrices\b", "weight matrices"), (r"\ba ballback\b", "a ballpark"),
         (r"\bsporosity\b", "sparsity"), (r"\bequality of the model\b", "quality of the model"),
         (r"\bper GP\b", "per GPU"), (r"\binterconnector mains\b", "interconnect domains"),
         (r"\bthe urban generation\b", "the Rubin generation"), (r"\btension math\b", "Jensen math"),
         (r"\bunified laws for routed\b", "Unified Scaling Laws for Routed"))
SENTENCE = re.compile(r"(?<=[.?!…])\s+(?=[\"“A-Z0-9*(\[])")


def corrected(text: str) -> str | None:
    """``text`` with the seeds' listed slips read as meant, or None when it has none."""
    out = text
    for pattern, meant in SLIPS:
        out = re.sub(pattern, meant, out, flags=re.I if pattern.islower() else 0)
    return out if out != text else None


def _flat(text: str) -> str:
    """Text on one line, markdown links and emphasis read as their words, quotes as `seeds.normalise` has them."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text).replace("\\", "")
    text = re.sub(r"\*+([^*]*)\*+", r"\1", text)
    text = text.replace("“", '"').replace("”", '"').replace("’", "'").replace("‘", "'")
    return re.sub(r"\s+", " ", text).strip()


def _bare(text: str) -> tuple[str, list[int]]:
    """Letters and digits only, lower case, and where each came from in ``text``."""
    keep = [(i, ch.lower()) for i, ch in enumerate(text) if ch.isalnum()]
    return "".join(ch for _, ch in keep), [i for i, _ in keep]


def _sentences_around(paragraphs: list[tuple[str, str, list[int]]], quote: str) -> list[str] | None:
    """The AROUND sentences before and after ``quote`` in its paragraph (or the neighbouring ones);
    ``paragraphs``: (text, its bare letters, where each came from), as `paragraphs` gives them."""
    want, _ = _bare(quote.split("—")[0].split("…")[0])
    if not want:
        return None
    for k, (para, bare, where) in enumerate(paragraphs):
        at = bare.find(want)
        if at < 0:
            continue
        start, end = where[at], where[min(at + len(want), len(where)) - 1] + 1
        before = SENTENCE.split(para[:start].strip()) if para[:start].strip() else []
        after = SENTENCE.split(para[end:].strip()) if para[end:].strip() else []
        if after and not re.match(r"[\"“A-Z0-9*(\[]", after[0]):   # the rest of the quoted sentence
            after = after[1:]
        if len(before) < AROUND and k > 0:
            before = SENTENCE.split(paragraphs[k - 1][0]) + before
        if len(after) < AROUND and k + 1 < len(paragraphs):
            after = after + SENTENCE.split(paragraphs[k + 1][0])
        b, a = " ".join(before[-AROUND:]).strip(), " ".join(after[:AROUND]).strip()
        return [f"before: {b}" if b else "before: (the quote opens the passage)",
                f"after: {a}" if a else "after: (the quote closes the passage)"]
    return None


def paragraphs(texts: list[str]) -> list[tuple[str, str, list[int]]]:
    """Each text on one line with its bare letters and where each came from (found once, searched often)."""
    return [(t, *_bare(t)) for t in texts]


def transcript_paragraphs(path: Path | None) -> list[tuple[str, str, list[int]]] | None:
    """The public transcript's paragraphs of speech (headings and speaker names left out), or None."""
    if path is None or not path.is_file():
        return None
    paras = [_flat(p) for p in path.read_text(encoding="utf-8").split("\n\n")]
    return paragraphs([p for p in paras if p and not p.startswith("#") and not re.fullmatch(r"[\w .]+", p)])


def _clip_left(s: str) -> str:
    s = s.strip()
    if len(s) <= SPAN:
        return s
    cut = s[-SPAN:]
    return "…" + cut[cut.find(" ") + 1:] if " " in cut else "…" + cut


def _clip_right(s: str) -> str:
    s = s.strip()
    if len(s) <= SPAN:
        return s
    cut = s[:SPAN]
    return cut[:cut.rfind(" ")] + "…" if " " in cut else cut + "…"


def _around(text: str, quote: str) -> list[str] | None:
    """The seed words around a quote: whole sentences where the excerpt has them, else SPAN characters."""
    flat = _flat(text)
    i = flat.lower().find(seeds.normalise(quote))
    if i < 0:
        return None
    got = _sentences_around(paragraphs([flat]), quote)
    if got and all(len(x) <= 2 * SPAN for x in got):
        return got
    before, after = flat[:i], flat[i + len(seeds.normalise(quote)):]
    return [f"before: {_clip_left(before)}" if before.strip() else "before: (the excerpt begins with the quote)",
            f"after: {_clip_right(after)}" if after.strip() else "after: (the excerpt ends with the quote)"]


def _seconds(where: str) -> int | None:
    t = seeds.transcript_seconds(where)
    if t is not None:
        return t
    m = seeds.WHERE.match(where)
    if m and m["ts"]:   # a speaker turn of the opening seed, m:ss
        mi, se = (int(x) for x in m["ts"].split(":"))
        return mi * 60 + se
    return None


def _stamp(t: int) -> str:
    return f"{t // 3600}:{t // 60 % 60:02d}:{t % 60:02d}"


def _neighbours(c, timed: list) -> list[str] | None:
    t = _seconds(c.where[0])
    if t is None:
        return None
    prev = [x for x in timed if x[0] < t and x[1].quote != c.quote]
    nxt = [x for x in timed if x[0] > t and x[1].quote != c.quote]
    pt, pc = prev[-1] if prev else (None, None)
    nt, nc = nxt[0] if nxt else (None, None)
    return [f"before, at {_stamp(pt)} ({pc.id}): “{pc.quote}”" if pc else "before: the opening of the lecture",
            f"after, at {_stamp(nt)} ({nc.id}): “{nc.quote}”" if nc else "after: the close of the lecture"]


def attach(claims: list, places: dict | None, transcript: list[str] | None = None) -> None:
    """Set each claim's ``context``: the seed sentences around its quote, else the transcript's (its
    paragraphs, from `transcript_paragraphs`), else the nearest quoted places before and after it; and a
    third line with the quote's corrected reading where it has a listed slip."""
    timed = sorted(((t, c) for c in claims for t in [_seconds(c.where[0])] if t is not None),
                   key=lambda x: (x[0], x[1].id))
    for c in claims:
        w = c.where[0]
        got = _around(places[w], c.quote) if places and w in places else None
        if got is None and transcript and seeds.transcript_seconds(w) is not None:
            got = _sentences_around(transcript, c.quote)
        got = got or _neighbours(c, timed)
        if got is None:
            continue
        meant = corrected(c.quote)
        c.context = got + ([f"read as: “{meant}”"] if meant else [])
