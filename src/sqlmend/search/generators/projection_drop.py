"""projection_drop: remove one item of a SELECT list that has two or more."""

from __future__ import annotations

from sqlmend.search.generators.base import Generator, each_edit
from sqlmend.synth.nodes import selects


def _locate(tree):
    return [sel for sel in selects(tree) if len(sel.expressions) >= 2]


def _options(sel):
    return [(j, f"drop select item {e.sql()}") for j, e in enumerate(sel.expressions)]


def _apply(sel, j):
    sel.expressions[j].pop()
    return True


def generate(tree, inp):
    """Remove one SELECT item (the question asks for fewer columns)."""
    yield from each_edit(tree, _locate, _options, _apply)


GENERATOR = Generator("projection_drop", ("attribute_redundancy",), generate, generate.__doc__)
