#!/usr/bin/env python3
"""The README's shown output, and that of the guide in docs/, checked against the program and
written again from it.

Every fenced block of README.md or docs/*.md (PAGES) whose first line is `$ python3 build.py ...` shows a command and
what it prints (stdout and stderr together). Each line shown must be a line the command prints,
in order (a block may leave printed lines out; a line that is only "..." says so), and "..." in
a line stands for any text (a line ending in "..." shows the start of one). Runs of spaces count
as one. Times ("0.38 s" in a build log or "in 2.20 s") are not compared. A block
preceded by `<!-- readme: not run -->` is an illustration (a file the project does not ship).

    python3 bench/readme.py            check: name each shown line the program no longer prints
    python3 bench/readme.py --write    write each such line again from what the program prints

The README's set-up block's build log is written again by `--write` from a real first build (a fresh
clone of the committed project, nothing kept but the shipped SymPy results), and the speed table (docs/speed.md) by `python3 bench/speed.py --readme`. tests/test_readme.py runs the
check.
"""
from __future__ import annotations

import argparse
import difflib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def pages() -> list[Path]:
    """The README and every page of the guide it points to."""
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


NOT_RUN = "<!-- readme: not run -->"
SKIP = "..."
STAGE = re.compile(r"^(\s+\S+\s+)\d+\.\d+ s(\s.*)?$")    # "  derive       0.02 s   (515 quantities; ...)"
TOTAL = re.compile(r"\bin \d+\.\d+ s\b")                    # "... in 2.20 s", "OK in 0.38 s"


@dataclass
class Block:
    start: int                       # index of the "$ ..." line in the README's lines
    commands: list = field(default_factory=list)   # (command words, [shown lines], [their line indexes])


def _normal(line: str) -> str:
    """The line as compared: times blanked, runs of spaces (a table's alignment) as one."""
    line = line.rstrip()
    m = STAGE.match(line)
    line = m.group(1) + "#.## s" + (m.group(2) or "") if m else TOTAL.sub("in #.## s", line)
    return re.sub(r"\s+", " ", line)


def blocks(lines: list[str]) -> list[Block]:
    out, i = [], 0
    while i < len(lines):
        if lines[i].startswith("```") and i + 1 < len(lines) and lines[i + 1].startswith("$ python3 build.py"):
            not_run = i > 0 and lines[i - 1].strip() == NOT_RUN
            b, j = Block(i + 1), i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                if lines[j].startswith("$ "):
                    cmd = lines[j][2:]
                    while cmd.endswith("\\"):
                        j += 1
                        cmd = cmd[:-1] + " " + lines[j].strip()
                    b.commands.append((shlex.split(cmd), [], []))
                else:
                    b.commands[-1][1].append(lines[j])
                    b.commands[-1][2].append(j)
                j += 1
            if not not_run:
                out.append(b)
            i = j
        i += 1
    return out


def run(words: list[str], cwd: Path = ROOT) -> list[str]:
    assert words[:2] == ["python3", "build.py"], words
    r = subprocess.run([sys.executable, *words[1:]], cwd=cwd, capture_output=True, text=True, timeout=600)
    return (r.stderr + r.stdout).splitlines()   # as a terminal shows them: notes and errors come first


def match(shown: list[str], printed: list[str]) -> list[tuple[int, int | None]]:
    """For each shown line (not "..."), the index of the printed line it is, or None."""
    out, pos = [], 0
    for k, line in enumerate(shown):
        if line.strip() == SKIP:
            continue
        want = re.compile(".*".join(re.escape(part) for part in _normal(line).split(SKIP)))
        hit = None
        for i in range(pos, len(printed)):
            if want.fullmatch(_normal(printed[i])):
                hit = i
                break
        out.append((k, hit))
        if hit is not None:
            pos = hit + 1
    return out


def check(lines: list[str], name: str = "README.md") -> list[str]:
    """One message per shown line the program does not print where the page ``name`` shows it."""
    problems = []
    for b in blocks(lines):
        for words, shown, where in b.commands:
            printed = run(words)
            for k, hit in match(shown, printed):
                if hit is None:
                    close = difflib.get_close_matches(shown[k], printed, n=1, cutoff=0.3)
                    problems.append(f"{name}:{where[k] + 1}: `{' '.join(words)}` no longer prints\n"
                                    f"    {shown[k]}\n  it prints\n    {close[0] if close else '(nothing like it)'}")
    return problems


def write(lines: list[str]) -> int:
    """Each shown line the program no longer prints, replaced by the printed line most like it
    (cut where the README cut it); returns how many were replaced."""
    changed = 0
    for b in blocks(lines):
        for words, shown, where in b.commands:
            printed = run(words)
            hits = match(shown, printed)
            for n, (k, hit) in enumerate(hits):
                if hit is not None:
                    continue
                # the printed line most like it, between the lines matched before and after it
                lo = max([h for _, h in hits[:n] if h is not None], default=-1) + 1
                hi = min([h for _, h in hits[n + 1:] if h is not None], default=len(printed))
                line = shown[k]
                close = difflib.get_close_matches(line, printed[lo:hi], n=1, cutoff=0.3)
                if not close:
                    continue
                new = close[0]
                if line.rstrip().endswith(SKIP):   # cut where the README cut it
                    head = line.rstrip()[:-len(SKIP)]
                    # the cut as printed, spaces included: "(" then "..." must still match "(rental ..."
                    new = new[:len(head)] + SKIP if len(new) > len(head) else new
                hits[n] = (k, lo + printed[lo:hi].index(close[0]))
                lines[where[k]] = new
                changed += 1
    return changed


def write_build_log(lines: list[str]) -> bool:
    """The set-up block's build log, from a real first build: a fresh clone of the project's
    committed state (nothing in .cache/: SymPy's results come from the shipped
    derivations/solved.pickle, every figure is drawn and both PDFs compiled), as a new user's
    `python3 build.py` runs it."""
    start = next((i for i, ln in enumerate(lines) if ln == "chalkboard build"), None)
    if start is None:   # a page without the build log
        return False
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("wrote "))
    with tempfile.TemporaryDirectory() as tmp:
        proj = Path(tmp) / "proj"
        if (ROOT / ".git").exists():
            subprocess.run(["git", "clone", "--quiet", str(ROOT), str(proj)], check=True)
        else:
            shutil.copytree(ROOT, proj, ignore=shutil.ignore_patterns("build", ".cache", ".pytest_cache",
                                                                      "__pycache__"))
        log = run(["python3", "build.py"], cwd=proj)
    log = log[log.index("chalkboard build"):]
    print("\n".join(log))
    if lines[start:end + 1] == log:
        return False
    lines[start:end + 1] = log
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="write the shown lines again from the program")
    args = ap.parse_args()
    failed = False
    for page in pages():
        name = str(page.relative_to(ROOT))
        lines = page.read_text(encoding="utf-8").splitlines()
        if args.write:
            n = write(lines)
            logged = write_build_log(lines)
            page.write_text("\n".join(lines) + "\n", encoding="utf-8")
            print(f"{name}: {n} shown lines written again" + ("; the build log too" if logged else ""))
            continue
        problems = check(lines, name)
        for p in problems:
            print(p)
        print(f"{name}: {len(problems)} shown lines differ from the program" if problems else
              f"{name}: every shown line is what the program prints")
        failed = failed or bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
