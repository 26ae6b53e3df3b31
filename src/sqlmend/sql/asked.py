"""The features of a query's SELECT items that say whether the question asks for each one.

The trained reading (:mod:`sqlmend.search.asked`) turns these into P(asked); this module only
reads the question and the query: is an item's name, a word of its name, or an abbreviation of two
of the question's words in the question; its aggregate and the question's word for it; is it a key;
does it also filter, order or group; how many items the SELECT has. :func:`training_items` makes
the training rows of one gold (``sqlmend train-asked``).
"""

from __future__ import annotations

import random
import re
from typing import Callable

from sqlglot import exp

from sqlmend.errors import SqlError
from sqlmend.sql.diff import folded
from sqlmend.sql.parse import parse

AGGREGATES = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Max: "max", exp.Min: "min"}
#: The question's words for each aggregate (matched at a word's start).
CUES = {"count": ("how many", "number", "count", "amount"),
        "sum": ("total", "sum", "combined"),
        "avg": ("average", "mean", "avg"),
        "max": ("max", "highest", "largest", "most", "biggest", "oldest", "latest", "longest", "greatest", "top"),
        "min": ("min", "lowest", "smallest", "least", "youngest", "earliest", "shortest", "fewest")}
ORDER_WORDS = {"by", "order", "sorted", "sort", "ordered", "ascending", "descending"}
FILTER_WORDS = {"whose", "with", "where", "that", "than", "of", "in", "for", "is", "are", "has", "have",
                "having", "from", "without"}
#: Name parts that say nothing of what a column holds.
EMPTY_PARTS = {"id", "the", "of", "and", "a", "an", "in", "to", "for", "is"}

#: The features, in the weights' order.
FEATURES = ("agg_none", "agg_count", "agg_sum", "agg_avg", "agg_max", "agg_min", "agg_other", "agg_cue", "star",
            "full", "parts_frac", "parts_any", "parts_n", "abbrev", "is_key", "q_id", "in_where", "in_order",
            "in_group", "after_order", "after_filter", "n_items", "details", "q_count", "q_super", "first_pos",
            "and_near", "alias_in_q", "list_cue")


def _stem(word: str) -> str:
    return word.rstrip("s") if len(word) > 3 else word


def _words(text: str) -> list[str]:
    return [_stem(w) for w in re.findall(r"[a-z0-9]+", text.casefold())]


def name_parts(name: str) -> list[str]:
    """A column name's words (snake_case and camelCase split, plural folded). Unlike
    :func:`sqlmend.sql.names.words`, a capital run before a hump stays one word (``LName``: ``lname``,
    which :func:`_abbreviates` reads as "last name"; ``words`` gives ``l``, ``name``), and digits stay
    with their letters; the shipped weights were fitted on this split.

    >>> name_parts("Song_release_year"), name_parts("customerFirstName")
    (['song', 'release', 'year'], ['customer', 'first', 'name'])
    """
    name = re.sub(r"([a-z])([A-Z])", r"\1_\2", name)
    return [_stem(p.casefold()) for p in re.split(r"[^A-Za-z0-9]+", name) if p]


def _matches(part: str, words: list[str]) -> list[int]:
    """Where the question has a name part: the same word, or one sharing a stem of 4+ letters
    ("populace" / "population")."""
    out = []
    for i, w in enumerate(words):
        if w == part or (len(part) >= 4 and len(w) >= 4
                         and (w.startswith(part[:max(4, len(part) - 2)]) or part.startswith(w[:max(4, len(w) - 2)]))):
            out.append(i)
    return out


def _abbreviates(name: str, words: list[str]) -> bool:
    """Whether a name abbreviates two of the question's words in a row ("lname": "last name",
    "acc_bal": "account balance")."""
    low = name.casefold()
    for a, b in zip(words, words[1:]):
        if len(low) >= 4 and (low == a[0] + b or low == a[:3] + b[:3]):
            return True
    parts = name_parts(name)
    if len(parts) >= 2 and all(len(p) >= 2 for p in parts):
        return any(all(words[i + k].startswith(p) for k, p in enumerate(parts))
                   for i in range(len(words) - len(parts) + 1))
    return False


def _clause_columns(tree: exp.Expression, *keys: str) -> set[str]:
    return {c.name.casefold() for key in keys if (node := tree.args.get(key)) is not None
            for c in node.find_all(exp.Column)}


