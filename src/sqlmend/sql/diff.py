"""The edits between two queries, as MIRA's neutral ADD / REMOVE / REPLACE operations.

MIRA §3.2.2 ("Grouping dependent changes"): parse both queries, derive edit
operations from their syntax trees, each recording its clause, the fragments
before and after, and the schema elements it references; discard equivalent
changes and surface-only alias changes.

This is a clause-level alignment (easier to read than a node-level tree diff):
both queries are normalized (:func:`sqlmend.sql.normalize`: qualified columns,
canonical table aliases, identifier case), so aliasing and case never show as
changes; then each clause of each SELECT is compared as a sequence of items —
SELECT items without their output aliases, the FROM source, each JOIN, the
AND-conjuncts of WHERE and HAVING, GROUP BY and ORDER BY items, LIMIT and
DISTINCT — aligned by longest matching blocks (``difflib.SequenceMatcher``).
Unmatched items facing each other become ``replace``; the rest ``insert`` or
``remove``. Set operations are compared arm by arm.
"""

from __future__ import annotations

import re
from collections import Counter
from difflib import SequenceMatcher
from functools import lru_cache

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import TokenType

from sqlmend.errors import SqlParseError
from sqlmend.sql.dialects import resolve
from sqlmend.sql.normalize import normalize
from sqlmend.sql.parse import parse
from sqlmend.sql.schema import SchemaLike, as_mapping, table_key, table_name
from sqlmend.types import Edit


def diff(a: exp.Expression | str, b: exp.Expression | str, schema: SchemaLike | None = None,
         dialect: str = "sqlite") -> list[Edit]:
    """The edits that turn query ``a`` into query ``b`` (MIRA §3.2.2).

    Args:
        a: the first query (text or tree), e.g. the wrong SQL.
        b: the second query, e.g. its repair.
        schema: the database schema; with it, bare columns are qualified and SQLite's
            double-quoted strings resolved before comparing.
        dialect: the dialect of both queries.

    Returns:
        The edits in clause order; empty when the queries differ only in aliases,
        identifier case, quoting or layout.

    Raises:
        SqlParseError: a query does not parse.
        QualifyError: a column cannot be resolved against ``schema``.
    """
    na, nb = normalize(a, schema, dialect), normalize(b, schema, dialect)
    for tree in (na, nb):
        _order_by_expressions(tree)
    tables = _alias_tables(na) | _alias_tables(nb)
    edits: list[Edit] = []
    _diff_query(na, nb, "", edits, tables, dialect)
    return edits


def _order_by_expressions(tree: exp.Expression) -> None:
    """ORDER BY an output alias of a plain column -> ORDER BY that column (an equivalent form)."""
    for select in tree.find_all(exp.Select):
        order = select.args.get("order")
        if order is None:
            continue
        named = {s.alias.lower(): s.this for s in select.selects
                 if isinstance(s, exp.Alias) and isinstance(s.this, exp.Column)}
        for ordered in order.expressions:
            col = ordered.this
            if isinstance(col, exp.Column) and not col.table and col.name.lower() in named:
                col.replace(named[col.name.lower()].copy())


def _alias_tables(tree: exp.Expression) -> dict[str, str]:
    return {t.alias_or_name.lower(): table_name(t).lower() for t in tree.find_all(exp.Table)}


