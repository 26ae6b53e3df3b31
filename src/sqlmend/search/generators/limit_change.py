"""limit_change: drop a LIMIT, or set it to 1 or to a number the question states."""

from __future__ import annotations

import re

from sqlmend.search.generators.base import Generator, each_edit
from sqlmend.synth.nodes import selects

_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "ten": 10}


def _locate(tree):
    sels = selects(tree)
    return [s for s in sels if s.args.get("limit") is not None or (s is sels[0] and s.args.get("order"))]


def _options_for(inp):
    def options(sel):
        lim = sel.args.get("limit")
        current = lim.expression.sql() if lim is not None and lim.expression is not None else None
        wanted = {1} | {int(n) for n in re.findall(r"\b(\d{1,2})\b", inp.question)} | {
            v for w, v in _WORDS.items() if re.search(rf"\b{w}\b", inp.question.lower())}
        out = [(n, f"LIMIT {current} -> {n}" if current else f"add LIMIT {n}")
               for n in sorted(wanted) if str(n) != current]
        if lim is not None:
            out.append((None, f"drop LIMIT {current}"))
        return out

    return options


def _apply(sel, n):
    if n is None:
        sel.args["limit"].pop()
    else:
        sel.limit(n, copy=False)
    return True


def generate(tree, inp):
    """Return as many rows as the question asks (the top one, the top N, or all)."""
    yield from each_edit(tree, _locate, _options_for(inp), _apply)


GENERATOR = Generator("limit_change", ("modifier_error",), generate, generate.__doc__)
