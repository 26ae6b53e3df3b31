"""projection_reorder: swap two adjacent items of the outermost SELECT list."""

from __future__ import annotations

from sqlmend.search.generators.base import Generator, each_edit
from sqlmend.synth.nodes import selects


def _locate(tree):
    sels = selects(tree)
    return [sels[0]] if sels and 2 <= len(sels[0].expressions) <= 4 else []


def _options(sel):
    return [(j, f"swap select items {j} and {j + 1}") for j in range(len(sel.expressions) - 1)]


def _apply(sel, j):
    items = [e.copy() for e in sel.expressions]
    items[j], items[j + 1] = items[j + 1], items[j]
    sel.set("expressions", items)
    return True


def generate(tree, inp):
    """Return the same columns in the order the question names them (adjacent swap)."""
    yield from each_edit(tree, _locate, _options, _apply)


GENERATOR = Generator("projection_reorder", ("attribute_mismatch",), generate, generate.__doc__)
