"""Originals that fail to run, made from a gold the way real systems' SQL fails.

Real text-to-SQL systems write queries the engine refuses: a column left
unqualified in a join (``ambiguous column name``), a column read from a table
the query did not join (``no such column``), a column qualified with the wrong
table. The repair search replaces such an original by its best candidate
(:mod:`sqlmend.search.stage`), so its verifier has to rank the candidates of a
failing original; these variants are its training and checking material
(``sqlmend train-verifier --kinds failing``, ``sqlmend bench failing``).
"""

from __future__ import annotations

import random
from typing import Any

from sqlmend import sql as sqlmod
from sqlmend.errors import QueryTimeout, SqlError, SqlmendError
from sqlmend.sql import ast

#: The ways :func:`variants` breaks a gold, in order.
KINDS = ("unqualified", "join dropped", "wrong qualifier")


def _unqualify(tree: ast.Expression) -> None:
    for col in tree.find_all(ast.Column):
        if col.table:
            col.set("table", None)


def variants(gold: str, rng: random.Random | None = None) -> list[tuple[str, str]]:
    """``[(kind, sql)]``: the gold with every column unqualified; with its last join dropped as well;
    with one qualified column's qualifier swapped for another table's alias of the same SELECT
    (``rng`` picks the column; the first without one). Only golds with a join give any (with one
    table, nothing is ambiguous). Whether each fails is for the database to say (:func:`failing`)."""
    try:
        tree = sqlmod.parse(gold)
    except SqlError:
        return []
    joins = list(tree.find_all(ast.Join))
    if not joins:
        return []
    out = []
    u = tree.copy()
    _unqualify(u)
    out.append(("unqualified", sqlmod.render(u)))
    d = tree.copy()
    list(d.find_all(ast.Join))[-1].pop()
    _unqualify(d)
    out.append(("join dropped", sqlmod.render(d)))
    w = tree.copy()
    cols = [c for c in w.find_all(ast.Column) if c.table]
    if cols:
        col = rng.choice(cols) if rng else cols[0]
        select = col.find_ancestor(ast.Select)
        names = [t.alias_or_name for t in select.find_all(ast.Table)] if select is not None else []
        others = [n for n in names if n and n.lower() != col.table.lower()]
        if others:
            col.set("table", ast.to_identifier(rng.choice(others) if rng else others[0]))
            out.append(("wrong qualifier", sqlmod.render(w)))
    return out


def failing(gold: str, db: Any, rng: random.Random | None = None, timeout: float = 5.0) -> list[tuple[str, str]]:
    """The :func:`variants` of ``gold`` that the engine of ``db`` refuses (an error, not a timeout)."""
    out = []
    for kind, text in variants(gold, rng):
        try:
            db.execute(text, timeout=timeout, max_rows=1)
        except QueryTimeout:
            continue
        except SqlmendError:
            out.append((kind, text))
    return out
