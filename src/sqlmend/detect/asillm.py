"""LLM-assisted error labelling of real wrong predictions (AsiLLM, ErrorLLM §3.1).

Given the question, the schema, a wrong prediction and the gold SQL, a model
names the error types of the prediction. The prediction must really be wrong
(its result differs from the gold's on the database) before it is asked
about. Only TRAINING questions may be used: a dev/test gold must never reach
training data. Runs with whatever backend is configured in ``sqlmend.llm``;
without one, :func:`label_predictions` raises :class:`ConfigError` with a
message saying so, and callers skip this source.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

from sqlmend import structure
from sqlmend.db import connect
from sqlmend.detect.prompted import LabelList, known_types, type_list
from sqlmend.errors import ConfigError, ModelError, SqlmendError
from sqlmend.llm import prompts
from sqlmend.synth.build import Example, differs
from sqlmend.types import Task

NO_MODEL = ("AsiLLM labelling skipped: no model is configured for the 'synth' stage "
            "(configure one in the llm config file, or pass --model synth=ENDPOINT)")


def prompt(question: str, qss: str, wrong: str, gold: str) -> str:
    """The AsiLLM prompt (data file ``detect/prompts/asillm.yaml``) filled for one prediction."""
    return prompts.render(prompts.load("sqlmend.detect", "asillm")["user"], types=type_list(), question=question,
                          qss=qss, wrong=wrong, gold=gold)


def label_predictions(tasks: Iterable[Task], db_path: Callable[[str], Any], backend: Any,
                      timeout: float = 10.0) -> Iterator[Example | str]:
    """Label the error types of real wrong predictions with a model.

    Args:
        tasks: TRAINING tasks with ``sql`` = the prediction and ``gold`` set.
        db_path: ``db_id -> database path or URL``.
        backend: an ``sqlmend.llm`` backend, or None.
        timeout: time limit of each execution.

    Yields:
        ``Example(source="asillm")`` per wrong prediction the model labelled, and a
        ``str`` note for each one skipped (correct, failed, unlabelled).

    Raises:
        ConfigError: no backend (the message says how to configure one).
    """
    if backend is None:
        raise ConfigError(NO_MODEL)
    dbs: dict[str, Any] = {}
    try:
        for task in tasks:
            if not task.gold or not task.sql:
                yield f"{task.question_id}: no prediction or gold"
                continue
            try:
                db = dbs.get(task.db_id) or dbs.setdefault(task.db_id, connect(db_path(task.db_id)))
                gold_res = db.execute(task.gold, timeout=timeout)
                try:
                    pred_res, error = db.execute(task.sql, timeout=timeout), None
                except SqlmendError as e:
                    pred_res, error = None, str(e)
                if pred_res is not None and not differs(pred_res, gold_res):
                    yield f"{task.question_id}: the prediction is correct"
                    continue
                ctx = structure.describe(db, task.question, task.sql, result=pred_res, error=error)
                res = backend.chat([{"role": "user", "content": prompt(task.question, ctx.qss, task.sql,
                                                                       task.gold)}],
                                   schema=LabelList, stage="synth")
            except (SqlmendError, ModelError) as e:
                yield f"{task.question_id}: skipped ({e})"
                continue
            labels = known_types(res.parsed.errors if res.parsed is not None else [])
            if not labels:
                yield f"{task.question_id}: the model named no known error type"
                continue
            yield Example(f"{task.question_id}:asillm", task.question_id, task.db_id, task.question, task.sql,
                          labels, "asillm", ["asillm"], task.gold, ctx.to_dict(), task.evidence)
    finally:
        for db in dbs.values():
            db.close()
