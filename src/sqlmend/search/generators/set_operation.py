"""set_operation: use another set operation (UNION / INTERSECT / EXCEPT)."""

from __future__ import annotations

from sqlmend.search.generators.base import Generator, each_edit
from sqlmend.synth.nodes import SETOPS


def _locate(tree):
    return list(tree.find_all(*SETOPS))


def _options(node):
    return [(cls, f"{type(node).__name__.upper()} -> {cls.__name__.upper()}")
            for cls in SETOPS if not isinstance(node, cls)]


def _apply(node, cls):
    new = cls(this=node.this.copy(), expression=node.expression.copy(), distinct=True)
    for key in ("order", "limit"):
        if node.args.get(key) is not None:
            new.set(key, node.args[key].copy())
    if node.parent is None:
        return new
    node.replace(new)
    return True


def generate(tree, inp):
    """Combine the two branches as the question says (both: INTERSECT, but not: EXCEPT, or: UNION)."""
    yield from each_edit(tree, _locate, _options, _apply)


GENERATOR = Generator("set_operation", ("clause_error",), generate, generate.__doc__)