def _diff_query(a, b, path, edits, tables, dialect) -> None:
    if isinstance(a, exp.SetOperation) and type(a) is type(b) and \
            bool(a.args.get("distinct")) == bool(b.args.get("distinct")):
        _diff_query(a.left, b.left, f"{path}left.", edits, tables, dialect)
        _diff_query(a.right, b.right, f"{path}right.", edits, tables, dialect)
        _diff_modifiers(a, b, path, edits, tables, dialect)
        return
    if not (isinstance(a, exp.Select) and isinstance(b, exp.Select)):
        if _sql(a, dialect) != _sql(b, dialect):
            edits.append(_edit("replace", "other", a, b, path.rstrip(".") or "query", tables, dialect))
        return
    _align("select", [s.unalias() for s in a.selects], [s.unalias() for s in b.selects],
           f"{path}select", edits, tables, dialect)
    if bool(a.args.get("distinct")) != bool(b.args.get("distinct")):
        kind = "insert" if b.args.get("distinct") else "remove"
        edits.append(Edit(kind=kind, clause="distinct", before="DISTINCT" if kind == "remove" else None,
                          after="DISTINCT" if kind == "insert" else None, path=f"{path}distinct"))
    _align("from", _items(a, "from_"), _items(b, "from_"), f"{path}from", edits, tables, dialect)
    _align("join", a.args.get("joins") or [], b.args.get("joins") or [], f"{path}join", edits, tables, dialect)
    _align("where", _conjuncts(a, "where"), _conjuncts(b, "where"), f"{path}where", edits, tables, dialect)
    _align("group", _items(a, "group", many=True), _items(b, "group", many=True), f"{path}group",
           edits, tables, dialect)
    _align("having", _conjuncts(a, "having"), _conjuncts(b, "having"), f"{path}having", edits, tables, dialect)
    _diff_modifiers(a, b, path, edits, tables, dialect)


def _diff_modifiers(a, b, path, edits, tables, dialect) -> None:
    _align("order", _items(a, "order", many=True), _items(b, "order", many=True), f"{path}order",
           edits, tables, dialect)
    _align("limit", _items(a, "limit") + _items(a, "offset"), _items(b, "limit") + _items(b, "offset"),
           f"{path}limit", edits, tables, dialect)


def _items(node: exp.Expression, key: str, many: bool = False) -> list[exp.Expression]:
    value = node.args.get(key)
    if value is None:
        return []
    return list(value.expressions) if many else [value]


def _conjuncts(node: exp.Expression, key: str) -> list[exp.Expression]:
    clause = node.args.get(key)
    if clause is None:
        return []
    return list(clause.this.flatten()) if isinstance(clause.this, exp.And) else [clause.this]


def _sql(node: exp.Expression, dialect: str) -> str:
    return node.sql(dialect=dialect or None)


