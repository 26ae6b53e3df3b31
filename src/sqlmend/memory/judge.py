"""Judge an isolated edit group: is it a repair unit? (MIRA §3.2.2, "Judging the group from evidence")

"A group is accepted as a repair unit only when q_i and objective facts
support that s_val implements the required behavior while s^{¬g} conflicts
with it." Two judges:

* :func:`judge_mechanical` - no model. It accepts only the kinds whose facts
  decide by themselves (:data:`~sqlmend.memory.items.MECHANICAL_KINDS`): literals
  rebound from values no row stores to values rows store; a literal compared with
  a column that does not store it moved to one that does; a column substitution
  whose new column the question names; a DISTINCT removing duplicate rows; a
  join condition turned into a foreign-key pairing.
* :func:`judge_model` - a model reads the question, the pair and the facts,
  may request one bounded read-only probe, and decides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from sqlmend import sql
from sqlmend.errors import SqlmendError
from sqlmend.guard import read_only_problem
from sqlmend.memory.edits import shape
from sqlmend.memory.isolation import IsolatedGroup, _expr
from sqlmend.memory.modelcall import Usage, ask

ast = sql.ast

#: Rows a judge's probe may return.
PROBE_ROWS = 20


@dataclass
class Judgement:
    accepted: bool
    reason: str
    kind: str = "general"
    error_type: str = "clause_error"
    contract: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    judged_by: str = "mechanical"


def words(text: str) -> set[str]:
    """Lower-case word stems of a question or identifier (``song_name`` -> {song, name}).

    >>> sorted(words("Show the Song_Names of singers"))
    ['name', 'of', 'show', 'singer', 'song', 'the']
    """
    out = set()
    for w in re.findall(r"[a-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", text).lower().replace("_", " ")):
        out.add(w[:-1] if len(w) > 3 and w.endswith("s") else w)
    return out


def _comparison(frag: str | None, dialect: str) -> tuple[str, str, Any] | None:
    """(table.column, operator, literal) of a fragment that is one column-literal comparison."""
    if not frag:
        return None
    try:
        node = _expr(frag, dialect)
    except SqlmendError:
        return None
    if not isinstance(node, (ast.EQ, ast.Like, ast.NEQ)):
        return None
    col, lit = node.this, node.expression
    if isinstance(col, ast.Literal):
        col, lit = lit, col
    if isinstance(col, ast.Column) and isinstance(lit, ast.Literal) and col.table:
        return f"{col.table}.{col.name}".lower(), type(node).__name__, lit.this
    return None


def _column(frag: str | None, dialect: str) -> str | None:
    try:
        node = _expr(frag, dialect) if frag else None
    except SqlmendError:
        return None
    if isinstance(node, ast.Column) and node.table:
        return f"{node.table}.{node.name}".lower()
    return None


def _join_pair(frag: str | None, dialect: str) -> list[str] | None:
    try:
        node = _expr(frag, dialect) if frag else None
    except SqlmendError:
        return None
    if isinstance(node, ast.EQ) and isinstance(node.this, ast.Column) and isinstance(node.expression, ast.Column):
        return sorted(f"{c.table}.{c.name}".lower() for c in (node.this, node.expression))
    return None


def _comparisons(node: Any) -> list[tuple[str, Any]]:
    """``(table.column, literal)`` of every ``column = literal`` inside a node, in order."""
    out = []
    for pred in node.find_all(ast.EQ):
        col, lit = pred.this, pred.expression
        if isinstance(col, ast.Literal):
            col, lit = lit, col
        if isinstance(col, ast.Column) and isinstance(lit, ast.Literal) and col.table:
            out.append((f"{col.table}.{col.name}".lower(), lit.this))
    return out


def _rebindings(before: str | None, after: str | None, clause: str, dialect: str) -> list[dict[str, Any]] | None:
    """The literals a REPLACE rebinds when it changes nothing but ``column = literal`` values.

    ``a.x = 'Haiti' OR b.y = '1'`` -> ``a.x = 'haiti' OR b.y = '1'`` rebinds ``a.x``;
    anything else changed (an operator, a column, a structure) gives None.
    """
    if not before or not after or shape(before) != shape(after):
        return None
    try:
        a, b = _expr(before, dialect), _expr(after, dialect)
    except SqlmendError:
        return None
    ca, cb = _comparisons(a), _comparisons(b)
    if len(ca) != len(cb) or [c for c, _ in ca] != [c for c, _ in cb]:
        return None
    masked = [x.copy() for x in (a, b)]
    for tree in masked:
        for lit in list(tree.find_all(ast.Literal)):
            lit.replace(ast.Literal.string("?"))
    if masked[0].sql(dialect=dialect) != masked[1].sql(dialect=dialect):
        return None
    out = [{"column": col, "wrong": x, "right": y, "clause": clause} for (col, x), (_, y) in zip(ca, cb) if x != y]
    return out or None


def classify(iso: IsolatedGroup, dialect: str = "sqlite") -> tuple[str, dict[str, Any]]:
    """Recognise the mechanical kind of a group, with its binding parameters.

    Kinds: ``value_binding`` (only ``column = literal`` values change, in one or
    several edits of the group), ``predicate_column`` (one comparison keeps its
    literal and changes its column), ``join_condition``, ``column_substitution``
    and ``distinct``.

    Args:
        iso: the isolated group.
        dialect: the SQL dialect.

    Returns:
        ``(kind, params)``; kind ``"general"`` when no mechanical form fits.
    """
    edits = iso.group.edits
    if edits and all(e.kind == "replace" for e in edits):
        found = [_rebindings(e.before, e.after, e.clause, dialect) for e in edits]
        if all(found):
            bindings = [b for f in found for b in f]
            return "value_binding", dict(bindings[0]) | ({"bindings": bindings} if len(bindings) > 1 else {})
    if len(edits) != 1:
        return "general", {}
    e = edits[0]
    if e.kind == "insert" and (e.clause == "distinct" or (e.after or "").strip().upper() == "DISTINCT"):
        return "distinct", {"columns": sorted(r.lower() for r in e.schema_refs if "." in r)}
    if e.kind != "replace":
        return "general", {}
    a, b = _comparison(e.before, dialect), _comparison(e.after, dialect)
    if a and b and a[1] == b[1] == "EQ" and a[0] != b[0] and a[2] == b[2]:
        return "predicate_column", {"wrong": a[0], "right": b[0], "value": a[2], "clause": e.clause}
    pa, pb = _join_pair(e.before, dialect), _join_pair(e.after, dialect)
    if e.clause == "join" and pa and pb and pa != pb:
        return "join_condition", {"wrong": pa, "right": pb}
    ca, cb = _column(e.before, dialect), _column(e.after, dialect)
    if ca and cb and ca != cb:
        return "column_substitution", {"wrong": ca, "right": cb, "clause": e.clause}
    return "general", {}


_ERROR_TYPES = {"value_binding": "value_error", "column_substitution": "attribute_mismatch",
                "predicate_column": "attribute_mismatch",
                "distinct": "modifier_error", "join_condition": "table_mismatch"}


def _mechanical_contract(kind: str, p: dict[str, Any]) -> dict[str, Any]:
    if kind == "value_binding":
        return {"applicability": f"the question filters {p['column']} by a value",
                "incorrect_behavior": f"{p['column']} is compared with {p['wrong']!r}, which is not stored",
                "required_behavior": f"compare {p['column']} with the value as stored ({p['right']!r})",
                "repair_behavior": f"replace the literal {p['wrong']!r} with {p['right']!r}",
                "preserve": ["other conditions", "projection", "joins"]}
    if kind == "predicate_column":
        return {"applicability": f"the question filters by a value stored in {p['right']}",
                "incorrect_behavior": f"the value is compared with {p['wrong']}, where it is not stored",
                "required_behavior": f"compare the value with {p['right']}, where it is stored",
                "repair_behavior": f"compare {p['right']} instead of {p['wrong']}",
                "preserve": ["the literal", "other conditions", "projection", "joins"]}
    if kind == "column_substitution":
        return {"applicability": f"the question asks about {p['right'].split('.')[-1].replace('_', ' ')}",
                "incorrect_behavior": f"{p['wrong']} is used in the {p['clause']} clause",
                "required_behavior": f"use {p['right']} in the {p['clause']} clause",
                "repair_behavior": f"substitute {p['wrong']} with {p['right']}",
                "preserve": ["other columns", "conditions", "joins"]}
    if kind == "distinct":
        return {"applicability": f"the question lists values of {', '.join(p['columns']) or 'the projection'}",
                "incorrect_behavior": "the result repeats rows",
                "required_behavior": "each answer appears once",
                "repair_behavior": "add DISTINCT to the projection",
                "preserve": ["projection", "conditions", "joins"]}
    return {"applicability": f"the query joins on {' = '.join(p['wrong'])}",
            "incorrect_behavior": f"the join pairs {' = '.join(p['wrong'])}, not a key relationship",
            "required_behavior": f"join on the key pair {' = '.join(p['right'])}",
            "repair_behavior": "replace the join condition",
            "preserve": ["projection", "conditions"]}


def judge_mechanical(question: str, iso: IsolatedGroup, facts: dict[str, Any],
                     dialect: str = "sqlite") -> Judgement:
    """Accept a group without a model when the facts decide (see module doc).

    Args:
        question: the historical question q_i.
        iso: the isolated group.
        facts: its evidence (:func:`~sqlmend.memory.isolation.collect_evidence`).
        dialect: the SQL dialect.

    Returns:
        The judgement.
    """
    kind, p = classify(iso, dialect)
    if kind == "general":
        return Judgement(False, "not a mechanically decidable repair (a model judge is needed)")
    contrast = facts.get("contrast", {})
    if contrast.get("same_result", True):
        return Judgement(False, "reverting the group does not change the result", kind)
    ok, why = False, ""
    rows = {(o["side"], o["column"].lower(), str(o["value"])): o["rows"] for o in facts.get("predicates", [])}
    if kind == "value_binding":
        seen = [(b, rows.get(("before", b["column"], str(b["wrong"]))), rows.get(("after", b["column"], str(b["right"]))))
                for b in p.get("bindings", [p])]
        ok = all(wrong == 0 and bool(right) for _, wrong, right in seen)
        why = "; ".join(f"{b['column']}: {b['wrong']!r} matches {wrong} rows, {b['right']!r} matches {right}"
                        for b, wrong, right in seen)
    elif kind == "predicate_column":
        wrong = rows.get(("before", p["wrong"], str(p["value"])))
        right = rows.get(("after", p["right"], str(p["value"])))
        ok = wrong == 0 and bool(right)
        why = f"{p['value']!r} matches {wrong} rows of {p['wrong']}, {right} of {p['right']}"
    elif kind == "column_substitution":
        q = words(question)
        right, wrong = words(p["right"].split(".")[-1]) & q, words(p["wrong"].split(".")[-1]) & q
        ok = bool(right) and len(right) > len(wrong)
        why = f"question names {sorted(right)} of {p['right']} vs {sorted(wrong)} of {p['wrong']}"
    elif kind == "distinct":
        g = facts.get("grain", {})
        dup_a, dup_b = g.get("reverted", {}).get("duplicate_rows", 0), g.get("repair", {}).get("duplicate_rows", 0)
        ok = dup_a > 0 and dup_b == 0
        why = f"duplicate rows {dup_a} without DISTINCT, {dup_b} with"
    elif kind == "join_condition":
        after = [j for j in facts.get("joins", []) if j["side"] == "after" and j["foreign_key_pairs"]]
        before = [j for j in facts.get("joins", []) if j["side"] == "before" and j["foreign_key_pairs"]]
        ok = bool(after) and not before
        why = f"foreign-key pairs: after {len(after)}, before {len(before)}"
    return Judgement(ok, why, kind, _ERROR_TYPES[kind], _mechanical_contract(kind, p) if ok else {}, p)


# --- model judge ----------------------------------------------------------------


class JudgeAnswer(BaseModel):
    accept: bool = Field(description="true only if the question and the facts show the repair is required")
    probe: str | None = Field(None, description="one read-only SELECT whose answer is still needed, else null")
    error_type: str = Field("clause_error", description="an error type id of the taxonomy")
    applicability: str = ""
    incorrect_behavior: str = ""
    required_behavior: str = ""
    repair_behavior: str = ""
    preserve: list[str] = Field(default_factory=list)
    not_applicable: str = ""
    reason: str = ""


def run_probe(db: Any, probe: str, timeout: float = 5.0) -> dict[str, Any]:
    """Execute one bounded read-only probe (§3.2.2, §3.3.2).

    Args:
        db: the open database.
        probe: a SELECT/WITH query.
        timeout: seconds it may run.

    Returns:
        ``{"sql", "columns", "rows"}`` or ``{"sql", "error"}``.
    """
    problem = read_only_problem(probe, getattr(db, "dialect", "sqlite"))
    if problem:
        return {"sql": probe, "error": f"refused: {problem}"}
    try:
        r = db.execute(probe, timeout=timeout, max_rows=PROBE_ROWS)
    except SqlmendError as e:
        return {"sql": probe, "error": str(e)}
    return {"sql": probe, "columns": r.columns, "rows": [list(map(str, row)) for row in r.rows]}


def judge_model(backend: Any, db: Any, question: str, iso: IsolatedGroup, facts: dict[str, Any],
                usage: Usage, schema_text: str = "") -> Judgement:
    """Let a model judge a group from the question and the facts, with one optional probe.

    Args:
        backend: the model backend.
        db: the open database (for the probe).
        question: the historical question.
        iso: the isolated group.
        facts: its evidence.
        usage: model usage counters.
        schema_text: the schema, as text.

    Returns:
        The judgement (rejected when the model fails).
    """
    kind, params = classify(iso, getattr(db, "dialect", "sqlite"))
    edits = [e.__dict__ for e in iso.group.edits]
    fields = dict(question=question, schema=schema_text, reverted=iso.reverted_sql, repair=iso.repair_sql,
                  edits=edits, facts=facts, probe="none")
    answer = ask(backend, "judge", JudgeAnswer, usage, "judge", **fields)
    if answer is not None and answer.probe and not answer.accept:
        fields["probe"] = run_probe(db, answer.probe)
        answer = ask(backend, "judge", JudgeAnswer, usage, "judge", **fields)
    if answer is None:
        return Judgement(False, "model judge gave no usable answer", kind, judged_by="model")
    contract = {k: getattr(answer, k) for k in ("applicability", "incorrect_behavior", "required_behavior",
                                                 "repair_behavior", "preserve", "not_applicable")}
    return Judgement(answer.accept, answer.reason or "model judge", kind, answer.error_type, contract,
                     params, judged_by="model")
