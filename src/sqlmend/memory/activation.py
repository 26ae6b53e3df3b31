"""Evidence-verified memory activation (MIRA §3.3.2).

"The current task must require the behavior recorded by the item, and the
current SQL must exhibit its recorded violation. The item is activated only
when both conditions hold." MIRA first inspects, automatically, the string
predicates and scalar transformations already present in the current SQL
(:func:`observe`); one bounded read-only probe may add one more fact.

Mechanical items are verified without a model, each kind by its target local
check; every other item needs the model verifier (:func:`activate_model`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from sqlmend import sql
from sqlmend.db.base import quote_ident
from sqlmend.errors import SqlmendError
from sqlmend.memory.judge import run_probe, words
from sqlmend.memory.keys import column_name
from sqlmend.memory.modelcall import Usage, ask
from sqlmend.memory.retrieval import Candidate

ast = sql.ast

#: Predicates whose literal is checked against the stored values.
_STRING_PREDICATES = (ast.EQ, ast.NEQ, ast.Like, ast.ILike if hasattr(ast, "ILike") else ast.Like)


@dataclass
class Activation:
    """The decision on one retrieved item: activated or not, why, and its binding."""

    candidate: Candidate
    active: bool
    reason: str
    binding: dict[str, Any] = field(default_factory=dict)  # what to change in the current SQL


def _literal_sql(value: Any) -> str:
    return "'" + str(value).replace("'", "''") + "'"


#: Value-index modes that identify one stored spelling of a literal without doubt.
VARIANT_MODES = ("ci", "trim", "plural")


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
    table, col = column.split(".", 1)
    try:
        index = db.value_index()
    except (SqlmendError, AttributeError):
        index = None
    if index is not None and isinstance(value, str):
        try:
            return [m.value for m in index.matches(table, col, value, modes=VARIANT_MODES, limit=limit)]
        except SqlmendError:
            return []
    c = quote_ident(col)
    q = (f"SELECT DISTINCT {c} FROM {quote_ident(table)} WHERE LOWER(TRIM(CAST({c} AS TEXT))) = "
         f"LOWER(TRIM({_literal_sql(value)})) LIMIT {limit}")
    try:
        return [r[0] for r in db.execute(q, timeout=5.0, max_rows=limit).rows]
    except SqlmendError:
        return []


def _matches(db: Any, column: str, value: Any) -> int | None:
    table, col = column.split(".", 1)
    q = f"SELECT COUNT(*) FROM {quote_ident(table)} WHERE {quote_ident(col)} = {_literal_sql(value)}"
    try:
        return int(db.execute(q, timeout=5.0, max_rows=1).rows[0][0])
    except SqlmendError:
        return None


def observe(db: Any, current_sql: str) -> list[dict[str, Any]]:
    """Automatic observations of the current SQL's string predicates and scalar transforms (§3.3.2).

    Args:
        db: the open database.
        current_sql: s_cur.

    Returns:
        One observation per string comparison: column, operator, literal, rows it
        matches, stored case/space variants; and one per scalar function on a column.
    """
    dialect = getattr(db, "dialect", "sqlite")
    try:
        tree = sql.parse(current_sql, dialect=dialect)
    except SqlmendError:
        return []
    aliases = {(t.alias_or_name or "").lower(): t.name.lower() for t in tree.find_all(ast.Table)}
    out = []
    for pred in tree.find_all(*_STRING_PREDICATES):
        col, lit = pred.this, pred.expression
        if isinstance(col, ast.Column) and isinstance(lit, ast.Literal) and lit.is_string:
            name = column_name(col, aliases)
            if "." not in name:
                continue
            entry = {"column": name, "op": type(pred).__name__, "literal": lit.this}
            if isinstance(pred, ast.EQ):
                entry["rows"] = _matches(db, name, lit.this)
                entry["variants"] = [str(v) for v in stored_variants(db, name, lit.this)]
            out.append(entry)
    for fn in tree.find_all(ast.Func):
        if not isinstance(fn, ast.AggFunc) and isinstance(fn.this, ast.Column):
            out.append({"transform": type(fn).__name__.lower(), "column": column_name(fn.this, aliases)})
    return out


def _duplicates(ctx_result: Any) -> int:
    if ctx_result is None:
        return 0
    return len(ctx_result.rows) - len(set(map(tuple, ctx_result.rows)))


def check_mechanical(cand: Candidate, question: str, keys: set[str], observations: list[dict[str, Any]],
                     db: Any, current_sql: str, result: Any = None, verify: bool = True) -> Activation:
    """Run a mechanical item's target local check on the current task (§3.3.2).

    Args:
        cand: the retrieved candidate.
        question: the current question q.
        keys: K(s_cur).
        observations: :func:`observe`'s output for s_cur.
        db: the open database.
        current_sql: s_cur.
        result: s_cur's execution result, when known.
        verify: False skips the evidence (the "w/o evidence-verified activation"
            ablation): an item is activated whenever it can be bound.

    Returns:
        The activation decision with the binding.
    """
    m, p = cand.item, cand.item.check.params

    def no(reason: str) -> Activation:
        return Activation(cand, False, reason)

    if m.kind == "value_binding":
        rebind, seen = [], []
        for b in p.get("bindings", [p]):
            for o in observations:
                if o.get("column") != b["column"] or o.get("op") != "EQ":
                    continue
                variants = stored_variants(db, b["column"], o["literal"]) if o.get("rows") == 0 else []
                if str(o["literal"]).lower() == str(b["wrong"]).lower():
                    new = b["right"]
                elif len(variants) == 1 and variants[0] != o["literal"]:
                    new = variants[0]
                else:
                    continue
                if verify and o.get("rows") != 0:
                    seen.append(f"{o['literal']!r} matches {o.get('rows')} rows")
                    continue
                rebind.append({"column": b["column"], "old": o["literal"], "new": new})
        if not rebind:
            return no(f"{'; '.join(seen)}: no violation" if seen else f"no comparison on {p['column']} to rebind")
        return Activation(cand, True, "; ".join(f"{r['old']!r} matches no row of {r['column']}; stored: {r['new']!r}"
                                                for r in rebind), {"rebind": rebind})
    if m.kind == "predicate_column":
        for o in observations:
            if o.get("column") != p["wrong"] or o.get("op") != "EQ":
                continue
            stored = _matches(db, p["right"], o["literal"])
            if verify and not (o.get("rows") == 0 and stored):
                return no(f"{o['literal']!r}: {o.get('rows')} rows in {p['wrong']}, {stored} in {p['right']}")
            return Activation(cand, True, f"{o['literal']!r} is not in {p['wrong']} but in {stored} rows of "
                                          f"{p['right']}", {"wrong": p["wrong"], "right": p["right"],
                                                            "literal": o["literal"]})
        return no(f"no comparison on {p['wrong']}")
    if m.kind == "column_substitution":
        if f"col:{p['clause']}:{p['wrong']}" not in keys:
            return no(f"{p['wrong']} not used in the {p['clause']} clause")
        if f"table:{p['right'].split('.')[0]}" not in keys:
            return no(f"table of {p['right']} not in the current SQL")
        q = words(question)
        right, wrong = words(p["right"].split(".")[-1]) & q, words(p["wrong"].split(".")[-1]) & q
        if verify and not (right and len(right) > len(wrong)):
            return no(f"question does not name {p['right']} over {p['wrong']}")
        return Activation(cand, True, f"question names {sorted(right)}", dict(p))
    if m.kind == "distinct":
        if "distinct" in keys:
            return no("current SQL already has DISTINCT")
        shared = [c for c in p.get("columns", []) if f"col:select:{c}" in keys]
        if p.get("columns") and not shared:
            return no("projection does not share the item's columns")
        dups = _duplicates(result)
        if verify and dups == 0:
            return no("current result has no duplicate rows")
        return Activation(cand, True, f"current result repeats {dups} rows", {"columns": shared})
    if m.kind == "join_condition":
        wrong, right = p["wrong"], p["right"]
        if f"join:{wrong[0]}={wrong[1]}" not in keys:
            return no("current SQL does not join on the recorded wrong pair")
        if verify:
            probe = _join_probe(wrong, right)
            obs = run_probe(db, probe)
            rows = obs.get("rows") or [[None, None]]
            if obs.get("error") or rows[0][0] == rows[0][1]:
                return no(f"probe shows no difference: {obs}")
            return Activation(cand, True, f"probe: {rows[0][0]} joined rows vs {rows[0][1]} on the key pair",
                              {"wrong": wrong, "right": right, "probe": probe})
        return Activation(cand, True, "bound without verification", {"wrong": wrong, "right": right})
    return no("not mechanical: needs the model verifier")


def _join_probe(wrong: list[str], right: list[str]) -> str:
    def cond(pair: list[str]) -> str:
        (ta, ca), (tb, cb) = (x.split(".", 1) for x in pair)
        return f"{quote_ident(ta)}.{quote_ident(ca)} = {quote_ident(tb)}.{quote_ident(cb)}"

    ta, tb = wrong[0].split(".")[0], wrong[1].split(".")[0]
    base = f"FROM {quote_ident(ta)} JOIN {quote_ident(tb)} ON "
    return f"SELECT (SELECT COUNT(*) {base}{cond(wrong)}), (SELECT COUNT(*) {base}{cond(right)})"


# --- model verifier ---------------------------------------------------------------


class Verdict(BaseModel):
    item: str = Field(description="the item id")
    activate: bool = Field(description="true only if the task needs the behaviour AND the SQL shows the violation")
    reason: str = ""
    binding: str = Field("", description="where and how the item applies to the current SQL")


class ActivationAnswer(BaseModel):
    probe: str | None = Field(None, description="one read-only SELECT still needed, else null")
    verdicts: list[Verdict] = Field(default_factory=list)


def activate_model(backend: Any, db: Any, question: str, current_sql: str, candidates: list[Candidate],
                   observations: list[dict[str, Any]], usage: Usage, verify: bool = True,
                   schema_text: str = "") -> list[Activation]:
    """Let the model verify candidates against q, s_cur and the observations, with one probe (§3.3.2).

    Args:
        backend: the chat backend.
        db: the open database.
        question: q.
        current_sql: s_cur.
        candidates: the retrieved items.
        observations: the automatic observations.
        usage: model usage counters.
        verify: False: the ablation "similarity-only selection" (no contracts, no
            database verification, no probe).
        schema_text: the schema as text.

    Returns:
        One activation per candidate.
    """
    views = [c.item.online_view() | {"channel": c.channel} for c in candidates]
    name = "activate" if verify else "select_similar"
    fields = dict(question=question, sql=current_sql, schema=schema_text, items=views,
                  observations=observations if verify else [], probe="none")
    answer = ask(backend, name, ActivationAnswer, usage, **fields)
    if verify and answer is not None and answer.probe:
        fields["probe"] = run_probe(db, answer.probe)
        answer = ask(backend, name, ActivationAnswer, usage, **fields)
    decided = {v.item: v for v in (answer.verdicts if answer else [])}
    out = []
    for c in candidates:
        v = decided.get(c.item.id)
        out.append(Activation(c, bool(v and v.activate), v.reason if v else "no verdict",
                              {"binding": v.binding} if v else {}))
    return out
