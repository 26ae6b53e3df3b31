"""distinct_toggle: add or remove DISTINCT on a SELECT list."""

from __future__ import annotations

from sqlmend.search.generators.base import Generator, each_edit
from sqlmend.synth.nodes import selects
from sqlmend.sql import ast


def _options(sel):
    return [(None, "remove DISTINCT" if sel.args.get("distinct") is not None else "add DISTINCT")]


def _apply(sel, _):
    if sel.args.get("distinct") is not None:
        sel.args["distinct"].pop()
    else:
        sel.set("distinct", ast.Distinct())
    return True


def generate(tree, inp):
    """Return distinct rows, or every row, as the question asks."""
    yield from each_edit(tree, selects, _options, _apply)


GENERATOR = Generator("distinct_toggle", ("modifier_error",), generate, generate.__doc__)
