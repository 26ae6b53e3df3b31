"""The documentation stays a user's: short pages, no dated run notes in the README, no broken links.

README.md is for a user (at most 150 lines, no "2026-12-02, 01:19"-style run notes);
docs/benchmarks.md holds the current numbers (at most 400 lines), the record of experiments
is docs/history.md. Every relative link of README.md and docs/*.md names a file that exists,
and a link to a section of a Markdown page names a heading of that page.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]

#: A date with a time of day: "2026-12-02, 01:19", "2026-12-02 03:22", "2026-12-02T03:22".
DATED_RUN = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:,\s*|\s+|T)\d{1,2}:\d{2}\b")
#: Inline links and images: [text](target) / ![alt](target); the target up to a space or ')'.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~)")


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _prose(path: Path) -> list[tuple[int, str]]:
    """The lines outside fenced code blocks, numbered from 1."""
    out, fenced = [], False
    for n, line in enumerate(_lines(path), 1):
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            out.append((n, line))
    return out


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for _, line in _prose(path):
        m = re.match(r"#{1,6}\s+(.*)", line)
        if not m:
            continue
        slug = _slug(m.group(1))
        k = seen.get(slug, 0)
        out.add(slug if k == 0 else f"{slug}-{k}")
        seen[slug] = k + 1
    return out


def test_readme_is_at_most_150_lines():
    assert len(_lines(README)) <= 150, len(_lines(README))


def test_benchmarks_is_at_most_400_lines():
    page = REPO / "docs" / "benchmarks.md"
    assert len(_lines(page)) <= 400, len(_lines(page))


def test_the_record_of_experiments_has_its_own_page():
    assert (REPO / "docs" / "history.md").is_file()


def test_readme_has_no_dated_run_notes():
    notes = [f"README.md:{n}: {line.strip()}" for n, line in enumerate(_lines(README), 1)
             if DATED_RUN.search(line)]
    assert not notes, notes


@pytest.mark.parametrize("text", ["(2026-12-02, 01:19: 33 fixed)", "rerun 2026-12-02 03:22", "2026-12-02T03:22"])
def test_a_dated_run_note_is_recognised(text):
    assert DATED_RUN.search(text)


@pytest.mark.parametrize("text", ["measured 2026-12-02 with bench search", "12-02 01:14–01:18"])
def test_a_plain_date_is_not_a_run_note(text):
    assert not DATED_RUN.search(text)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_points_at_an_existing_file(page):
    broken = []
    for n, line in _prose(page):
        for target in LINK.findall(line):
            if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):   # http:, https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(REPO)}:{n}: {target}"
            if not file.exists():
                broken.append(f"{where} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
                broken.append(f"{where} (no such heading)")
    assert not broken, broken
