"""What every repair kind of the memory catalogue offers, and the facts they share.

A kind (one module of :mod:`sqlmend.memory.kinds`) is MIRA's repair unit seen
through five questions, one function each:

* ``classify(edits, dialect)`` - is this isolated edit group of my kind?
  Its binding parameters, or None (§3.2.2);
* ``judge(question, params, facts)`` - do the facts prove the unit is a repair?
  ``(accepted, why)`` (§3.2.2, "Judging the group from evidence");
* ``contract(params)`` - the semantic contract stored on the item (§3.2.3);
* ``activate(params, online)`` - does the recorded violation recur in the
  current task? ``(active, why, binding)`` (§3.3.2, the target local check);
* ``adapt(tree, resolver, binding)`` - the fixes (as data, applied by
  :mod:`sqlmend.sql.fixes`) that bind the item to the current SQL (§3.3.3).

and four constants: ``NAME``, ``ERROR_TYPE`` (a taxonomy id), ``MECHANICAL``
(decided and applied without a model) and ``PRESERVE`` (what a repair keeps).
The texts an item stores - its target local check and its contract - are the
data file ``memory/kinds/templates/<NAME>.yaml`` (:func:`local_check`,
:func:`fill_contract`). The general kind (:mod:`~sqlmend.memory.kinds.general`)
answers the same questions with model calls, for all its candidates at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from sqlmend import sql
from sqlmend.db.base import quote_ident
from sqlmend.errors import SqlmendError
from sqlmend.guard import read_only_problem
from sqlmend.llm import prompts
from sqlmend.memory.isolation import _expr
from sqlmend.types import split_ref

if TYPE_CHECKING:  # pragma: no cover
    from sqlmend.memory.retrieval import Candidate

ast = sql.ast

#: Rows a judge's or verifier's probe may return.
PROBE_ROWS = 20

#: Value-index modes that identify one stored spelling of a literal without doubt.
VARIANT_MODES = ("ci", "trim", "plural")


@dataclass
class Online:
    """What a target local check sees of the current task (§3.3.2)."""

    question: str  # q
    keys: set[str]  # K(s_cur)
    observations: list[dict[str, Any]]  # sqlmend.memory.activation.observe(db, s_cur)
    db: Any  # the open database
    sql: str  # s_cur
    result: Any = None  # s_cur's execution result, when known
    verify: bool = True  # False: the "w/o evidence-verified activation" ablation


class Kind(Protocol):
    """The interface of one kind module (see the module docstring)."""

    NAME: str
    ERROR_TYPE: str
    MECHANICAL: bool
    PRESERVE: list[str]

    def classify(self, edits: list[Any], dialect: str) -> dict[str, Any] | None: ...

    def judge(self, question: str, params: dict[str, Any], facts: dict[str, Any]) -> tuple[bool, str]: ...

    def contract(self, params: dict[str, Any]) -> dict[str, Any]: ...  # fill_contract(NAME, PRESERVE, ...)

    def activate(self, params: dict[str, Any], online: Online) -> tuple[bool, str, dict[str, Any]]: ...

    def adapt(self, tree: Any, resolver: Any, binding: dict[str, Any]) -> list[dict[str, Any]]: ...


#: The parts of a semantic contract (MIRA §3.2.3) that a kind's template file writes.
CONTRACT_PARTS = ("applicability", "incorrect_behavior", "required_behavior", "repair_behavior")


def _texts(kind: str) -> dict[str, str]:
    return prompts.load("sqlmend.memory.kinds", kind, folder="templates")


def fill_contract(kind: str, preserve: list[str], params: dict[str, Any]) -> dict[str, Any]:
    """The semantic contract of an item of ``kind``: its template file
    (``memory/kinds/templates/<kind>.yaml``) filled with ``params``, and what it preserves."""
    texts = _texts(kind)
    return {part: prompts.render(texts[part], **params) for part in CONTRACT_PARTS} | {"preserve": list(preserve)}


def local_check(kind: str, params: dict[str, Any]) -> tuple[str, str]:
    """The target local check of an item of ``kind`` (§3.2.3): what to observe and the violation signal."""
    texts = _texts(kind)
    return prompts.render(texts["observation"], **params), prompts.render(texts["violation"], **params)


def words(text: str) -> set[str]:
    """Lower-case word stems of a question or identifier (``song_name`` -> {song, name}).

    >>> sorted(words("Show the Song_Names of singers"))
    ['name', 'of', 'show', 'singer', 'song', 'the']
    """
    out = set()
    for w in re.findall(r"[a-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", text).lower().replace("_", " ")):
        out.add(w[:-1] if len(w) > 3 and w.endswith("s") else w)
    return out


def named_over(question: str, right: str, wrong: str) -> tuple[bool, set[str], set[str]]:
    """Whether the question names column ``right`` more than column ``wrong`` (``table.column``).

    Returns:
        ``(decides, words of right named, words of wrong named)``.
    """
    q = words(question)
    r, w = words(right.split(".")[-1]) & q, words(wrong.split(".")[-1]) & q
    return bool(r) and len(r) > len(w), r, w


def fragment(frag: str | None, dialect: str) -> Any:
    """The expression of an edit's fragment, or None when there is none or it does not parse."""
    try:
        return _expr(frag, dialect) if frag else None
    except SqlmendError:
        return None


