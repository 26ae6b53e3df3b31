"""Build the detector's training set from gold SQL (ErrorLLM §3.1).

For every training task: the gold SQL is a ``no_error`` example; rule-based
perturbations of it (:mod:`sqlmend.synth.operators`) are error examples, kept
only when they execute and ``Exec(y', D) ≠ Exec(y, D)`` (compared as sets of
rows, the rule of the execution-accuracy labels); with probability
``compose_rate`` two perturbations of different types are composed into a
multi-error example. Each example stores the structural context of
:func:`sqlmend.structure.describe` so that training needs no database.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Iterable, Iterator

from sqlmend import sql as sqlmod
from sqlmend import structure, taxonomy
from sqlmend.db import connect
from sqlmend.errors import ConfigError, DatabaseError, SqlError, SqlmendError
from sqlmend.guard import same_result
from sqlmend.synth.operators import OPERATORS, Operator
from sqlmend.types import ExecResult, Schema, Task


@dataclass
class Example:
    """One training example of the detector."""

    id: str
    question_id: str
    db_id: str
    question: str
    sql: str
    labels: list[str]  # taxonomy ids, ["no_error"] for a correct SQL
    source: str  # gold | rule | near | asillm
    operators: list[str] = field(default_factory=list)
    gold: str = ""
    context: dict[str, str] = field(default_factory=dict)  # qss / ast / exec texts
    evidence: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def differs(a: ExecResult, b: ExecResult) -> bool:
    """True when two results differ as sets of rows (or in their number of columns)."""
    return not same_result(ExecResult(a.columns, list(dict.fromkeys(map(tuple, a.rows)))),
                           ExecResult(b.columns, list(dict.fromkeys(map(tuple, b.rows)))))


def weighted_order(rng: random.Random, items: list[Any], weight: Any) -> list[Any]:
    """Every item once, in a random order drawn by ``weight(item) > 0`` (weighted sampling without
    replacement, Efraimidis-Spirakis keys; equal keys keep the items' order)."""
    keys = [rng.random() ** (1.0 / weight(x)) for x in items]
    return [x for _, x in sorted(zip(keys, items), key=lambda pair: -pair[0])]


def perturb(gold: str, schema: Schema, db: Any, gold_result: ExecResult, rng: random.Random,
            ops: list[Operator], timeout: float = 10.0,
            same: bool = False) -> Iterator[tuple[str, Operator, ExecResult]]:
    """Yield execution-verified perturbations of ``gold``, one operator at a time.

    Args:
        gold: the gold SQL.
        schema: the database schema.
        db: the open database.
        gold_result: the gold's result.
        rng: the random source.
        ops: the operators to try, in order.
        timeout: time limit of each execution.
        same: yield instead the perturbations whose result is the gold's (as sets of rows):
            other SQL that is still right, e.g. a redundant join or condition.

    Yields:
        ``(perturbed_sql, operator, result)`` for every candidate whose result differs (``same``:
        does not differ), the first of each operator.
    """
    try:
        tree = sqlmod.parse(gold)
        base = sqlmod.render(tree)
    except SqlError:
        return
    for op in ops:
        try:
            candidates = op.apply(tree, schema, rng)
        except Exception:  # an operator that trips on an odd tree skips it, never stops the build
            continue
        for cand in candidates:
            try:
                text = sqlmod.render(cand)
            except SqlError:
                continue
            if text.strip() == gold.strip() or text == base:  # the gold itself, only written otherwise
                continue
            try:
                res = db.execute(text, timeout=timeout, max_rows=2000)
            except DatabaseError:
                continue
            if differs(res, gold_result) != same:
                yield text, op, res
                break


def sample_questions(tasks: Iterable[Task], limit: int | None, seed: int = 0) -> list[Task]:
    """The questions with a gold that ``sqlmend synth --limit --seed`` uses (a seeded sample; all without a limit)."""
    tasks = [t for t in tasks if t.gold]
    return random.Random(seed).sample(tasks, limit) if limit and limit < len(tasks) else tasks


def synthesize(tasks: Iterable[Task], db_path, per_question: int = 1, compose_rate: float = 0.3,
               seed: int = 0, samples_per_column: int = 2, value_links: bool = True,
               timeout: float = 10.0, hard_negatives: int = 0,
               type_weights: dict[str, float] | None = None,
               near_misses: Callable[..., list[tuple[Any, bool, list[str]]]] | None = None) -> Iterator[Example | str]:
    """Make training examples from the gold SQL of ``tasks``.

    Args:
        tasks: training tasks with ``gold`` set (never dev/test gold).
        db_path: ``db_id -> database path or URL``.
        per_question: single-error examples per question (each from a different error type).
        compose_rate: probability of one extra two-error example per question.
        seed: the random seed.
        samples_per_column: sample values shown per text column in the QSS.
        value_links: link question values through the database's value index.
        timeout: time limit of each execution.
        hard_negatives: per question, up to this many near-miss search candidates of the gold
            that return the gold's rows (``no_error``, source ``near``) and as many that do not
            (labelled with their generator's error types), made by ``near_misses``.
        type_weights: draw the error types to perturb with these weights (error-type id ->
            weight, e.g. the mix of real wrong predictions) instead of uniformly; a type
            missing here is drawn last.
        near_misses: with ``hard_negatives``, the source of the near misses,
            ``(task, db, gold_result, rng, n) -> [(candidate, correct, error types)]``: the
            repair search's (:func:`sqlmend.search.hard.near_misses`), which sits above this package.

    Yields:
        :class:`Example` objects, and a ``str`` message for each task that had to be skipped.
    """
    if hard_negatives > 0 and near_misses is None:
        raise ConfigError("hard_negatives needs near_misses (sqlmend.search.hard.near_misses)")
    rng = random.Random(seed)
    by_type: dict[str, list[Operator]] = {}
    for op in OPERATORS.values():
        by_type.setdefault(op.error_type, []).append(op)
    dbs: dict[str, tuple[Any, dict, Any]] = {}
    for task in tasks:
        gold = task.gold or task.sql
        try:
            if task.db_id not in dbs:
                db = connect(db_path(task.db_id))
                vi = db.value_index() if value_links else None
                dbs[task.db_id] = (db, structure.sample_values(db, samples_per_column), vi)
            db, samples, vi = dbs[task.db_id]
            gold_res = db.execute(gold, timeout=timeout, max_rows=2000)
        except (SqlmendError, OSError) as e:
            yield f"{task.question_id}: skipped ({e})"
            continue
        schema = db.schema()

        def example(sql_text: str, labels: list[str], source: str, ops: list[str], res: ExecResult) -> Example:
            ctx = structure.describe(db, task.question, sql_text, samples=samples, value_index=vi, result=res)
            return Example(f"{task.question_id}:{len(ops)}:{'+'.join(ops) or 'gold'}", task.question_id,
                           task.db_id, task.question, sql_text, labels, source, ops, gold, ctx.to_dict(),
                           task.evidence)

        yield example(gold, [taxonomy.NO_ERROR], "gold", [], gold_res)
        types = list(by_type)
        if type_weights:
            types = weighted_order(rng, types, lambda t: max(type_weights.get(t, 0.0), 1e-9))
        else:
            rng.shuffle(types)
        made: list[tuple[str, Operator]] = []
        for type_id in types:
            if len(made) >= per_question:
                break
            ops = by_type[type_id][:]
            rng.shuffle(ops)
            for text, op, res in perturb(gold, schema, db, gold_res, rng, ops, timeout):
                made.append((text, op))
                yield example(text, [op.error_type], "rule", [op.name], res)
                break
        if made and rng.random() < compose_rate:
            first_sql, first_op = made[0]
            others = [op for t in types if t != first_op.error_type for op in by_type[t]]
            rng.shuffle(others)
            for text, op, res in perturb(first_sql, schema, db, gold_res, rng, others[:6], timeout):
                if differs(res, gold_res):
                    labels = sorted({first_op.error_type, op.error_type}, key=lambda t: taxonomy.get(t).slot)
                    yield example(text, labels, "rule", [first_op.name, op.name], res)
                break
        if hard_negatives > 0:
            for cand, correct, found in near_misses(replace(task, gold=gold), db, gold_res, rng, hard_negatives):
                if correct or found:
                    yield example(cand.sql, [taxonomy.NO_ERROR] if correct else found, "near",
                                  [f"near-{'same' if correct else 'other'}:{g}" for g in cand.generators],
                                  cand.result)
    for db, _, _ in dbs.values():
        db.close()


def label_distribution(examples: Iterable[dict | Example]) -> Counter:
    """Count examples per label (a multi-error example counts once per label) and per source.

    Args:
        examples: examples or their dicts.

    Returns:
        A Counter with keys ``label:<type>``, ``source:<source>``, ``n_labels:<k>``.
    """
    out: Counter = Counter()
    for ex in examples:
        d = ex.to_dict() if isinstance(ex, Example) else ex
        out["examples"] += 1
        out[f"source:{d['source']}"] += 1
        out[f"n_labels:{len([x for x in d['labels'] if x != taxonomy.NO_ERROR]) }"] += 1
        for x in d["labels"]:
            out[f"label:{x}"] += 1
    return out
