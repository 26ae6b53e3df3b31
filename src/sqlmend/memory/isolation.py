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
from sqlmend.types import Edit, ExecResult, Schema

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


def _find(tree: Any, fragment: str | None, dialect: str) -> Any | None:
    want = _squash(fragment)
    if not want:
        return None
    for node in tree.walk():
        if isinstance(node, ast.Expression) and _squash(node.sql(dialect=dialect)) == want:
            return node
    return None


def _drop(node: Any) -> None:
    parent = node.parent
    if isinstance(parent, ast.Connector):  # AND / OR: keep the sibling
        other = parent.right if node is parent.left else parent.left
        parent.replace(other)
    elif isinstance(parent, (ast.Where, ast.Having, ast.Order, ast.Group)) and \
            len(getattr(parent, "expressions", None) or [node]) <= 1:
        parent.pop()
    else:
        node.pop()


def _reinsert(tree: Any, e: Edit, dialect: str) -> None:
    if e.clause == "distinct":
        tree.set("distinct", ast.Distinct())
        return
    node = fragment_node(e.clause, e.before, dialect)
    if e.clause in ("where", "having"):
        (tree.where if e.clause == "where" else tree.having)(node, copy=False)
    elif e.clause == "select":
        tree.select(node, copy=False)
    elif e.clause == "join":
        tree.append("joins", node)
    elif e.clause == "group":
        tree.group_by(node, copy=False)
    elif e.clause == "order":
        tree.order_by(node, copy=False)
    elif e.clause == "limit":
        tree.set(node.arg_key or "limit", node)
    else:
        raise SqlError(f"cannot re-insert a removed {e.clause} fragment")


def revert_group(repair_sql: str, group: EditGroup, dialect: str = "sqlite") -> str:
    """Revert only ``group`` from the repair, leaving every other change (s^{¬g}).

    Args:
        repair_sql: the validated repair SQL (normalized form).
        group: the group to revert.
        dialect: the SQL dialect.

    Returns:
        The SQL with the group reverted.

    Raises:
        SqlError: a fragment cannot be found or put back.
    """
    tree = sql.parse(repair_sql, dialect=dialect)
    for e in group.edits:
        if e.kind == "replace":
            node = _find(tree, e.after, dialect)
            if node is None:
                raise SqlError(f"replaced fragment not found: {e.after}")
            new = fragment_node(e.clause, e.before, dialect)
            if node is tree:
                tree = new
            else:
                node.replace(new)
        elif e.kind == "insert":
            if e.clause == "distinct":
                tree.set("distinct", None)
                continue
            node = _find(tree, e.after, dialect)
            if node is None:
                raise SqlError(f"added fragment not found: {e.after}")
            _drop(node)
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
        table, column = ref.split(".", 1)
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
