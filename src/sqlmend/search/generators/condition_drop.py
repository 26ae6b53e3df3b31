"""condition_drop: remove one conjunct of a WHERE clause (the clause when it has one)."""

from __future__ import annotations

from sqlmend.search.generators.base import Generator, each_edit
from sqlmend.sql import conjuncts
from sqlmend.synth.nodes import remove_conjunct, selects


def _locate(tree):
    return [(sel, p) for sel in selects(tree) if (w := sel.args.get("where")) is not None
            for p in conjuncts(w.this)]


def _options(item):
    return [(None, f"drop condition {item[1].sql()}")]


def _apply(item, _):
    remove_conjunct(*item)
    return True


def generate(tree, inp):
    """Drop a WHERE condition the question does not state."""
    yield from each_edit(tree, _locate, _options, _apply)


GENERATOR = Generator("condition_drop", ("condition_error",), generate, generate.__doc__)
