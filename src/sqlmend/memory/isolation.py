"""Isolate one edit group and collect the database evidence about it (MIRA §3.2.2).

"For each structural group g, MIRA reverts only g from s_val and leaves all
other changes in place, producing s^{¬g}. It reparses the two queries to
confirm that g is their only structural difference; otherwise, the group is
discarded." Then, for every valid pair, it collects parser-derived
properties, column profiles, query-grain statistics, predicate and join
observations grounded in the data, and the execution contrast of the pair.

Reverting works on the repair's tree: a REPLACE puts the ``before`` fragment
back, an ADD (``insert``) removes the added node, a REMOVE re-inserts the
dropped fragment in its clause. The reparse check makes an imperfect revert
harmless: it is discarded, never judged.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sqlmend import sql
from sqlmend.errors import SqlError, SqlmendError
from sqlmend.guard import same_result
from sqlmend.memory.edits import EditGroup, extract_edits
from sqlmend.types import Edit, ExecResult, Schema, split_ref

ast = sql.ast

#: Most rows of each side shown in an execution contrast.
CONTRAST_ROWS = 3


@dataclass
class IsolatedGroup:
    """One edit group, reverted alone: the pair (s^{¬g}, s_val) and its evidence."""

    group: EditGroup
    reverted_sql: str | None  # s^{¬g}; None when the group could not be isolated
    repair_sql: str
    problem: str = ""  # why isolation failed
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return self.reverted_sql is not None and not self.problem


def _squash(text: str | None) -> str:
    return " ".join((text or "").replace('"', "").replace("`", "").lower().split())


def _expr(fragment: str, dialect: str) -> Any:
    """Parse a fragment as an expression (a condition, a column, a function...)."""
    tree = sql.parse(f"SELECT {fragment}", dialect=dialect)
    exprs = tree.args.get("expressions") or []
    if len(exprs) != 1:
        raise SqlError(f"fragment is not one expression: {fragment}")
    return exprs[0]


def fragment_node(clause: str, fragment: str, dialect: str = "sqlite") -> Any:
    """Parse an edit's fragment as the node it is in its clause (a JOIN, an ORDER BY item...).

    Args:
        clause: the edit's clause.
        fragment: the fragment text.
        dialect: the SQL dialect.

    Returns:
        The node.

    Raises:
        SqlError: the fragment does not parse as one node of that clause.
    """
    if clause == "join":
        found = sql.parse(f"SELECT 1 FROM _x {fragment}", dialect=dialect).args.get("joins") or []
    elif clause == "order":
        order = sql.parse(f"SELECT 1 ORDER BY {fragment}", dialect=dialect).args.get("order")
        found = list(order.expressions) if order else []
    elif clause in ("from", "limit"):
        tree = sql.parse(f"SELECT 1 {fragment}", dialect=dialect)
        found = [tree.args[k] for k in ("from_", "from", "limit", "offset") if tree.args.get(k) is not None]
    elif clause == "other" and fragment.lstrip().upper().startswith(("SELECT", "WITH ")):
        return sql.parse(fragment, dialect=dialect)  # a whole (set-operation arm) query
    else:
        return _expr(fragment, dialect)
    if len(found) != 1:
        raise SqlError(f"fragment is not one {clause} item: {fragment}")
    return found[0]


def _scope(tree: Any, path: str) -> tuple[Any, str, int | None]:
    """The query an edit's path points to (set-operation arms), its clause and item index.

    ``sql.diff`` writes paths such as ``where[1]``, ``left.select[0]`` or
    ``right.distinct``: the arms of set operations, then the clause.
    """
    parts = (path or "").split(".")
    node = tree
    for arm in parts[:-1]:
        if arm in ("left", "right") and isinstance(node, ast.SetOperation):
            node = node.left if arm == "left" else node.right
    clause, _, index = parts[-1].partition("[")
    return node, clause, int(index.rstrip("]")) if index.rstrip("]").isdigit() else None


def _conjuncts(clause_node: Any) -> list[Any]:
    if clause_node is None:
        return []
    return list(clause_node.this.flatten()) if isinstance(clause_node.this, ast.And) else [clause_node.this]


def _items(query: Any, clause: str) -> list[tuple[Any, Any]]:
    """``(node to drop, node compared with the fragment)`` for each item of one clause, as ``sql.diff`` sees them."""
    args = query.args
    if clause == "select":
        return [(p, p.unalias()) for p in getattr(query, "expressions", [])] if isinstance(query, ast.Select) else []
    if clause in ("where", "having"):
        return [(c, c) for c in _conjuncts(args.get(clause))]
    if clause in ("group", "order"):
        return [(i, i) for i in (args[clause].expressions if args.get(clause) is not None else [])]
    if clause == "join":
        return [(j, j) for j in args.get("joins") or []]
    if clause == "from":
        found = args.get("from_") or args.get("from")
        return [(found, found)] if found is not None else []
    if clause == "limit":
        return [(args[k], args[k]) for k in ("limit", "offset") if args.get(k) is not None]
    return []


def _key(node: Any, dialect: str) -> str:
    """Text of a node with every projection's output alias taken off (``sql.diff`` renders
    fragments with the qualifier's aliases, the normalized repair has none)."""
    node = node.copy()
    for select in list(node.find_all(ast.Select)):
        for proj in list(select.expressions):
            if isinstance(proj, ast.Alias):
                proj.replace(proj.this)
    return _squash(node.sql(dialect=dialect))


