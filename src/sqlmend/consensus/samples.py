"""A model's samples as second opinions: k independent answers to the question, asked of the model
configured for the ``sampler`` stage (``consensus.samples=K``; off by default).

Each sample is one chat call (the prompt file ``consensus/prompts/sample.yaml``: the question, its
evidence and the database's schema, or for a schema too big to send whole the relations the question
needs, :func:`sqlmend.refine.extract.prompt_schema`; the query under correction is not shown, so a sample is an answer
of its own, not an edit of it), with sample i's seed ``seed + i`` at the configured temperature
(distinct seeds give distinct answers where the backend samples; a seeded call is deterministic, so
the call log's cache answers it again), structured output ``{"sql": ...}`` (a local model writes it
under the database's SQL grammar). The answers are untrusted alternatives like any other: the
consensus stage hands them to :func:`sqlmend.consensus.vote.consult`, which reads a raw answer's SQL,
refuses what is not one read-only query (never run) and reports each. A call that fails or answers
garbage costs its call and gives no sample; it is reported in the stage's trace.

With a replayed model (``sqlmend bench model-sim --replay A --replay B ...``), call i of a question
draws file i, so k samples are the k files' answers: the same alternatives as
``sqlmend bench alternatives --alt A --alt B ...``, through the same stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from sqlmend.errors import ModelError
from sqlmend.llm import prompts
from sqlmend.llm.book import CallBook
from sqlmend.refine.extract import prompt_schema

#: The llm stage the samples are asked of (``--model sampler=ENDPOINT``; ``default`` covers it).
STAGE = "sampler"
#: Most tokens one sample generates.
MAX_TOKENS = 512


class Sample(BaseModel):
    """One sample's answer: a SQL query."""

    sql: str


@dataclass
class Samples:
    """What k samples gave: the answers (in order; a failed call gives none) and a report per call."""

    answers: list[str] = field(default_factory=list)
    report: list[dict[str, Any]] = field(default_factory=list)
    book: CallBook = field(default_factory=CallBook)


def ask_samples(backend: Any, question: str, evidence: str, schema: Any, k: int, *, temperature: float,
                seed: int, dialect: str = "sqlite", db: Any = None) -> Samples:
    """Ask ``backend`` for ``k`` independent answers to the question.

    Args:
        backend: a chat backend of :mod:`sqlmend.llm`.
        question: the question.
        evidence: its external knowledge ("" when none).
        schema: the database's schema (:class:`sqlmend.types.Schema`).
        k: how many samples.
        temperature: the sampling temperature.
        seed: sample i's seed is ``seed + i``.
        dialect: the database's SQL dialect, named in the prompt.
        db: the open database: a schema too big to send whole is sent as the relations the question needs
            (:func:`sqlmend.refine.extract.prompt_schema`; its stored values are evidence).

    Returns:
        The :class:`Samples` (an answer per call that answered; every call in the report).
    """
    out = Samples()
    messages = prompts.messages(prompts.load("sqlmend.consensus", "sample"), question=question,
                                evidence=evidence or "none",
                                schema=prompt_schema(schema, question, None, db, dialect), dialect=dialect)
    for i in range(k):
        entry: dict[str, Any] = {"sample": i + 1, "seed": seed + i}
        try:
            reply = out.book.ask(backend, messages, stage=STAGE, schema=Sample, max_tokens=MAX_TOKENS,
                                 role=f"sample {i + 1}", sql_schema=schema, temperature=temperature, seed=seed + i)
        except ModelError as exc:  # garbage twice, or the call failed: counted, reported, no sample
            entry["error"] = f"{type(exc).__name__}: {exc}"
            out.report.append(entry)
            continue
        parsed = getattr(reply, "parsed", None)
        if isinstance(parsed, dict):
            parsed = Sample.model_validate(parsed)
        if not isinstance(parsed, Sample):
            entry["error"] = "no structured answer"
        else:
            entry["sql"] = parsed.sql
            out.answers.append(parsed.sql)
        out.report.append(entry)
    return out


__all__ = ["MAX_TOKENS", "STAGE", "Sample", "Samples", "ask_samples"]
