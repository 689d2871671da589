"""The README shows what the program prints: every `$ python3 build.py ...` block is run and each
line it shows must be a line the command prints, in order (bench/readme.py; times are not
compared). A stale count, a changed formula or a renamed quantity in the README fails here;
`python3 bench/readme.py --write` writes the shown lines again."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import readme  # noqa: E402


@pytest.mark.slow
def test_every_shown_output_is_what_the_program_prints():
    lines = readme.README.read_text(encoding="utf-8").splitlines()
    assert len(readme.blocks(lines)) >= 10     # the blocks are found (a parser that finds none passes nothing)
    problems = readme.check(lines)
    assert not problems, "\n".join(problems) + "\n(python3 bench/readme.py --write writes them again)"


def test_a_changed_line_is_caught():
    lines = ["```", "$ python3 build.py eval balance_batch --hardware h100-sxm --model deepseek-v3",
             "balance_batch = 5,358 sequences   (batch at which ...)", "  ...", "```"]
    problems = readme.check(lines)
    assert len(problems) == 1 and "5,357 sequences" in problems[0]   # what it does print is named
    lines[2] = lines[2].replace("5,358", "5,357")
    assert readme.check(lines) == []


def test_times_and_alignment_are_not_compared():
    printed = ["chalkboard build", "  load         0.05 s", "wrote build/report.html in 2.20 s"]
    shown = ["chalkboard build", "  load   9.99 s", "wrote build/report.html in 0.01 s"]
    assert [hit for _, hit in readme.match(shown, printed)] == [0, 1, 2]
    assert [hit for _, hit in readme.match(["  load  0.05 ms"], printed)] == [None]


def test_the_recipes_are_ten_commands_that_are_run():
    """The README's recipes: ten questions, each one `$ python3 build.py ...` block that the
    check above runs (none marked not run), with at least one printed line shown."""
    text = readme.README.read_text(encoding="utf-8")
    start = text.index("## Recipes")
    section = text[start:text.index("\n## ", start + 3)].splitlines()
    found = readme.blocks(section)
    assert len(found) == 10
    assert readme.NOT_RUN not in "\n".join(section)
    for b in found:
        assert len(b.commands) == 1 and b.commands[0][0][:2] == ["python3", "build.py"]
        assert any(line.strip() not in ("", readme.SKIP) for line in b.commands[0][1]), b.commands[0][0]
