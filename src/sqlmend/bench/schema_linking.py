"""``sqlmend bench schema-linking``: does :meth:`sqlmend.Corrector.schema_for` hold the tables and columns a
question's gold query reads, within a budget of 1, 2, 4 and 8 KB of text?

**Where.** On the warehouse of ``sqlmend bench warehouse`` (every Spider database as a schema of one
PostgreSQL database: 838 relations, 4,018 columns; :func:`sqlmend.bench.warehouse.warehouse`) and on each
question's own Spider database (SQLite).

**Recall.** A gold's tables and columns (``table.column``, resolved against its database's schema;
``COUNT(*)`` reads no column) found in ``.tables`` and ``.columns``, summed over the questions (micro), and
the share of questions whose every gold table was found.

**With a draft.** The question alone; the question with the gold written without its schema (what a model
that does not know the warehouse writes: :func:`sqlmend.bench.warehouse.gold_cases`); the question with each
shared prediction file's *failing* query for it (its rows are not the gold's on SQLite, or it does not run:
a model's failing draft; on the warehouse transpiled to PostgreSQL, written without schema as the model
wrote it). The question alone is measured again on those same questions, so that the two compare.

**Baselines, side by side, written by the same writer within the same budget** (the relations in their
order, whole, until the next does not fit): ``bm25`` (BM25 over each relation's names: its schema's, its
own and its columns', the question's words as :func:`sqlmend.structure.needs.question_terms` reads them),
``minilm`` (the cosine of the question with each column's words, ``table column``, all-MiniLM-L6-v2; a
relation by its best column), ``whole`` (the whole schema: its size, and the relations that fit the
budget in catalogue order), and ``schema_for+embedder`` (the embedder's evidence added).

**Time.** The median and 90th percentile of ``schema_for`` per question on the warehouse and on a generated
schema of 10,000 tables (:func:`sqlmend.bench.warehouse.generate`), after its first call (which reads the
catalogue's definitions and values once, timed apart).

**Downstream.** The prompt's schema: the whole schema's size against ``schema_for``'s; and ``bench
model-sim`` rows (:mod:`sqlmend.bench.modelsim`) with the prompts' schemas scoped
(``$SQLMEND_SCHEMA_WHOLE_BELOW``) against whole.

Develop on Spider train (``--dataset spider-train``); report dev. Nothing here is fitted.
"""

from __future__ import annotations

import math
import os
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from sqlmend import sql as sqlmod
from sqlmend.db import connect
from sqlmend.errors import SqlmendError
from sqlmend.structure import needs
from sqlmend.types import Schema

#: The budgets measured, in characters of text.
BUDGETS = (1024, 2048, 4096, 8192)
#: The methods, in the report's order.
METHODS = ("schema_for", "schema_for+embedder", "bm25", "minilm", "whole")
#: BM25's constants.
K1, B = 1.2, 0.75


# --- the gold ---------------------------------------------------------------------------------------------


@dataclass
class Case:
    """One question (and a draft): what it is asked with, and the gold's relations and columns (lower case)."""

    question_id: str
    db_id: str
    question: str
    tables: frozenset[str]
    columns: frozenset[str]
    draft: str | None = None
    source: str = "question"  # question | gold | failing:<file>


def gold_refs(gold: str, schema: Schema, prefix: str = "") -> tuple[frozenset[str], frozenset[str]] | None:
    """The relations and columns (``table.column``) ``gold`` reads, lower case, ``prefix`` before each key
    (``concert_singer.`` on the warehouse); None when it does not parse against ``schema`` or reads no
    relation of it."""
    try:
        f = sqlmod.features(gold, schema)
    except SqlmendError:
        return None
    tables = {(prefix + t.name).lower() for ref in f.tables if (t := schema.table(ref.name)) is not None}
    columns = set()
    for c in f.all_columns():
        t = schema.table(c.table) if c.table else None
        col = t.column(c.column) if t is not None and c.column != "*" else None
        if col is not None:
            columns.add(f"{prefix}{t.name}.{col.name}".lower())
    return (frozenset(tables), frozenset(columns)) if tables else None


