"""The lecture seeds: named places ('004_…txt:71', '000_…txt@0:52') and the text at each."""
from __future__ import annotations

import re
from pathlib import Path

TURN = re.compile(r"^\*\*(?P<who>[^*]+)\*\* \((?P<ts>\d+:\d\d)\)\s*$")
WHERE = re.compile(r"^(?P<file>[0-9a-z_]+\.txt)(?::(?P<line>\d+)|@(?P<ts>\d+:\d\d))$"
                   r"|^(?P<chapters>chapters-3-7\.md)#(?P<id>[A-Z]-\d\d)$"
                   r"|^transcript@(?P<tts>\d:[0-5]\d:[0-5]\d)$")
# The public cleaned transcript, cited by its timestamp ('transcript@0:04:23'): its words are quoted a
# sentence or two a claim, never copied into the project, so a quote there is checked by its source
# link, not against a file here. The lecture runs 2:13:50.
TRANSCRIPT_PREFIX = "transcript@"
LECTURE_SECONDS = 2 * 3600 + 13 * 60 + 50


def transcript_seconds(where: str) -> int | None:
    """Seconds into the lecture of a transcript place ('transcript@1:15:21' -> 4521), else None."""
    m = WHERE.match(where)
    if not m or not m["tts"]:
        return None
    h, mi, se = (int(x) for x in m["tts"].split(":"))
    return h * 3600 + mi * 60 + se
TRANSCRIPT_FILE = "transcript.md"   # the public cleaned transcript, where it sits beside the project


def transcript_file(root: Path) -> Path | None:
    """The public transcript, read (never copied) from the lecture's folder of the project or the shared
    lecture folder beside it; None where neither holds it."""
    for folder in (root / "lecture", root.parent / "shared" / "lecture"):
        if (folder / TRANSCRIPT_FILE).is_file():
            return folder / TRANSCRIPT_FILE
    return None


CHAPTERS_FILE = "chapters-3-7.md"   # the lecture after the seeds, paraphrased, beside the seeds' folder
BULLET = re.compile(r"^- \*\*(?P<id>[A-Z]-\d\d)\*\*\s*(?P<text>.*)$")
NUMBER_WORDS = re.compile(
    r"\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|"
    r"forty|fifty|sixty|hundred|hundreds|thousand|thousands|million|millions|billion|half|twice|"
    r"double|doubling|triple|quadruple)\b", re.I)


def places(seed_dir: Path) -> dict[str, str]:
    """Every citable place in the seeds -> its text (a line of 004, a speaker turn of 000)."""
    out = {}
    for path in sorted(seed_dir.glob("*.txt")):
        lines = path.read_text(encoding="utf-8").splitlines()
        if any(TURN.match(ln) for ln in lines):
            ts, buf = None, []
            for ln in lines:
                m = TURN.match(ln)
                if m:
                    if ts is not None:
                        out[f"{path.name}@{ts}"] = "\n".join(buf)
                    ts, buf = m["ts"], []
                elif ts is not None:
                    buf.append(ln)
            if ts is not None:
                out[f"{path.name}@{ts}"] = "\n".join(buf)
        else:
            for i, ln in enumerate(lines, start=1):
                out[f"{path.name}:{i}"] = ln
    return out


def chapter_places(lecture_dir: Path) -> dict[str, str]:
    """Every claim of the later chapters -> its paraphrase ('chapters-3-7.md#T-02' -> '...')."""
    path = lecture_dir / CHAPTERS_FILE
    if not path.is_file():
        return {}
    out, cur = {}, None
    for ln in path.read_text(encoding="utf-8").splitlines():
        m = BULLET.match(ln)
        if m:
            cur = f"{CHAPTERS_FILE}#{m['id']}"
            out[cur] = m["text"]
        elif cur and ln.startswith("  ") and ln.strip():
            out[cur] += " " + ln.strip()
        else:
            cur = None
    return out


def normalise(s: str) -> str:
    s = s.replace("“", '"').replace("”", '"').replace("’", "'").replace("‘", "'")
    return re.sub(r"\s+", " ", s).strip().lower()


def has_number(text: str) -> bool:
    return bool(re.search(r"\d", text) or NUMBER_WORDS.search(text))