def _align(clause, before, after, path, edits, tables, dialect) -> None:
    left = [_sql(n, dialect) for n in before]
    right = [_sql(n, dialect) for n in after]
    matcher = SequenceMatcher(a=left, b=right, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        olds, news = before[i1:i2], after[j1:j2]
        for k in range(max(len(olds), len(news))):
            old = olds[k] if k < len(olds) else None
            new = news[k] if k < len(news) else None
            kind = "replace" if old is not None and new is not None else ("remove" if new is None else "insert")
            index = i1 + k if old is not None else j1 + k
            edits.append(_edit(kind, clause, old, new, f"{path}[{index}]", tables, dialect))


def _edit(kind, clause, old, new, path, tables, dialect) -> Edit:
    refs: list[str] = []
    for node in (old, new):
        if node is None:
            continue
        for n in node.walk():
            if isinstance(n, exp.Table):
                ref = n.name.lower()
            elif isinstance(n, exp.Column) and n.name and not n.is_star:
                ref = f"{tables.get(n.table.lower(), n.table.lower())}.{n.name.lower()}" if n.table \
                    else n.name.lower()
            else:
                continue
            if ref not in refs:
                refs.append(ref)
    return Edit(kind=kind, clause=clause, before=_sql(old, dialect) if old is not None else None,
                after=_sql(new, dialect) if new is not None else None, schema_refs=refs, path=path)


@lru_cache(maxsize=256)
def _tokens(text: str, dialect: str) -> Counter:
    """sqlglot's tokens of ``text``, case folded, counted (none when it cannot tokenize it); cached, so
    shared: read it, do not change it."""
    try:
        return Counter(t.text.lower() for t in Dialect.get_or_raise(dialect).tokenize(text))
    except Exception:  # an untokenizable text keeps nothing of anything
        return Counter()


def kept_share(original: str, candidate: str, dialect: str = "sqlite") -> float:
    """The share of ``original``'s tokens (sqlglot's tokenizer, case folded, counted with their
    multiplicity) that ``candidate`` keeps: 1.0 when the candidate only adds to it. A repair that
    keeps more of a query is the smaller change (the search's choice for a query the engine refuses)."""
    before = _tokens(original, dialect)
    return sum((before & _tokens(candidate, dialect)).values()) / max(1, sum(before.values()))


def folded(text: str) -> str:
    """``text`` case folded with only its letters and digits: how a name is looked for in a question.

    >>> folded("Song_release_year"), folded("song release year")
    ('songreleaseyear', 'songreleaseyear')
    """
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def question_names(sql: str, question: str, dialect: str = "sqlite") -> list[str]:
    """What of ``sql`` the question names, case folded: its quoted values (string literals, double-quoted
    strings) and numbers that the question's text holds, and its columns whose names (letters and digits,
    at least 4) the question's words spell; empty when ``sql`` does not parse.

    >>> question_names("SELECT count(*) FROM flights WHERE SourceAirport = 'APG' AND x > 3",
    ...                "How many flights leave from source airport APG?")
    ['apg', 'sourceairport']
    """
    q = question.casefold()
    numbers = set(re.findall(r"\d+(?:\.\d+)?", q))
    try:
        tokens = Dialect.get_or_raise(resolve(dialect) or dialect).tokenize(sql)
    except Exception:  # an untokenizable text names nothing
        return []
    names: list[str] = []
    for t in tokens:
        if t.token_type in (TokenType.STRING, TokenType.IDENTIFIER):
            value = t.text.strip("%").strip().casefold()
            if len(value) >= 2 and value in q:
                names.append(value)
        elif t.token_type == TokenType.NUMBER and t.text in numbers:
            names.append(t.text)
    try:
        tree = parse(sql, dialect)
    except SqlParseError:
        return []
    spelled = folded(question)
    for col in tree.find_all(exp.Column):
        name = col.name.casefold()
        if len(folded(name)) >= 4 and folded(name) in spelled and name not in names:
            names.append(name)
    return names


def dropped_names(original: str, candidate: str, question: str, dialect: str = "sqlite") -> list[str]:
    """What the question names in ``original`` (:func:`question_names`) that ``candidate``'s text no longer
    holds, case folded: a rewrite that drops a value or a column the question asks about has dropped part
    of the question (the model gate's check of a model rewrite, :mod:`sqlmend.search.gate`).

    >>> dropped_names("SELECT count(*) FROM flights WHERE SourceAirport = 'APG'",
    ...               "SELECT count(*) FROM flights", "How many flights leave from APG?")
    ['apg']
    """
    text = candidate.casefold()
    return [name for name in question_names(original, question, dialect) if name not in text]


#: The predicates :func:`clause_shape` counts (a comparison, a membership, a pattern, a null test, EXISTS).
_PREDICATES = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.ILike, exp.Glob, exp.In,
               exp.Between, exp.Is, exp.Exists, exp.NullSafeEQ, exp.NullSafeNEQ, exp.RegexpLike, exp.SimilarTo)

#: What :func:`clause_shape` counts, as a person reads it.
SHAPE_PARTS = {"predicate": "WHERE/HAVING predicate", "projection": "projected column", "group": "GROUP BY item",
               "order": "ORDER BY item", "having": "HAVING clause", "limit": "LIMIT", "join": "join",
               "select": "SELECT (subquery or set operation arm)", "aggregate": "aggregate function",
               "on": "join condition"}