def question_cases(ds: Any, warehouse: bool, limit: int | None = None, seed: int = 0) -> list[Case]:
    """One case per question of ``ds`` whose database is there (a seeded sample of ``limit``), its gold's
    relations and columns keyed as ``warehouse`` (``db_id.table``) or its own database names them."""
    schemas: dict[str, Schema] = {}
    tasks = [t for t in ds.tasks if t.gold and ds.db_path(t.db_id) is not None]
    if limit is not None and limit < len(tasks):
        keep = set(random.Random(f"schema-linking:{seed}").sample(range(len(tasks)), limit))
        tasks = [t for i, t in enumerate(tasks) if i in keep]
    out = []
    for t in tasks:
        if t.db_id not in schemas:
            with connect(ds.db_path(t.db_id)) as db:
                schemas[t.db_id] = db.schema()
        refs = gold_refs(t.gold, schemas[t.db_id], f"{t.db_id.lower()}." if warehouse else "")
        if refs is not None:
            out.append(Case(t.question_id, t.db_id, t.question, refs[0], refs[1]))
    return out


def failing_drafts(ds: Any, cases: list[Case], files: list[Path], workers: int = 2,
                   dialect: str = "sqlite") -> list[Case]:
    """Each file's prediction for a case's question where it is wrong (other rows than the gold's on the
    question's SQLite database, or an error), as a draft (transpiled to ``dialect``, written as the model
    wrote it, without schema)."""
    from sqlmend.data.predictions import load_predictions
    from sqlmend.evaluation.evaluate import evaluate

    by_id = {c.question_id: c for c in cases}
    schemas: dict[str, Schema] = {}
    out = []
    for path in files:
        preds = {q: s for q, s in load_predictions(path, ds).items() if q in by_id}
        report = evaluate(ds, preds, workers=workers, label=path.stem)
        for r in report.results:
            if r.question_id not in preds or not r.scored or r.correct:
                continue
            case, text = by_id[r.question_id], preds[r.question_id]
            if dialect != "sqlite":
                if case.db_id not in schemas:
                    with connect(ds.db_path(case.db_id)) as db:
                        schemas[case.db_id] = db.schema()
                try:
                    text = sqlmod.transpile(text, read="sqlite", write=dialect, schema=schemas[case.db_id])
                except SqlmendError:
                    pass  # kept as written: its names are the evidence
            out.append(Case(case.question_id, case.db_id, case.question, case.tables, case.columns, text,
                            f"failing:{path.stem}"))
    return out


# --- the methods ---------------------------------------------------------------------------------------------


@dataclass
class Found:
    """What a method answered for one case."""

    tables: set[str]
    columns: set[str]
    chars: int
    seconds: float = 0.0


def _found(q: needs.QuestionSchema, seconds: float = 0.0) -> Found:
    return Found({t.lower() for t in q.tables}, {c.lower() for c in q.columns}, len(q.text), seconds)


