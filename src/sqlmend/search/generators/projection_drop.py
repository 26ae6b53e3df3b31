"""projection_drop: remove one item of a SELECT list that has two or more, or keep only one of three or more."""

from __future__ import annotations

from sqlmend.search.generators.base import Generator, each_edit
from sqlmend.synth.nodes import selects


def _locate(tree):
    return [sel for sel in selects(tree) if len(sel.expressions) >= 2]


def _options(sel):
    items = sel.expressions
    out = [(j, f"drop select item {e.sql()}") for j, e in enumerate(items)]
    if len(items) >= 3:  # systems often list every detail the question's noun might mean
        out += [(("keep", j), f"keep only select item {e.sql()}") for j, e in enumerate(items)]
    return out


def _apply(sel, option):
    if isinstance(option, tuple):
        keep = sel.expressions[option[1]]
        for e in list(sel.expressions):
            if e is not keep:
                e.pop()
    else:
        sel.expressions[option].pop()
    return True


def generate(tree, inp):
    """Remove one SELECT item, or all but one of three or more (the question asks for fewer columns)."""
    yield from each_edit(tree, _locate, _options, _apply)


GENERATOR = Generator("projection_drop", ("attribute_redundancy",), generate, generate.__doc__)