def _locate(tree: Any, e: Edit, fragment: str | None, dialect: str) -> tuple[Any, Any] | None:
    """The item of the edit's clause (in the edit's query) whose text is ``fragment``."""
    query, clause, _ = _scope(tree, e.path)
    try:
        want = _key(fragment_node(e.clause, fragment or "", dialect), dialect)
    except SqlmendError:
        want = _squash(fragment)
    if e.clause == "other":
        for node in tree.walk():
            if isinstance(node, (ast.Select, ast.SetOperation)) and _key(node, dialect) == want:
                return node, node
        return None
    for holder, node in _items(query, clause or e.clause):
        if _key(node, dialect) == want:
            return holder, node
    return None


def _drop(node: Any) -> None:
    parent = node.parent
    if isinstance(parent, ast.Connector):  # AND / OR: keep the sibling
        other = parent.right if node is parent.left else parent.left
        parent.replace(other)
    elif isinstance(parent, (ast.Where, ast.Having)) or \
            (isinstance(parent, (ast.Order, ast.Group)) and len(parent.expressions) <= 1):
        parent.pop()
    else:
        node.pop()


def _reinsert(tree: Any, e: Edit, dialect: str) -> None:
    query, _, index = _scope(tree, e.path)
    if e.clause == "distinct":
        query.set("distinct", ast.Distinct())
        return
    node = fragment_node(e.clause, e.before, dialect)
    if e.clause in ("where", "having"):
        (query.where if e.clause == "where" else query.having)(node, copy=False)
    elif e.clause in ("select", "join", "group", "order"):
        key = {"select": "expressions", "join": "joins"}.get(e.clause)
        if key is None:
            holder = query.args.get(e.clause)
            if holder is None:
                (query.group_by if e.clause == "group" else query.order_by)(node, copy=False)
                return
        else:
            holder = query
        items = list(holder.args.get(key or "expressions") or [])
        items.insert(min(index if index is not None else len(items), len(items)), node)
        holder.set(key or "expressions", items)
    elif e.clause == "limit":
        query.set(node.arg_key or "limit", node)
    else:
        raise SqlError(f"cannot re-insert a removed {e.clause} fragment")