class Baselines:
    """BM25 over names, MiniLM over columns and the whole schema, over one catalogue, written by
    :func:`sqlmend.structure.needs.write` (the same writer and budget as ``schema_for``)."""

    def __init__(self, tables: list[Any], embed: Callable[[list[str]], Any] | None = None) -> None:
        self.index = needs.SchemaIndex(tables, embed=embed)
        idx = self.index
        docs: list[Counter] = []
        for i, t in enumerate(idx.tables):
            words = needs.name_words(t.schema) + needs.name_words(t.relname)
            for j in idx.table_cols[i]:
                words += needs.name_words(idx.col_name[j])
            docs.append(Counter(words))
        self.docs = docs
        self.length = np.array([sum(d.values()) for d in docs], dtype=np.float64)
        self.mean_length = float(self.length.mean()) if len(docs) else 1.0
        df: Counter = Counter()
        for d in docs:
            df.update(d.keys())
        n = len(docs)
        self.idf = {w: math.log(1 + (n - k + 0.5) / (k + 0.5)) for w, k in df.items()}
        self.postings: dict[str, list[int]] = {}
        for i, d in enumerate(docs):
            for w in d:
                self.postings.setdefault(w, []).append(i)
        self.embed = embed

    def _write(self, scores: np.ndarray, budget: int, order: list[int] | None = None) -> needs.QuestionSchema:
        """The relations by ``scores`` (ties, and those that score nothing: catalogue order), written whole."""
        r = needs.Ranking(self.index)
        r.table = scores
        return needs.write(r, order if order is not None else r.order(), budget)

    def bm25(self, question: str, budget: int) -> needs.QuestionSchema:
        scores = np.zeros(len(self.docs))
        for term in needs.question_terms(question):
            for i in self.postings.get(term, ()):
                tf = self.docs[i][term]
                norm = tf + K1 * (1 - B + B * self.length[i] / self.mean_length)
                scores[i] += self.idf[term] * tf * (K1 + 1) / norm
        return self._write(scores, budget)

    def minilm(self, question: str, budget: int, vector: Any) -> needs.QuestionSchema:
        idx = self.index
        cos = idx.col_vec @ np.asarray(vector, dtype=np.float32).reshape(-1)
        best = np.full(len(idx.tables), -1.0)
        np.maximum.at(best, idx.col_table_arr, cos.astype(np.float64))
        return self._write(best + 1.0, budget)  # every relation, by its best column

    def whole(self, budget: int) -> needs.QuestionSchema:
        return self._write(np.zeros(len(self.index.tables)), budget, order=list(range(len(self.index.tables))))

    def whole_chars(self) -> int:
        return len(self.whole(1 << 30).text)


# --- the tally -------------------------------------------------------------------------------------------------


@dataclass
class Tally:
    """Recall of one method, budget and kind of case."""

    cases: int = 0
    gold_tables: int = 0
    tables: int = 0
    gold_columns: int = 0
    columns: int = 0
    every_table: int = 0
    chars: int = 0
    seconds: list[float] = field(default_factory=list)

    def add(self, case: Case, found: Found) -> None:
        self.cases += 1
        self.gold_tables += len(case.tables)
        self.tables += len(case.tables & found.tables)
        self.gold_columns += len(case.columns)
        self.columns += len(case.columns & found.columns)
        self.every_table += case.tables <= found.tables
        self.chars += found.chars
        if found.seconds:
            self.seconds.append(found.seconds)

    def to_dict(self) -> dict[str, Any]:
        pct = lambda a, b: round(100 * a / b, 1) if b else None  # noqa: E731
        out = {"cases": self.cases, "tables": pct(self.tables, self.gold_tables),
               "columns": pct(self.columns, self.gold_columns), "every_table": pct(self.every_table, self.cases),
               "mean_chars": round(self.chars / self.cases) if self.cases else None}
        if self.seconds:
            ordered = sorted(self.seconds)
            out.update(median_ms=round(1000 * statistics.median(ordered), 1),
                       p90_ms=round(1000 * ordered[int(0.9 * (len(ordered) - 1))], 1))
        return out


def measure(cases: Iterable[Case], methods: dict[str, Callable[[Case, int], Found]],
            budgets: tuple[int, ...] = BUDGETS, progress: Callable[[int], None] | None = None
            ) -> dict[str, dict[str, dict[str, Any]]]:
    """``{kind of case: {method: {budget: recall}}}``; a case's kind is its source (``question``, ``gold``,
    ``failing``); a case with a draft is also measured without it (``question, same cases``)."""
    tallies: dict[tuple[str, str, int], Tally] = {}
    for n, case in enumerate(cases):
        kinds = [(case.source.split(":")[0], case)]
        if case.draft is not None:
            kinds.append((f"{kinds[0][0]}: question alone", Case(case.question_id, case.db_id, case.question,
                                                                case.tables, case.columns)))
        for kind, c in kinds:
            for name, method in methods.items():
                for budget in budgets:
                    tallies.setdefault((kind, name, budget), Tally()).add(c, method(c, budget))
        if progress is not None:
            progress(n)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for (kind, name, budget), t in tallies.items():
        out.setdefault(kind, {}).setdefault(name, {})[str(budget)] = t.to_dict()
    return out


