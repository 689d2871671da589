"""Every timing of the program that README.md and docs/ show is one bench/speed.py printed.

The bench's last recorded run is the table `python3 bench/speed.py --readme` writes into
docs/speed.md. A page states a timing of the program only by citing a row of that table,
"8.11 s (bench: a fresh clone's first build)", and the cited number must be within 50% of the
row's; the README's build log, a real first build, must be within 50% of the first-build row. Any
other timing of a build, a compile, an import or the tests in the pages' prose is refused, so a
number the bench never printed cannot creep back into the docs. (Timings of the physics, a step
time or a drain time, are the program's answers, checked by tests/test_readme.py.)"""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TABLE = ("<!-- speed-table: written by python3 bench/speed.py --readme -->", "<!-- end speed-table -->")
CITED = re.compile(r"(\d+(?:\.\d+)?) s \(bench: (.+?)\)(?=[\s,;.:]|$)")
# a duration of the program in prose: seconds or minutes beside a word that says what ran (a goal,
# "under 3 minutes" or "within 3 minutes", is a bound, not a measurement)
DURATION = re.compile(r"(?<!under )(?<!within )\b\d+(?:\.\d+)?(?: m \d+)? (?:s|seconds|min|minutes)\b")
OF_THE_PROGRAM = re.compile(r"\b(build|builds|compile|compiles|compiled|import|imports|pytest|test command|"
                            r"tests took|wall|CPU)\b", re.I)


def bench_rows() -> dict[str, float]:
    """The table's rows: 'section / label' and, where the label is unique, 'label' alone."""
    text = (ROOT / "docs" / "speed.md").read_text(encoding="utf-8")
    block = text[text.index(TABLE[0]):text.index(TABLE[1])]
    rows, seen, section = {}, {}, ""
    for line in block.splitlines():
        if re.match(r"^  \S", line) and not re.search(r"\d+\.\d+ s\b", line):
            section = line.strip()
        m = re.match(r"^\s+(\S.*?)\s{2,}(\d+\.\d+) s\b", line)
        if m:
            label, secs = m.group(1), float(m.group(2))
            rows[f"{section} / {label}"] = secs
            seen.setdefault(label, []).append(secs)
    rows.update({label: v[0] for label, v in seen.items() if len(v) == 1})
    return rows


def prose(page: Path):
    """(first line number, paragraph) outside fenced blocks and outside the bench's own table, each
    paragraph's lines joined by spaces (a citation may be broken over two lines)."""
    fenced = in_table = False
    para, first = [], 0
    for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        skip = False
        if line.startswith(TABLE[0]) or line.startswith(TABLE[1]):
            in_table, skip = line.startswith(TABLE[0]), True
        elif line.lstrip().startswith("```"):
            fenced, skip = not fenced, True
        if skip or fenced or in_table or not line.strip() or line.lstrip().startswith("- "):
            if para:
                yield first, " ".join(para)
            para = [line.strip()] if line.lstrip().startswith("- ") and not (fenced or in_table or skip) else []
            first = n
            continue
        if not para:
            first = n
        para.append(line.strip())
    if para:
        yield first, " ".join(para)


def test_the_table_has_the_rows_the_pages_need():
    rows = bench_rows()
    assert "a fresh clone's first build" in rows and len(rows) > 10


def test_every_cited_timing_is_the_benchs_within_half():
    rows, wrong = bench_rows(), []
    for page in PAGES:
        for n, line in prose(page):
            for secs, label in CITED.findall(line):
                if label not in rows:
                    wrong.append(f"{page.name}:{n}: no bench row {label!r}")
                elif not 2 / 3 <= float(secs) / rows[label] <= 1.5:
                    wrong.append(f"{page.name}:{n}: {secs} s against the bench's {rows[label]} s for {label!r}")
    assert not wrong, "\n".join(wrong)


def test_no_timing_of_the_program_without_its_bench_row():
    loose = []
    for page in PAGES:
        for n, line in prose(page):
            bare = CITED.sub("", line)
            if DURATION.search(bare) and OF_THE_PROGRAM.search(bare):
                loose.append(f"{page.name}:{n}: {line.strip()[:120]}")
    assert not loose, "timings the bench did not print:\n" + "\n".join(loose)


def test_the_readmes_first_build_log_is_near_the_benchs_first_build():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = float(re.search(r"^wrote build/report\.html.* in (\d+\.\d+) s$", text, re.M).group(1))
    bench = bench_rows()["a fresh clone's first build"]
    assert 2 / 3 <= shown / bench <= 1.5, f"README's first build {shown} s, the bench's {bench} s"
