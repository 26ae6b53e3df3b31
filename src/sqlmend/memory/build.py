"""Repair memory construction, end to end (MIRA §3.2): correction -> memory items.

For one historical correction (q_i, s-_i, s+_i): recover a validated repair
(§3.2.1), diff and group its edits, isolate and judge each group (§3.2.2),
build one item per accepted repair unit and store the admitted ones
(§3.2.3). A correction that yields nothing is logged with the reason.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sqlmend import sql
from sqlmend.errors import SqlmendError
from sqlmend.llm.book import CallBook
from sqlmend.memory import kinds
from sqlmend.memory.edits import extract_edits, group_edits
from sqlmend.memory.isolation import collect_evidence, isolate
from sqlmend.memory.items import (LocalCheck, MemoryItem, SemanticContract, SourceSupport,
                                  StructuralSignature, admission_problem)
from sqlmend.memory.judge import judge_mechanical, judge_model
from sqlmend.memory.keys import item_keys
from sqlmend.memory.kinds.base import local_check
from sqlmend.memory.modelcall import embed
from sqlmend.memory.recovery import recover
from sqlmend.memory.store import MemoryStore

@dataclass
class ConfirmedCorrection:
    """A confirmed historical correction h_i = (q_i, s-_i, s+_i)."""

    question_id: str
    question: str
    wrong_sql: str
    corrected_sql: str


@dataclass
class BuildReport:
    corrections: int = 0
    items: int = 0
    by_kind: Counter = field(default_factory=Counter)
    rejected: Counter = field(default_factory=Counter)  # by stage
    recovered: Counter = field(default_factory=Counter)  # by how
    usage: CallBook = field(default_factory=lambda: CallBook(keep_prompts=False))

    def add(self, other: "BuildReport") -> None:
        self.corrections += other.corrections
        self.items += other.items
        self.by_kind.update(other.by_kind)
        self.rejected.update(other.rejected)
        self.recovered.update(other.recovered)
        self.usage.add(other.usage)


def _normalized(text: str, schema: Any, dialect: str) -> str:
    # no qualifier-made output aliases, ORDER BY aliases expanded: each clause edits on its own
    return sql.normalize(text, schema, dialect=dialect, output_aliases=False).sql(dialect=dialect)


def build_items(db: Any, case: ConfirmedCorrection, schema: Any = None, backend: Any = None,
                recovery_backend: Any = None,
                decompose: bool = True, budget: int = 3, report: BuildReport | None = None,
                log: Any = None, db_id: str = "") -> list[MemoryItem]:
    """Turn one historical correction into admitted memory items (§3.2).

    Args:
        db: the open database of the correction.
        case: the historical correction.
        schema: the database schema (``db.schema()`` when None).
        backend: the judge's model backend for general groups (mechanical kinds are
            always decided by their facts); None: mechanical items only.
        recovery_backend: the model proposing repairs (§3.2.1); None: direct recovery only.
        decompose: False keeps the whole difference as one unit (ablation, §4.4).
        budget: model rounds for repair recovery.
        report: counters to update.
        log: ``log(question_id, stage, reason)`` for corrections or groups that yield nothing.
        db_id: the database id stored on the items.

    Returns:
        The admitted items (without vectors; see :func:`build_memory`).
    """
    report = report if report is not None else BuildReport()
    report.corrections += 1
    log = log or (lambda *a: None)
    dialect = getattr(db, "dialect", "sqlite")
    schema = schema if schema is not None else db.schema()
    rec = recover(db, case.question, case.wrong_sql, case.corrected_sql, schema=schema,
                  backend=recovery_backend, budget=budget)
    report.usage.add(rec.usage)
    report.recovered[rec.how] += 1
    if rec.repair_sql is None:
        report.rejected["recovery"] += 1
        log(case.question_id, "recovery", rec.reason)
        return []
    try:
        wrong_n, val_n = _normalized(case.wrong_sql, schema, dialect), _normalized(rec.repair_sql, schema, dialect)
        edits = extract_edits(wrong_n, val_n, schema=schema, dialect=dialect)
    except SqlmendError as e:
        report.rejected["edits"] += 1
        log(case.question_id, "edits", f"cannot normalize or diff: {e}")
        return []
    items = []
    for group in group_edits(edits, decompose=decompose):
        iso = isolate(val_n, group, schema=schema, dialect=dialect)
        if not iso.valid:
            report.rejected["isolation"] += 1
            log(case.question_id, "isolation", iso.problem)
            continue
        facts = collect_evidence(db, iso, schema=schema)
        # the facts decide a mechanical kind (either way); only a general group goes to the model
        verdict = judge_mechanical(case.question, iso, facts, dialect)
        if backend is not None and verdict.kind == "general":
            verdict = judge_model(backend, db, case.question, iso, facts, report.usage)
        if not verdict.accepted:
            report.rejected["judge"] += 1
            log(case.question_id, "judge", verdict.reason)
            continue
        observation, violation = local_check(kinds.get(verdict.kind).NAME, verdict.params)
        item = MemoryItem(
            db_id=db_id, kind=verdict.kind,
            error_type=verdict.error_type,
            contract=SemanticContract(**{k: verdict.contract.get(k, "" if k != "preserve" else [])
                                         for k in ("applicability", "incorrect_behavior", "required_behavior",
                                                   "repair_behavior", "preserve", "not_applicable")}),
            signature=StructuralSignature(edits=[e.__dict__ for e in group.edits], clauses=group.clauses,
                                          schema_refs=group.schema_refs),
            check=LocalCheck(observation, violation, verdict.params),
            support=SourceSupport(case.question_id, case.question, case.wrong_sql, rec.repair_sql,
                                  iso.reverted_sql, facts, verdict.judged_by),
            keys=item_keys(iso.reverted_sql, group.schema_refs, group.clauses,
                           added=group.kinds == ["insert"], dialect=dialect))
        item.signature.context = item.keys
        problem = admission_problem(item)
        if problem:
            report.rejected["admission"] += 1
            log(case.question_id, "admission", problem)
            continue
        items.append(item)
    return items


def build_memory(db: Any, db_id: str, cases: list[ConfirmedCorrection], store: MemoryStore, backend: Any = None,
                 embedder: Any = None, decompose: bool = True, budget: int = 3,
                 recovery_backend: Any = None) -> BuildReport:
    """Build (or extend) one database's repair memory from its historical corrections.

    Args:
        db: the open database.
        db_id: its id (stored on every item).
        cases: the historical corrections of this database.
        store: the database's store (items are added; call ``store.clear()`` first to rebuild).
        backend: the judge's chat backend; None: mechanical items only.
        embedder: an embedding backend for the semantic vectors; None: no vectors
            (retrieval then uses the structural channel only).
        decompose: False: one item per correction (ablation).
        budget: model rounds for repair recovery.
        recovery_backend: the chat backend proposing repairs; None: direct recovery only.

    Returns:
        The build report (items, rejections by stage, model usage).
    """
    report = BuildReport()
    schema = db.schema()
    for case in cases:
        try:
            items = build_items(db, case, schema, backend, recovery_backend, decompose, budget, report,
                                store.reject, db_id)
        except SqlmendError as e:
            report.rejected["error"] += 1
            store.reject(case.question_id, "error", str(e))
            continue
        if items and embedder is not None:
            vectors = embed(embedder, [i.semantic_text() for i in items], report.usage)
            for item, vec in zip(items, vectors or []):
                item.vector = vec
        for item in items:
            store.add(item)
            report.items += 1
            report.by_kind[item.kind] += 1
    return report
