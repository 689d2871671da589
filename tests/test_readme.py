"""The README and the guide in docs/ show what the program prints: every `$ python3 build.py ...`
block is run and each line it shows must be a line the command prints, in order (bench/readme.py;
times are not compared). A stale count, a changed formula or a renamed quantity on any page fails
here; `python3 bench/readme.py --write` writes the shown lines again. Every relative link between
the pages names a file, and a heading, that exists."""
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import readme  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("page", readme.pages(), ids=lambda p: p.name)
def test_every_shown_output_is_what_the_program_prints(page):
    lines = page.read_text(encoding="utf-8").splitlines()
    problems = readme.check(lines, str(page.relative_to(ROOT)))
    assert not problems, "\n".join(problems) + "\n(python3 bench/readme.py --write writes them again)"


def test_the_pages_with_commands_are_all_checked():
    """The blocks are found on every page that runs commands (a parser that finds none passes
    nothing): the README's recipes, and the guide's pages of commands."""
    found = {p.name: len(readme.blocks(p.read_text(encoding="utf-8").splitlines())) for p in readme.pages()}
    assert found["README.md"] >= 10 and found["usage.md"] >= 10 and found["commands.md"] >= 3, found
    assert {"report.md", "usage.md", "commands.md", "data.md", "design.md", "developers.md", "speed.md"} <= set(found)


def test_the_readme_is_short_and_points_to_every_page():
    text = readme.README.read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) < 20_000
    for page in readme.pages()[1:]:
        assert f"](docs/{page.name})" in text, f"README.md does not link docs/{page.name}"


def _anchor(heading: str) -> str:
    """A heading's anchor as GitHub writes it: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)   # not a heading in a block
    return {_anchor(m) for m in re.findall(r"^#+ (.*)$", text, flags=re.M)}


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def broken_links(page: Path) -> tuple[list[str], int]:
    """Each relative link of ``page`` to a file or heading that does not exist, and how many
    relative links it has (a link in a code block is text, not a link)."""
    problems, checked = [], 0
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):   # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        checked += 1
        if not dest.exists():
            problems.append(f"{page.name}: link to {target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            problems.append(f"{page.name}: link to {target}: no such heading in {dest.name}")
    return problems, checked


def test_every_relative_link_resolves():
    found = [broken_links(page) for page in readme.pages()]
    assert sum(n for _, n in found) >= 15   # the links are found
    problems = [p for page, _ in found for p in page]
    assert not problems, "\n".join(problems)


def test_a_broken_link_or_heading_is_caught(tmp_path):
    assert _anchor("The edit loop: `watch`") == "the-edit-loop-watch"
    (tmp_path / "other.md").write_text("# Other\n\n## Set up and run\n")
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n[ok](other.md#set-up-and-run), [here](#page), [web](https://example.org/x)\n"
                    "[gone](missing.md), [no heading](other.md#speed)\n\n```\n[in a block](nowhere.md)\n```\n")
    problems, checked = broken_links(page)
    assert checked == 4
    assert problems == ["page.md: link to missing.md: no such file", "page.md: link to other.md#speed: no such heading in other.md"]


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
