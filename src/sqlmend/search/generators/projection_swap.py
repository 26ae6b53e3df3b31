"""projection_swap: replace a selected column with another column of the tables in scope."""

from __future__ import annotations

from sqlmend.search.generators.base import Generator, column_swaps, each_edit, swap_column
from sqlmend.synth.nodes import select_columns


def generate(tree, inp):
    """Select another column (the question's names ranked first) instead of a selected one."""
    yield from each_edit(tree, lambda t: select_columns(t, inp.schema), column_swaps(inp, "select"), swap_column)


GENERATOR = Generator("projection_swap", ("attribute_mismatch",), generate, generate.__doc__)
