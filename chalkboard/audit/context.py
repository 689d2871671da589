"""Two lines of lecture context for each claim: the words around its quote where the project holds
them (a seed excerpt or speaker turn), else the neighbouring quoted places of the transcript, which is
quoted a sentence or two a claim and never copied whole."""
from __future__ import annotations

import re

from .. import seeds

SPAN = 170   # characters of context either side of a quote in a seed excerpt


def _flat(text: str) -> str:
    """The seed text on one line, with the same characters `seeds.normalise` compares (before lowercasing)."""
    text = text.replace("“", '"').replace("”", '"').replace("’", "'").replace("‘", "'")
    return re.sub(r"\s+", " ", text).strip()


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
    flat = _flat(text)
    i = flat.lower().find(seeds.normalise(quote))
    if i < 0:
        return None
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


def attach(claims: list, places: dict | None) -> None:
    """Set each claim's ``context`` (two lines): the seed words around its quote, else the nearest
    quoted places before and after it in the lecture."""
    timed = sorted(((t, c) for c in claims for t in [_seconds(c.where[0])] if t is not None),
                   key=lambda x: (x[0], x[1].id))
    for c in claims:
        w = c.where[0]
        if places and w in places:
            got = _around(places[w], c.quote)
            if got:
                c.context = got
                continue
        t = _seconds(w)
        if t is None:
            continue
        prev = [x for x in timed if x[0] < t and x[1].quote != c.quote]
        nxt = [x for x in timed if x[0] > t and x[1].quote != c.quote]
        lines = []
        if prev:
            pt, pc = prev[-1]
            lines.append(f"before, at {_stamp(pt)} ({pc.id}): “{pc.quote}”")
        else:
            lines.append("before: the opening of the lecture")
        if nxt:
            nt, nc = nxt[0]
            lines.append(f"after, at {_stamp(nt)} ({nc.id}): “{nc.quote}”")
        else:
            lines.append("after: the close of the lecture")
        c.context = lines