def revert_group(repair_sql: str, group: EditGroup, dialect: str = "sqlite") -> str:
    """Revert only ``group`` from the repair, leaving every other change (s^{¬g}).

    Each edit is applied where its path points (the set-operation arm and the
    clause), never to a look-alike fragment elsewhere in the query; a removed
    list item goes back at its old position.

    Args:
        repair_sql: the validated repair SQL (normalized with ``output_aliases=False``,
            so that no clause refers to a name another clause defines).
        group: the group to revert.
        dialect: the SQL dialect.

    Returns:
        The SQL with the group reverted.

    Raises:
        SqlError: a fragment cannot be found or put back.
    """
    tree = sql.parse(repair_sql, dialect=dialect)
    # removals last, in path order, so that re-inserted items land at their old indexes
    edits = sorted(group.edits, key=lambda e: (e.kind == "remove", _scope(tree, e.path)[2] or 0))
    for e in edits:
        if e.kind == "replace":
            found = _locate(tree, e, e.after, dialect)
            if found is None:
                raise SqlError(f"replaced fragment not found: {e.after}")
            new = fragment_node(e.clause, e.before, dialect)
            if found[1] is tree:
                tree = new
            else:
                found[1].replace(new)
        elif e.kind == "insert":
            if e.clause == "distinct":
                _scope(tree, e.path)[0].set("distinct", None)
                continue
            found = _locate(tree, e, e.after, dialect)
            if found is None:
                raise SqlError(f"added fragment not found: {e.after}")
            _drop(found[0])
        elif e.kind == "remove":
            _reinsert(tree, e, dialect)
        else:
            raise SqlError(f"unknown edit kind {e.kind}")
    return tree.sql(dialect=dialect)


def _edit_key(e: Edit) -> tuple:
    return (e.kind, e.clause, _squash(e.before), _squash(e.after))


def isolate(repair_sql: str, group: EditGroup, schema: Schema | None = None,
            dialect: str = "sqlite") -> IsolatedGroup:
    """Revert a group and check by reparsing that it is the only difference (§3.2.2).

    Args:
        repair_sql: the validated repair SQL.
        group: the group to isolate.
        schema: the schema, for the normalized diff.
        dialect: the SQL dialect.

    Returns:
        The isolated group; ``problem`` says why when it is not valid.
    """
    try:
        reverted = revert_group(repair_sql, group, dialect)
        back = extract_edits(reverted, repair_sql, schema=schema, dialect=dialect)
    except SqlmendError as e:
        return IsolatedGroup(group, None, repair_sql, problem=f"revert failed: {e}")
    if Counter(map(_edit_key, back)) != Counter(map(_edit_key, group.edits)):
        return IsolatedGroup(group, None, repair_sql,
                             problem=f"group is not the only difference ({len(back)} edits after revert)")
    return IsolatedGroup(group, reverted, repair_sql)


# --- evidence ---------------------------------------------------------------


def _duplicates(r: ExecResult) -> int:
    return len(r.rows) - len(set(map(tuple, r.rows)))


def _grain(r: ExecResult) -> dict[str, Any]:
    return {"rows": len(r.rows), "columns": len(r.columns), "duplicate_rows": _duplicates(r),
            "truncated": r.truncated}


def _properties(text: str, dialect: str) -> dict[str, Any]:
    tree = sql.parse(text, dialect=dialect)
    return {
        "distinct": bool(tree.args.get("distinct")),
        "aggregates": sorted({type(n).__name__.lower() for n in tree.find_all(ast.AggFunc)}),
        "joins": len(tree.args.get("joins") or []),
        "group_by": tree.args.get("group") is not None,
        "order_by": tree.args.get("order") is not None,
        "limit": tree.args.get("limit") is not None,
        "conditions": len(list(tree.find_all(ast.Predicate))),
    }


def _literal_observations(db: Any, group: EditGroup, dialect: str) -> list[dict[str, Any]]:
    """For each compared literal in the group's fragments: is it stored in its column?"""
    out = []
    for e in group.edits:
        for side, frag in (("before", e.before), ("after", e.after)):
            if not frag:
                continue
            try:
                node = _expr(frag, dialect)
            except SqlError:
                continue
            for pred in node.find_all(ast.EQ, ast.Like, ast.NEQ):
                col, lit = pred.this, pred.expression
                if isinstance(lit, ast.Column) and isinstance(col, ast.Literal):
                    col, lit = lit, col
                if not (isinstance(col, ast.Column) and isinstance(lit, ast.Literal) and col.table):
                    continue
                out.append({"side": side, "column": f"{col.table}.{col.name}", "value": lit.this,
                            "rows": _count(db, col.table, col.name, pred.sql(dialect=dialect),
                                           dialect)})
    return out