def _every_tenth(total: int, echo: Callable[[str], None]) -> Callable[[int], None]:
    """A progress line at each tenth of ``total`` cases."""
    marks = {max(0, (total * k) // 10 - 1) for k in range(1, 11)}
    return lambda n: echo(f"  {n + 1}/{total} cases") if n in marks else None


def _timed(fixer: Any) -> Callable[[Case, int], Found]:
    def run(case: Case, budget: int) -> Found:
        start = time.perf_counter()
        q = fixer.schema_for(case.question, case.draft, budget)
        return _found(q, time.perf_counter() - start)
    return run


def _methods(fixer: Any, embedded: Any, baselines: Baselines, vectors: dict[str, Any] | None
             ) -> dict[str, Callable[[Case, int], Found]]:
    out: dict[str, Callable[[Case, int], Found]] = {"schema_for": _timed(fixer)}
    if embedded is not None:
        out["schema_for+embedder"] = _timed(embedded)
    out["bm25"] = lambda c, b: _found(baselines.bm25(c.question, b))
    if vectors is not None:
        out["minilm"] = lambda c, b: _found(baselines.minilm(c.question, b, vectors[c.question]))
    out["whole"] = lambda c, b: _found(baselines.whole(b))
    return out


def _embedder() -> Any:
    """The packaged MiniLM, its answers cached in the call log (None when its extra is not installed)."""
    try:
        from sqlmend.llm.calllog import CallLog
        from sqlmend.llm.embedder import LocalEmbedder

        backend = LocalEmbedder(log=CallLog())  # the call log's cache: each text embedded once, across runs
        backend.check()
        return backend
    except Exception:  # not installed (no torch, no package): the lexical rows alone
        return None


def _only(embedder: Any) -> Callable[[str], Any]:
    """A model resolver with ``embedder`` as the ``embedder`` stage's model and no other (loaded once)."""
    return lambda stage: embedder if stage == "embedder" else None


def _vectors(embedder: Any, cases: list[Case]) -> dict[str, Any] | None:
    if embedder is None:
        return None
    questions = list(dict.fromkeys(c.question for c in cases))
    vecs = embedder.embed(questions, stage="bench")
    return dict(zip(questions, vecs))


# --- the runs ------------------------------------------------------------------------------------------------------


def bench_warehouse_linking(ds: Any, files: list[Path], limit: int | None = None, seed: int = 0,
                            budgets: tuple[int, ...] = BUDGETS, embed: bool = True, workers: int = 2,
                            echo: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """The warehouse rows (see the module doc): recall by kind of case, method and budget; time; prompt sizes."""
    import sqlmend
    from sqlmend.bench.engines import Runner
    from sqlmend.data.datasets import Dataset
    from sqlmend.bench.warehouse import _every_database, gold_cases, warehouse

    cases = question_cases(ds, warehouse=True, limit=limit, seed=seed)
    failing = failing_drafts(ds, cases, files, workers, dialect="postgres")
    echo(f"warehouse: {len(cases)} questions, {len(failing)} failing drafts of {len(files)} files")
    embedder = _embedder() if embed else None
    by_id = {c.question_id: c for c in cases}
    with warehouse("postgres", _every_database(ds), echo=echo) as url:
        run = Runner(10.0)
        try:  # the sampled questions' golds alone, each run once with its schema (those that run there)
            asked = Dataset(ds.name, [ds.task(c.question_id) for c in cases], db_root=ds.db_root)
            golds, _ = gold_cases(asked, url, "postgres", run, None, seed)
        finally:
            run.close()
        gold_drafts = [Case(c.task.question_id, c.task.db_id, c.task.question, by_id[c.task.question_id].tables,
                            by_id[c.task.question_id].columns, c.task.sql, "gold")
                       for c in golds if c.task.question_id in by_id]
        with ExitStack() as stack:
            fixer = stack.enter_context(sqlmend.Corrector(url, stages="guard"))
            start = time.perf_counter()
            fixer.schema_for("How many singers are there?")
            first = time.perf_counter() - start
            embedded = stack.enter_context(sqlmend.Corrector(url, stages="guard", models=_only(embedder))) \
                if embedder is not None else None
            if embedded is not None:
                start = time.perf_counter()
                embedded.schema_for("How many singers are there?")
                echo(f"warehouse: the embedder's index in {time.perf_counter() - start:.1f} s")
            tables = fixer.definitions([t.name for t in fixer.relations().tables])
            baselines = Baselines(tables, embed=(lambda texts: embedder.embed(texts, stage="bench"))
                                  if embedder is not None else None)
            vectors = _vectors(embedder, cases)
            methods = _methods(fixer, embedded, baselines, vectors)
            every = cases + gold_drafts + failing
            echo(f"warehouse: {len(every)} cases x {len(methods)} methods x {len(budgets)} budgets")
            recall = measure(every, methods, budgets, progress=_every_tenth(len(every), echo))
            whole = baselines.whole_chars()
    return {"relations": len(tables), "columns": sum(len(t.columns) for t in tables), "questions": len(cases),
            "gold_drafts": len(gold_drafts), "failing_drafts": len(failing), "first_call_seconds": round(first, 2),
            "whole_chars": whole, "recall": recall, "embedder": embedder is not None}


def bench_single_linking(ds: Any, files: list[Path], limit: int | None = None, seed: int = 0,
                         budgets: tuple[int, ...] = BUDGETS, embed: bool = True, workers: int = 2,
                         echo: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """The same on each question's own database (SQLite)."""
    import sqlmend

    cases = question_cases(ds, warehouse=False, limit=limit, seed=seed)
    failing = failing_drafts(ds, cases, files, workers)
    echo(f"single databases: {len(cases)} questions, {len(failing)} failing drafts")
    embedder = _embedder() if embed else None
    vectors = _vectors(embedder, cases)
    by_db: dict[str, list[Case]] = {}
    for c in cases + failing:
        by_db.setdefault(c.db_id, []).append(c)
    tallies: dict[str, dict[str, dict[str, Any]]] = {}
    sizes = []
    merged: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for db_id, group in sorted(by_db.items()):
        path = str(ds.db_path(db_id))
        with sqlmend.Corrector(path, stages="guard") as fixer, ExitStack() as stack:
            embedded = stack.enter_context(sqlmend.Corrector(path, stages="guard", models=_only(embedder))) \
                if embedder is not None else None
            baselines = Baselines(fixer.schema().tables, embed=(lambda texts: embedder.embed(texts, stage="bench"))
                                  if embedder is not None else None)
            sizes.append(baselines.whole_chars())
            part = measure(group, _methods(fixer, embedded, baselines, vectors), budgets)
        for kind, by_method in part.items():
            for name, by_budget in by_method.items():
                for budget, row in by_budget.items():
                    merged.setdefault((kind, name, budget), []).append(row)
    for (kind, name, budget), rows in merged.items():
        tallies.setdefault(kind, {}).setdefault(name, {})[budget] = _pooled(rows)
    return {"databases": len(by_db), "questions": len(cases), "failing_drafts": len(failing), "recall": tallies,
            "whole_chars_median": statistics.median(sizes) if sizes else None,
            "whole_chars_max": max(sizes) if sizes else None, "embedder": embedder is not None}


def _pooled(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-database recalls pooled over their cases (weights: each database's cases)."""
    n = sum(r["cases"] for r in rows)
    out: dict[str, Any] = {"cases": n}
    for key in ("tables", "columns", "every_table", "mean_chars"):
        have = [(r[key], r["cases"]) for r in rows if r.get(key) is not None]
        out[key] = round(sum(v * k for v, k in have) / sum(k for _, k in have), 1) if have else None
    return out


def bench_sizes(sizes: tuple[int, ...] = (10_000,), work: Path | None = None, questions: int = 200, seed: int = 0,
                engines: tuple[str, ...] = ("sqlite",), echo: Callable[[str], None] = lambda line: None
                ) -> list[dict[str, Any]]:
    """``schema_for`` on a generated schema of N tables (:func:`sqlmend.bench.warehouse.generate`: SQLite, one
    schema; PostgreSQL, ten schemas on a throw-away server): the first call (the definitions read, the index
    built), then the median and 90th percentile over ``questions`` questions naming a random table, and how
    often that table came first."""
    from sqlmend.bench.warehouse import MODULES, generate

    work = Path(work or "runs/bench-schema-linking/schemas")
    work.mkdir(parents=True, exist_ok=True)
    out = []
    for engine in engines:
        server = None
        try:
            if engine == "postgres":
                from sqlmend.testing.pgserver import READER, PgServer

                server = PgServer.start()
            for n in sizes:
                if server is not None:
                    server.admin(f"CREATE DATABASE needs_{n}")
                    generate("postgres", n, server.url(f"needs_{n}", user="postgres"))
                    for module in MODULES:
                        server.admin(f"GRANT USAGE ON SCHEMA {module} TO {READER}; "
                                     f"GRANT SELECT ON ALL TABLES IN SCHEMA {module} TO {READER}", dbname=f"needs_{n}")
                    target, sep = server.url(f"needs_{n}"), "."
                else:
                    target, sep = generate("sqlite", n, work / f"erp_{n}.sqlite"), "_"
                row = _size_row(target, engine, n, sep, questions, seed)
                echo(f"{engine} {n} tables: first call {row['first_call_seconds']} s, median {row['median_ms']} ms")
                out.append(row)
        finally:
            if server is not None:
                server.stop()
    return out


def _size_row(target: str, engine: str, n: int, sep: str, questions: int, seed: int) -> dict[str, Any]:
    import sqlmend
    from sqlmend.bench.warehouse import table_names

    rng = random.Random(seed)
    names = table_names(n)
    with sqlmend.Corrector(target, stages="guard") as fixer:
        start = time.perf_counter()
        fixer.schema_for("How many sales orders are open?")
        first = time.perf_counter() - start
        times, top = [], 0
        for _ in range(questions):
            module, table = names[rng.randrange(n)]
            entity, number = table.rsplit("_", 1)
            start = time.perf_counter()
            found = fixer.schema_for(f"What is the total amount of the pending {entity} {number} of {module}?")
            times.append(time.perf_counter() - start)
            top += bool(found.tables) and found.tables[0].lower() == f"{module}{sep}{table}"
    times.sort()
    return {"engine": engine, "tables": n, "first_call_seconds": round(first, 2),
            "median_ms": round(1000 * statistics.median(times), 1),
            "p90_ms": round(1000 * times[int(0.9 * (len(times) - 1))], 1), "top1": round(100 * top / questions, 1)}


@contextmanager
def scoped_prompts(chars: int | None) -> Iterator[None]:
    """Model prompts show a schema of ``chars`` characters or more as the relations the question needs, within
    ``chars`` (``$SQLMEND_SCHEMA_WHOLE_BELOW``; None: the default threshold)."""
    saved = os.environ.get("SQLMEND_SCHEMA_WHOLE_BELOW")
    if chars is not None:
        os.environ["SQLMEND_SCHEMA_WHOLE_BELOW"] = str(chars)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("SQLMEND_SCHEMA_WHOLE_BELOW", None)
        else:
            os.environ["SQLMEND_SCHEMA_WHOLE_BELOW"] = saved


def model_sim_rows(pred: Path, replay: Path, strategies: list[str], out: Path, scoped: int, sample: int | None,
                   workers: int = 2, echo: Callable[[str], None] = lambda line: None) -> list[dict[str, Any]]:
    """``bench model-sim`` rows of ``pred`` with ``replay`` as the model, the prompts' schemas whole and scoped to
    ``scoped`` characters; each with the prompt tokens its model calls sent (from the run folders)."""
    import json

    from sqlmend.bench.modelsim import ModelSpec, bench_model_sim

    rows = []
    for label, chars in (("whole", None), (f"scoped to {scoped}", scoped)):
        folder = out / ("whole" if chars is None else f"scoped-{scoped}")
        with scoped_prompts(chars):
            got = bench_model_sim([pred], [ModelSpec("replay", files=(str(replay),))], strategies, folder,
                                  workers=workers, sample=sample, progress=False)
        for r in got:
            tokens = calls = 0
            for path in (folder / pred.stem / r.strategy).glob("*/corrections.jsonl"):
                for line in path.read_text(encoding="utf-8").splitlines():
                    for s in json.loads(line).get("stages", []):
                        tokens += s.get("tokens_in", 0)
                        calls += s.get("calls", 0)
            rows.append({"schema": label, **r.to_dict(), "prompt_tokens": tokens, "model_calls": calls})
            echo(f"model-sim {label}: {r.strategy} Δ vs default {r.delta_vs_default:+.2f}, {tokens} prompt tokens")
    return rows


# --- the report ----------------------------------------------------------------------------------------------------


KINDS = (("question", "question"), ("gold", "+ gold without schema"), ("gold: question alone", "(same questions, no draft)"),
         ("failing", "+ a failing draft"), ("failing: question alone", "(same questions, no draft)"))


def _cells(by_budget: dict[str, Any], budgets: Iterable[str]) -> str:
    return " | ".join(f"{r['tables']} / {r['columns']}" if (r := by_budget.get(b)) else "-" for b in budgets)


def recall_table(recall: dict[str, Any], budgets: tuple[int, ...] = BUDGETS) -> list[str]:
    """Rows: method x kind of case; cells: tables % / columns % at each budget."""
    keys = [str(b) for b in budgets]
    lines = ["| method | evidence | cases | " + " | ".join(f"{b // 1024} KB: tables / columns %" for b in budgets) + " |",
             "| --- | --- | ---: |" + " ---: |" * len(budgets)]
    for name in METHODS:
        for kind, label in KINDS:
            row = recall.get(kind, {}).get(name)
            if row:
                n = next(iter(row.values()))["cases"]
                lines.append(f"| {name} | {label} | {n} | {_cells(row, keys)} |")
    return lines


def _table(head: list[str], rows: list[list[Any]]) -> list[str]:
    """A Markdown table after a blank line, the first column left, the others right."""
    return ["", "| " + " | ".join(head) + " |", "| --- |" + " ---: |" * (len(head) - 1),
            *("| " + " | ".join(str(v) for v in row) + " |" for row in rows)]


def markdown(report: dict[str, Any]) -> str:
    """The report as the tables of docs/benchmarks.md."""
    lines: list[str] = []
    budgets = tuple(report.get("budgets", BUDGETS))
    w = report.get("warehouse")
    if w:
        lines += [f"Warehouse ({w['relations']} relations, {w['columns']} columns; the whole schema "
                  f"{w['whole_chars']:,} characters): {report['dataset']}, {w['questions']} questions, "
                  f"{w['gold_drafts']} golds without schema, {w['failing_drafts']} failing drafts.", ""]
        lines += recall_table(w["recall"], budgets)
        t = w["recall"]["question"]["schema_for"].get("4096", {})
        lines += ["", f"schema_for on the warehouse: first call {w['first_call_seconds']} s; then median "
                      f"{t.get('median_ms')} ms, p90 {t.get('p90_ms')} ms (4 KB, the question alone)."]
    s = report.get("single")
    if s:
        lines += ["", f"Each question's own database ({s['databases']} databases; whole schema median "
                      f"{s['whole_chars_median']} characters, largest {s['whole_chars_max']}):", ""]
        lines += recall_table(s["recall"], budgets)
    sizes = report.get("sizes")
    if sizes:
        lines += _table(["generated schema", "first call", "median", "p90", "asked table first"],
                        [[f"{r['tables']:,} tables ({r.get('engine', 'sqlite')})", f"{r['first_call_seconds']} s", f"{r['median_ms']} ms",
                          f"{r['p90_ms']} ms", f"{r['top1']}%"] for r in sizes])
    sim = report.get("model_sim")
    if sim:
        lines += _table(["prompts' schema", "strategy", "n", "fixed", "regressed", "Δ vs default", "model calls",
                         "prompt tokens"],
                        [[r["schema"], r["strategy"], r["n"], r["fixed"], r["regressed"], f"{r['delta_vs_default']:+.2f}",
                          r["model_calls"], f"{r['prompt_tokens']:,}"] for r in sim])
    return "\n".join(lines) + "\n"


__all__ = ["BUDGETS", "Baselines", "Case", "METHODS", "bench_single_linking", "bench_sizes",
           "bench_warehouse_linking", "failing_drafts", "gold_refs", "markdown", "measure", "model_sim_rows",
           "question_cases", "scoped_prompts"]
