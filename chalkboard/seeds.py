"""The lecture seeds: named places ('004_…txt:71', '000_…txt@0:52') and the text at each."""
from __future__ import annotations

import re
from pathlib import Path

TURN = re.compile(r"^\*\*(?P<who>[^*]+)\*\* \((?P<ts>\d+:\d\d)\)\s*$")
WHERE = re.compile(r"^(?P<file>[0-9a-z_]+\.txt)(?::(?P<line>\d+)|@(?P<ts>\d+:\d\d))$")
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


def normalise(s: str) -> str:
    s = s.replace("“", '"').replace("”", '"').replace("’", "'").replace("‘", "'")
    return re.sub(r"\s+", " ", s).strip().lower()


def has_number(text: str) -> bool:
    return bool(re.search(r"\d", text) or NUMBER_WORDS.search(text))