def clause_shape(tree: exp.Expression) -> Counter:
    """How many of each clause a query has, schema-free (:data:`SHAPE_PARTS`): the predicates of its
    WHERE and HAVING clauses (a WHERE predicate moved to HAVING counts the same), its projected columns,
    GROUP BY and ORDER BY items, HAVING clauses, LIMITs, joins and the comparisons of their conditions,
    SELECTs and aggregate functions, over every SELECT (``MIN(COUNT(*))`` that loses its ``MIN`` answers
    another question).

    >>> sorted(clause_shape(parse("SELECT a, b FROM t JOIN u ON t.x = u.x WHERE a = 1 OR a = 2")).items())
    [('join', 1), ('on', 1), ('predicate', 2), ('projection', 2), ('select', 1)]
    >>> clause_shape(parse("SELECT min(count(*)) FROM t GROUP BY a"))["aggregate"]
    2
    """
    shape: Counter = Counter()
    for node in tree.walk():
        if isinstance(node, exp.Select):
            shape["select"] += 1
            shape["projection"] += len(node.expressions)
        elif isinstance(node, exp.Group):
            shape["group"] += len(node.expressions)
        elif isinstance(node, exp.Order):
            shape["order"] += len(node.expressions)
        elif isinstance(node, exp.Having):
            shape["having"] += 1
        elif isinstance(node, (exp.Limit, exp.Fetch)):
            shape["limit"] += 1
        elif isinstance(node, exp.Join):
            shape["join"] += 1
        elif isinstance(node, exp.AggFunc):
            shape["aggregate"] += 1
        elif isinstance(node, _PREDICATES):
            holder = node.find_ancestor(exp.Where, exp.Having, exp.Join, exp.Select)
            if isinstance(holder, (exp.Where, exp.Having)):
                shape["predicate"] += 1
            elif isinstance(holder, exp.Join):
                shape["on"] += 1
    return shape


@lru_cache(maxsize=256)
def _shape_of(text: str, dialect: str) -> Counter | None:
    """:func:`clause_shape` of a text (None when it does not parse); cached, so shared: read it only."""
    try:
        return clause_shape(parse(text, dialect))
    except SqlParseError:
        return None


def dropped_clauses(original: str, candidate: str, dialect: str = "sqlite") -> list[str]:
    """What of ``original``'s clauses ``candidate`` no longer has (:func:`clause_shape`, count by count):
    ``["WHERE/HAVING predicate (2 -> 1)"]``; empty when it drops none, or when either does not parse
    (then there is nothing to compare).

    >>> dropped_clauses("SELECT name FROM t WHERE a = 1 OR a = 2 GROUP BY name",
    ...                 "SELECT name FROM t WHERE a = 1")
    ['WHERE/HAVING predicate (2 -> 1)', 'GROUP BY item (1 -> 0)']
    """
    before, after = _shape_of(original, dialect), _shape_of(candidate, dialect)
    if before is None or after is None:
        return []
    return [f"{SHAPE_PARTS[k]} ({before[k]} -> {after[k]})" for k in SHAPE_PARTS if after[k] < before[k]]


def table_names(text: str, dialect: str = "sqlite", schema: SchemaLike | None = None) -> list[str]:
    """The tables a query reads (lower case, CTE names left out, in text order, once each); empty when it
    does not parse. A table written ``schema.name`` is named so, or, with the ``schema`` it is read
    against, by its key there (:func:`sqlmend.sql.schema.table_key`)."""
    try:
        tree = parse(text, dialect)
    except SqlParseError:
        return []
    mapping = as_mapping(schema)
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    out: list[str] = []
    for t in tree.find_all(exp.Table):
        name = table_key(t, mapping).lower()
        if t.name and name not in ctes and name not in out:
            out.append(name)
    return out


def identifiers(text: str, dialect: str = "sqlite") -> list[str]:
    """The names a query's text writes (sqlglot's identifier tokens, quoted or not, without quotes)."""
    try:
        tokens = Dialect.get_or_raise(resolve(dialect) or dialect).tokenize(text)
    except Exception:  # an untokenizable text names nothing
        return []
    return [t.text for t in tokens if t.token_type in (TokenType.VAR, TokenType.IDENTIFIER)]