def item_features(question: str, item: exp.Expression, tree: exp.Select) -> list[float]:
    """The features of one SELECT item of ``tree`` (in :data:`FEATURES`' order).

    Args:
        question: the question.
        item: one of ``tree.selects``.
        tree: the SELECT it belongs to.
    """
    q, words, spelled = question.casefold(), _words(question), folded(question)
    inner = item.this if isinstance(item, exp.Alias) else item
    agg = next((name for kind, name in AGGREGATES.items() if isinstance(inner, kind)),
               "none" if isinstance(inner, exp.Column) else "other")
    names = [c.name for c in inner.find_all(exp.Column)]
    f = dict.fromkeys(FEATURES, 0.0)
    f["agg_" + agg] = 1.0
    if agg in CUES:
        f["agg_cue"] = float(any(re.search(rf"\b{c}", q) for c in CUES[agg]))
    f["star"] = float(isinstance(inner, exp.Count) and inner.find(exp.Star) is not None)
    f["full"] = float(any(len(folded(n)) >= 4 and folded(n) in spelled for n in names))
    best, where = 0.0, []
    for n in names:
        parts = [p for p in name_parts(n) if p not in EMPTY_PARTS and len(p) >= 2]
        if not parts:
            continue
        hits = [_matches(p, words) for p in parts]
        share = sum(1 for h in hits if h) / len(parts)
        if share >= best:
            best, where = share, sorted(i for h in hits for i in h)
        f["parts_n"] = max(f["parts_n"], float(len(parts)))
    f["parts_frac"], f["parts_any"] = best, float(best > 0)
    f["abbrev"] = float(any(_abbreviates(n, words) for n in names))
    f["is_key"] = float(any(n.casefold() == "id" or re.search(r"(^|_|[a-z])(id|ID|Id)$", n) for n in names))
    f["q_id"] = float(bool(re.search(r"\bids?\b", q)))
    low = {n.casefold() for n in names}
    f["in_where"] = float(bool(low & _clause_columns(tree, "where", "having")))
    f["in_order"] = float(bool(low & _clause_columns(tree, "order")))
    f["in_group"] = float(bool(low & _clause_columns(tree, "group")))
    if where:
        p = where[0]
        f["after_order"] = float(any(w in ORDER_WORDS for w in words[max(0, p - 4):p]))
        f["after_filter"] = float(any(w in FILTER_WORDS for w in words[max(0, p - 2):p]))
        f["first_pos"] = p / max(1, len(words))
        f["and_near"] = float(any(w in ("and", "or") for w in words[max(0, p - 2):p + 3]))
    f["n_items"] = float(len(tree.selects))
    f["details"] = float(bool(re.search(r"\b(details?|information|info|everything|all attributes)\b", q)))
    f["q_count"] = float(bool(re.search(r"\b(how many|number of|count)\b", q)))
    f["q_super"] = float(bool(re.search(
        r"\b(most|least|highest|lowest|largest|smallest|fewest|greatest|top|maximum|minimum)\b", q)))
    alias = item.alias if isinstance(item, exp.Alias) else ""
    f["alias_in_q"] = float(bool(alias) and folded(alias) in spelled)
    f["list_cue"] = float(bool(re.search(r"\b(list|show|give|return|what are|what is|find)\b", q)))
    return [f[n] for n in FEATURES]


def _is_star(item: exp.Expression) -> bool:
    """``*`` or ``t.*``: the columns it stands for are not items to read."""
    return isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star))


def _select(sql: str | exp.Expression, dialect: str) -> exp.Select | None:
    """``sql`` as a SELECT whose items can be read one by one (parsed unless a tree is given), or None:
    a query that does not parse, a set operation, a ``*``."""
    if isinstance(sql, str):
        try:
            sql = parse(sql, dialect)
        except SqlError:
            return None
    if not isinstance(sql, exp.Select) or any(_is_star(s) for s in sql.selects):
        return None
    return sql


def item_features_of(question: str, sql: str | exp.Expression | None,
                     dialect: str = "sqlite") -> list[list[float]] | None:
    """The features of each SELECT item of ``sql`` (text, or a tree, which is not changed), in order;
    None when they cannot be read item by item (see :func:`_select`)."""
    tree = _select(sql, dialect) if sql is not None else None
    return None if tree is None else [item_features(question, s, tree) for s in tree.selects]


def _extras(tree: exp.Select, table_columns: Callable[[set[str]], list[str]], rng: random.Random) -> list[exp.Expression]:
    """The items an answer to the gold's question should not add (see :func:`training_items`)."""
    returned = {c.name.casefold() for s in tree.selects for c in s.find_all(exp.Column)}
    out: list[exp.Expression] = []
    for key in ("where", "order", "group", "having"):
        node = tree.args.get(key)
        if node is None:
            continue
        out += [exp.column(c.name) for c in node.find_all(exp.Column) if c.name.casefold() not in returned]
        if key == "order":
            shown = {s.sql() for s in tree.selects}
            out += [o.this.copy() for o in node.expressions
                    if isinstance(o.this, tuple(AGGREGATES)) and o.this.sql() not in shown]
    if tree.args.get("group") is not None and not any(
            isinstance(s.this if isinstance(s, exp.Alias) else s, exp.Count) for s in tree.selects):
        out.append(exp.Count(this=exp.Star()))
    others = [n for n in table_columns({t.name.casefold() for t in tree.find_all(exp.Table)})
              if n.casefold() not in returned]
    keys = [n for n in others if n.casefold().endswith("id")]
    out += [exp.column(n) for n in rng.sample(keys, min(1, len(keys)))]
    out += [exp.column(n) for n in rng.sample(others, min(2, len(others)))]
    return list({e.sql(): e for e in out}.values())  # once each


def training_items(question: str, gold: str, table_columns: Callable[[set[str]], list[str]],
                   rng: random.Random) -> list[tuple[list[float], int, int]]:
    """``(features, label, items of the SELECT)`` for each SELECT item of a gold (asked: 1) and for
    each item an answer should not add, read as an extra item of the same SELECT (0): each column
    the gold filters, orders or groups by and does not return, each aggregate it orders by, the
    ``COUNT(*)`` of a grouping that does not count, one key and two other columns of its tables
    (drawn with ``rng``); empty when the gold cannot be read item by item.

    Args:
        question: the question.
        gold: its gold SQL (SQLite).
        table_columns: ``{table names, case folded} -> their columns' names``.
        rng: the draws' generator.
    """
    tree = _select(gold, "sqlite")
    if tree is None:
        return []
    n = len(tree.selects)
    rows = [(item_features(question, s, tree), 1, n) for s in tree.selects]
    for extra in _extras(tree, table_columns, rng):
        wider = tree.copy()
        wider.set("expressions", [*wider.expressions, extra])
        rows.append((item_features(question, wider.selects[-1], wider), 0, n + 1))
    return rows
