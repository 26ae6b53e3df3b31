"""What the review pages and reports of the car_1 run must show, read from the run itself."""

from __future__ import annotations


def static_counts(run) -> tuple[int, int]:
    """``(changed by the static stage, fixed)`` of an evaluated run: what the pages and reports must show.

    The catalogue grows, so the counts are read from the run; at least 13 / 4 (what the rules of
    2026-11-29 did on these 92 queries) keeps the run a real one."""
    changed = sum(it.changed and it.stage == "static" for it in run.items)
    fixed = sum(it.verdict == "fixed" for it in run.items)
    assert changed >= 13 and fixed >= 4
    return changed, fixed