def qualified_name(col: Any) -> str | None:
    """``table.column`` (lower case) of a qualified column node, else None."""
    if isinstance(col, ast.Column) and col.table:
        return f"{col.table}.{col.name}".lower()
    return None


def predicate_rows(facts: dict[str, Any]) -> dict[tuple[str, str, str], Any]:
    """``(side, table.column, value) -> rows`` of the evidence's predicate observations."""
    return {(o["side"], o["column"].lower(), str(o["value"])): o["rows"] for o in facts.get("predicates", [])}


def literal_sql(value: Any) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def run_probe(db: Any, probe: str, timeout: float = 5.0) -> dict[str, Any]:
    """Execute one bounded read-only probe (§3.2.2, §3.3.2).

    Args:
        db: the open database.
        probe: a SELECT/WITH query.
        timeout: seconds it may run.

    Returns:
        ``{"sql", "columns", "rows"}`` or ``{"sql", "error"}``.
    """
    problem = read_only_problem(probe, getattr(db, "dialect", "sqlite"), getattr(db, "allow_functions", frozenset()))
    if problem:
        return {"sql": probe, "error": f"refused: {problem}"}
    try:
        r = db.execute(probe, timeout=timeout, max_rows=PROBE_ROWS)
    except SqlmendError as e:
        return {"sql": probe, "error": str(e)}
    return {"sql": probe, "columns": r.columns, "rows": [list(map(str, row)) for row in r.rows]}


def stored_variants(db: Any, column: str, value: Any, limit: int = 3) -> list[Any]:
    """Stored spellings of ``value`` in ``table.column`` (case, surrounding spaces, plural).

    Uses the database's value index (:meth:`sqlmend.db.Database.value_index`,
    modes :data:`VARIANT_MODES`); without one, a case- and space-insensitive query.

    Args:
        db: the open database.
        column: ``table.column``.
        value: the literal of the current SQL.
        limit: most variants returned.

    Returns:
        The variants (empty when none or the column cannot be read).
    """
    table, col = split_ref(column)
    try:
        index = db.value_index()
    except (SqlmendError, AttributeError):
        index = None
    if index is not None and isinstance(value, str):
        try:
            return [m.value for m in index.matches(table, col, value, modes=VARIANT_MODES, limit=limit)]
        except SqlmendError:
            return []
    dialect = getattr(db, "dialect", "sqlite")
    c = quote_ident(col, dialect)
    text = "CHAR" if dialect == "mysql" else "TEXT"
    q = (f"SELECT DISTINCT {c} FROM {_relation(db, table)} WHERE LOWER(TRIM(CAST({c} AS {text}))) = "
         f"LOWER(TRIM({literal_sql(value)})) LIMIT {limit}")
    try:
        return [r[0] for r in db.execute(q, timeout=5.0, max_rows=limit).rows]
    except SqlmendError:
        return []


def _relation(db: Any, table: str) -> str:
    """The table as a query on ``db`` writes it (schema-qualified where its key is)."""
    relation = getattr(db, "relation", None)
    return relation(table) if relation is not None else quote_ident(table, getattr(db, "dialect", "sqlite"))


def count_matches(db: Any, column: str, value: Any) -> int | None:
    """Rows of ``table.column`` equal to ``value``; None when the column cannot be read."""
    table, col = split_ref(column)
    dialect = getattr(db, "dialect", "sqlite")
    q = (f"SELECT COUNT(*) FROM {_relation(db, table)} WHERE {quote_ident(col, dialect)} = "
         f"{literal_sql(value)}")
    try:
        return int(db.execute(q, timeout=5.0, max_rows=1).rows[0][0])
    except SqlmendError:
        return None


def column_fix(col: Any, name: str, qualifier: str | None) -> dict[str, Any]:
    """The fix renaming column node ``col`` to ``name``, qualified by ``qualifier`` when given."""
    return {"op": "replace_column", "path": sql.fixes.node_path(col), "column": name, "table": qualifier}


# --- what the dispatchers return ---------------------------------------------------


@dataclass
class Judgement:
    """The decision on one isolated group: a repair unit or not, of which kind, with what contract."""

    accepted: bool
    reason: str
    kind: str = "general"
    error_type: str = "clause_error"
    contract: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    judged_by: str = "mechanical"


@dataclass
class Activation:
    """The decision on one retrieved item: activated or not, why, and its binding."""

    candidate: "Candidate"
    active: bool
    reason: str
    binding: dict[str, Any] = field(default_factory=dict)  # what to change in the current SQL


@dataclass
class Adaptation:
    """The rewrite the activated items give, and how it was made."""

    candidate: str | None
    how: str  # mechanical | model | none
    applied: list[str] = field(default_factory=list)  # item ids realised in the candidate
    note: str = ""