def _count(db: Any, table: str, column: str, condition: str, dialect: str) -> int | None:
    t = sql.ast.to_identifier(table).sql(dialect=dialect)
    cond = condition.replace(f'"{table}".', "").replace(f"{table}.", "")
    try:
        r = db.execute(f"SELECT COUNT(*) FROM {t} WHERE {cond}", timeout=5.0, max_rows=1)
        return int(r.rows[0][0])
    except SqlmendError:
        return None


def _profiles(db: Any, refs: list[str], limit: int = 4) -> dict[str, Any]:
    out = {}
    for ref in [r for r in refs if "." in r][:limit]:
        table, column = split_ref(ref)
        try:
            p = db.profile(table, column)
        except (SqlmendError, AttributeError):
            continue
        out[ref] = {"rows": p.rows, "null_fraction": p.null_fraction, "distinct": p.distinct,
                    "samples": [str(s) for s in p.samples[:5]]}
    return out


def _join_observations(schema: Schema | None, group: EditGroup) -> list[dict[str, Any]]:
    if schema is None:
        return []
    fks = {frozenset({f"{fk.table}.{c}".lower(), f"{fk.ref_table}.{rc}".lower()})
           for fk in schema.foreign_keys for c, rc in zip(fk.columns, fk.ref_columns)}
    out = []
    for e in group.edits:
        if e.clause != "join":
            continue
        for side, frag in (("before", e.before), ("after", e.after)):
            cols = [r.lower() for r in e.schema_refs if "." in r]
            pairs = [frozenset({a, b}) for i, a in enumerate(cols) for b in cols[i + 1:]]
            if frag:
                out.append({"side": side, "fragment": frag,
                            "foreign_key_pairs": [sorted(p) for p in pairs if p in fks]})
    return out


def collect_evidence(db: Any, iso: IsolatedGroup, schema: Schema | None = None,
                     timeout: float = 10.0) -> dict[str, Any]:
    """Collect the objective facts about one isolated group (§3.2.2).

    Args:
        db: the open database.
        iso: a valid isolated group.
        schema: the database schema (for join observations).
        timeout: seconds per query.

    Returns:
        The facts (also stored on ``iso.facts``): ``properties`` of both
        queries, ``profiles`` of referenced columns, ``grain`` statistics,
        ``predicates`` and ``joins`` observations and the ``contrast``.
    """
    dialect = getattr(db, "dialect", "sqlite")
    facts: dict[str, Any] = {
        "properties": {"reverted": _properties(iso.reverted_sql, dialect),
                       "repair": _properties(iso.repair_sql, dialect)},
        "profiles": _profiles(db, iso.group.schema_refs),
        "predicates": _literal_observations(db, iso.group, dialect),
        "joins": _join_observations(schema, iso.group),
    }
    try:
        a = db.execute(iso.reverted_sql, timeout=timeout)
        b = db.execute(iso.repair_sql, timeout=timeout)
    except SqlmendError as e:
        facts["contrast"] = {"error": str(e)}
    else:
        only_a = list((Counter(map(tuple, a.rows)) - Counter(map(tuple, b.rows))).elements())
        only_b = list((Counter(map(tuple, b.rows)) - Counter(map(tuple, a.rows))).elements())
        facts["grain"] = {"reverted": _grain(a), "repair": _grain(b)}
        facts["contrast"] = {"same_result": same_result(a, b),
                             "only_reverted": [list(map(str, r)) for r in only_a[:CONTRAST_ROWS]],
                             "only_repair": [list(map(str, r)) for r in only_b[:CONTRAST_ROWS]]}
    iso.facts = facts
    return facts
