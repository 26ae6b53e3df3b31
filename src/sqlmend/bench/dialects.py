"""``sqlmend bench dialects``: gold queries written as users, agents and models write them (another
dialect's spelling, a literal in another form than the column stores, a model's raw answer:
:mod:`sqlmend.synth.dialects`), corrected by the default pipeline, on SQLite and on PostgreSQL.

Each case is a variant and the query it means (its *reference*). A case whose variant returns the
reference's rows as written is *unbroken* (sqlmend must keep it so); the others are *broken*, and
their correction is:

* **restored**: it returns the reference's rows and drops no clause the reference has (no WHERE,
  join, GROUP BY, HAVING, ORDER BY, set operation, row limit or subquery fewer, no table fewer);
* **failing**: it does not run (refused, or an engine error): still visibly wrong;
* **wrong rows**: it runs and returns other rows, as written (a literal form the engine takes) or
  rewritten; *clause dropped* counts a right answer for a wrong reason apart.

``raw write`` cases (a fence holding the gold and a DELETE) must stay refused: they are reported
apart and count in no rate.

With ``measure=True`` the static rules that act on these errors (:data:`MEASURED`) are also run
alone on every reference and variant: a flag counts for a rule when its own fix, applied alone,
returns the reference's rows (on a broken variant) or keeps them (on a correct query). That is the
precision :func:`precision_record` writes for them (``--write-precision``, Spider train only): the
five prediction files never exercise these rules, so ``sqlmend bench static`` measures nothing
for them.
"""

from __future__ import annotations

import datetime as _dt
import random
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from sqlmend import rules
from sqlmend import sql as sqlmod
from sqlmend.bench.engines import Runner, engine_targets, same_rows
from sqlmend.data.sampling import seeded_sample
from sqlmend.db import connect
from sqlmend.errors import SqlmendError
from sqlmend.rules import engine
from sqlmend.sql.foreign import clause_counts
from sqlmend.synth.dialects import KINDS, variants
from sqlmend.types import Task

#: The rules this benchmark measures (their precision file entries come from it).
MEASURED = ("EX04", "CD02", "VL10", "VL11", "VL12", "VL13")
#: Kinds reported apart (must stay refused), in no rate.
REFUSED_KINDS = ("raw write",)
#: What is counted per kind.
COUNTS = ("cases", "reference_fails", "suspect", "unbroken", "unbroken_kept", "restored", "failing",
          "wrong_as_written", "wrong_rewritten", "clause_dropped", "refused")


@dataclass
class Case:
    """One variant of one gold on one database."""

    family: str
    kind: str
    question_id: str
    db_id: str
    question: str
    reference: str
    sql: str


@dataclass
class DialectReport:
    """The counts per kind on one engine, and the rules' measurements."""

    engine: str
    dataset: str
    date: str
    questions: int
    per_kind: int
    seed: int
    kinds: dict[str, dict[str, int]] = field(default_factory=dict)
    examples: list[dict[str, str]] = field(default_factory=list)  # the first wrong rows and failures
    measured: dict[str, dict[str, int]] = field(default_factory=dict)

    def family(self, name: str) -> dict[str, int]:
        """The counts of one family (its kinds summed; ``raw write`` left out)."""
        total: Counter = Counter()
        for kind in KINDS[name]:
            if kind not in REFUSED_KINDS:
                total.update(self.kinds.get(kind, {}))
        return {c: total.get(c, 0) for c in COUNTS}

    def total(self) -> dict[str, int]:
        total: Counter = Counter()
        for name in KINDS:
            total.update(self.family(name))
        return {c: total.get(c, 0) for c in COUNTS}


def _gold_for(gold: str, dialect: str, schema: Any) -> str | None:
    if dialect == "sqlite":
        return gold
    try:
        return sqlmod.transpile(gold, read="sqlite", write=dialect, schema=schema)
    except SqlmendError:
        return None


def make_cases(dataset: Any, targets: dict[str, str], dialect: str, questions: int | None, per_kind: int | None,
               seed: int = 0) -> list[Case]:
    """The cases of a seeded sample of ``questions`` golds, at most ``per_kind`` of each kind (seeded).

    Args:
        dataset: a dataset with golds.
        targets: ``{db_id: path or URL}`` of the databases to use (their dialect is ``dialect``).
        dialect: the databases' dialect; golds are transpiled from SQLite to it.
        questions: golds drawn (None: all).
        per_kind: cases kept per kind (None: all).
        seed: the seed of the sample and of each gold's variants.
    """
    tasks = seeded_sample([t for t in dataset.tasks if t.db_id in targets and t.gold], questions, seed)
    by_kind: dict[str, list[Case]] = {}
    opened: dict[str, Any] = {}
    try:
        for task in tasks:
            db = opened.get(task.db_id) or opened.setdefault(task.db_id, connect(targets[task.db_id]))
            gold = _gold_for(task.gold, dialect, db.schema() if dialect == "sqlite" else _sqlite_schema(
                dataset, task.db_id))
            if gold is None:
                continue
            for v in variants(gold, db, random.Random(f"{seed}:{task.question_id}"), dialect):
                by_kind.setdefault(v.kind, []).append(Case(v.family, v.kind, task.question_id, task.db_id,
                                                           task.question, v.reference, v.sql))
    finally:
        for db in opened.values():
            db.close()
    out: list[Case] = []
    for family in KINDS.values():
        for kind in family:
            out += seeded_sample(by_kind.get(kind, []), per_kind, seed)
    return out


_SCHEMAS: dict[tuple[str, str], Any] = {}


def _sqlite_schema(dataset: Any, db_id: str) -> Any:
    key = (str(dataset.db_root), db_id)
    if key not in _SCHEMAS:
        with connect(str(dataset.db_path(db_id))) as db:
            _SCHEMAS[key] = db.schema()
    return _SCHEMAS[key]


def _same_text(a: str, b: str) -> bool:
    """The same query up to spaces and letter case (rows of a LIMIT over ties may differ run to run)."""
    return " ".join(a.split()).casefold().rstrip(";") == " ".join(b.split()).casefold().rstrip(";")


def _dropped(reference: str, correction: str, dialect: str) -> bool:
    """Whether the correction has fewer clauses of some kind, or fewer tables, than the reference."""
    try:
        ref, got = sqlmod.parse(reference, dialect), sqlmod.parse(correction, dialect)
    except SqlmendError:
        return True
    if +(clause_counts(ref) - clause_counts(got)):
        return True
    tables = {t.name.lower() for t in ref.find_all(sqlmod.ast.Table)}
    return not tables <= {t.name.lower() for t in got.find_all(sqlmod.ast.Table)}


def _measure(db: Any, text: str, question: str, reference_rows: list, correct: bool, run: Runner,
             target: str, timeout: float, tally: dict[str, dict[str, int]]) -> None:
    """Each measured rule's own fix on ``text``: does it give (or keep) the reference's rows?"""
    try:
        findings = rules.check(db, text, question, codes=list(MEASURED), timeout=timeout)
    except SqlmendError:
        return
    for f in findings:
        t = tally.setdefault(f.code, Counter())
        t["flagged_clean" if correct else "flagged_wrong"] += 1
        if not f.fixes:
            continue
        try:
            fixed = engine.apply(text, f.fixes, dialect=db.dialect)
        except SqlmendError:
            continue
        rows, _ = run.rows(target, fixed)
        if rows is not None and same_rows(rows, reference_rows):
            t["kept_clean" if correct else "right_fix"] += 1


def bench_dialects(dataset: Any, engine_name: str = "sqlite", questions: int | None = 300, per_kind: int | None = 60,
                   seed: int = 0, workers: int = 1, timeout: float = 10.0, measure: bool = False,
                   progress: bool = False, echo: Callable[[str], None] = lambda line: None) -> DialectReport:
    """Make the cases on one engine, correct them with the default pipeline and count the outcomes.

    Args:
        dataset: Spider (train to develop, dev to report).
        engine_name: ``sqlite`` (the dataset's files) or ``postgres`` (copies in a throw-away server).
        questions: golds drawn (a seeded sample).
        per_kind: cases kept per kind.
        seed: the seed of the sample and the variants.
        workers: cases corrected at once.
        timeout: seconds per query.
        measure: also run the measured rules alone (:data:`MEASURED`) on every case.
        progress: show the correction's progress bar.
        echo: progress lines.
    """
    from sqlmend.pipeline import PipelineConfig, correct_batch

    dialect = sqlmod.dialects.resolve(engine_name)
    files = {t.db_id: dataset.db_path(t.db_id) for t in dataset.tasks if dataset.db_path(t.db_id) is not None}
    report = DialectReport(engine=engine_name, dataset=dataset.name, date=_dt.date.today().isoformat(),
                           questions=questions or 0, per_kind=per_kind or 0, seed=seed)
    if engine_name == "sqlite":
        chosen = {t.db_id for t in seeded_sample([t for t in dataset.tasks if t.db_id in files and t.gold],
                                                 questions, seed)}
        ctx = _plain({k: str(v) for k, v in files.items() if k in chosen})
    else:
        chosen = {t.db_id for t in seeded_sample([t for t in dataset.tasks if t.db_id in files and t.gold],
                                                 questions, seed)}
        ctx = engine_targets(engine_name, {k: v for k, v in files.items() if k in chosen}, echo=echo)
    with ctx as targets:
        cases = make_cases(dataset, targets, dialect, questions, per_kind, seed)
        echo(f"{engine_name}: {len(cases)} cases from {len(chosen)} databases")
        run = Runner(timeout)
        refs: list[list | None] = []
        written_ok: list[bool] = []
        for case in cases:
            rows, _ = run.rows(targets[case.db_id], case.reference)
            refs.append(rows)
            got, _ = run.rows(targets[case.db_id], case.sql) if rows is not None else (None, "")
            written_ok.append(got is not None and rows is not None and same_rows(got, rows))
        suspect = _suspects(cases, refs, targets, timeout)
        todo = [i for i, r in enumerate(refs) if r is not None and not suspect[i]]
        tasks = [Task(question_id=str(i), db_id=cases[i].db_id, question=cases[i].question, sql=cases[i].sql,
                      db=str(targets[cases[i].db_id])) for i in todo]
        config = PipelineConfig(workers=workers, timeout=timeout)
        corrections = {int(c.question_id): c for c in correct_batch(tasks, config, progress=progress)}
        for i, case in enumerate(cases):
            counts = report.kinds.setdefault(case.kind, {c: 0 for c in COUNTS})
            counts["cases"] += 1
            if refs[i] is None:
                counts["reference_fails"] += 1
                continue
            if suspect[i]:
                counts["suspect"] += 1
                continue
            c = corrections[i]
            outcome = _outcome(case, refs[i], written_ok[i], c, run, targets[case.db_id], dialect)
            counts[outcome] += 1
            if outcome in ("wrong_rewritten", "wrong_as_written", "failing", "clause_dropped") and len(
                    report.examples) < 40:
                report.examples.append({"kind": case.kind, "outcome": outcome, "question_id": case.question_id,
                                        "reference": case.reference, "sql": case.sql, "correction": c.sql,
                                        "findings": ",".join(f.code for f in c.findings)})
        if measure:
            tally: dict[str, dict[str, int]] = {}
            opened: dict[str, Any] = {}
            try:
                for i in todo:
                    case = cases[i]
                    db = opened.get(case.db_id) or opened.setdefault(case.db_id, connect(targets[case.db_id]))
                    _measure(db, case.reference, case.question, refs[i], True, run, targets[case.db_id], timeout,
                             tally)
                    if case.kind not in REFUSED_KINDS:
                        _measure(db, case.sql, case.question, refs[i], written_ok[i], run, targets[case.db_id],
                                 timeout, tally)
            finally:
                for db in opened.values():
                    db.close()
            report.measured = {code: dict(t) for code, t in sorted(tally.items())}
        run.close()
    return report


def _suspects(cases: list[Case], refs: list, targets: dict[str, str], timeout: float) -> list[bool]:
    """Whether each case's reference has a strict static finding with a fix: sqlmend would rewrite the
    reference itself (a gold joining off its foreign key, say), so the case measures the gold, not
    the variant. Such cases are counted apart (``suspect``), as the gold-suspect questions elsewhere."""
    seen: dict[tuple[str, str], bool] = {}
    opened: dict[str, Any] = {}
    out = []
    try:
        for case, rows in zip(cases, refs):
            key = (case.db_id, case.reference)
            if rows is not None and key not in seen:
                db = opened.get(case.db_id) or opened.setdefault(case.db_id, connect(targets[case.db_id]))
                try:
                    found = rules.check(db, case.reference, case.question, timeout=timeout)
                except SqlmendError:
                    found = []
                seen[key] = any(f.severity == "strict" and f.fixes for f in found)
            out.append(rows is not None and seen[key])
    finally:
        for db in opened.values():
            db.close()
    return out


def _outcome(case: Case, reference_rows: list, written_ok: bool, correction: Any, run: Runner, target: str,
             dialect: str) -> str:
    if case.kind in REFUSED_KINDS:
        refused = any(f.code == "EX03" for f in correction.findings)
        rows, _ = run.rows(target, correction.sql)
        return "refused" if refused and rows is None else "wrong_rewritten"
    rows, _ = run.rows(target, correction.sql)
    if written_ok:
        return "unbroken_kept" if rows is not None and same_rows(rows, reference_rows) else "unbroken"
    if rows is None:
        return "failing"
    if same_rows(rows, reference_rows) or _same_text(correction.sql, case.reference):
        return "clause_dropped" if _dropped(case.reference, correction.sql, dialect) else "restored"
    return "wrong_as_written" if correction.sql == case.sql else "wrong_rewritten"


class _plain:
    """The SQLite files themselves as targets (a context manager like :func:`engine_targets`)."""

    def __init__(self, files: dict[str, str]):
        self.files = files

    def __enter__(self) -> dict[str, str]:
        return self.files

    def __exit__(self, *exc: object) -> None:
        return None


def precision_record(report: DialectReport, command: str) -> dict[str, dict[str, Any]]:
    """The measured rules' entries of the precision file (:func:`sqlmend.rules.measured`): detection
    precision (a flag on a correct query counts against it) and the act precision strictness reads,
    here the share of flags whose own fix returns (or keeps) the reference's rows."""
    out = {}
    for code in MEASURED:
        t = report.measured.get(code, {})
        clean, wrong = t.get("flagged_clean", 0), t.get("flagged_wrong", 0)
        flagged = clean + wrong
        good = t.get("kept_clean", 0) + t.get("right_fix", 0)
        out[code] = {"precision_clean": round(wrong / flagged, 4) if flagged else None,
                     "precision_all": round(wrong / flagged, 4) if flagged else None,
                     "act_precision_clean": round(good / flagged, 4) if flagged else None,
                     "act_precision_all": round(good / flagged, 4) if flagged else None,
                     "flagged_clean": flagged, "flagged_all": flagged,
                     "measured_by": "bench dialects", "dataset": report.dataset, "date": report.date,
                     "command": command}
    return out


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:.1f}" if d else "-"


def markdown(report: DialectReport) -> str:
    """The report as a Markdown table: a row per kind, a row per family, the total."""
    lines = [f"{report.engine}, {report.dataset} ({report.date}): {report.questions} golds drawn, at most "
             f"{report.per_kind} cases a kind, seed {report.seed}", "",
             "| kind | cases | broken | restored | failing | wrong rows (as written / rewritten) | right rows, "
             "clause dropped | restored % | unbroken kept |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]

    def row(name: str, c: dict[str, int]) -> str:
        runs = c["cases"] - c["reference_fails"] - c["suspect"]
        return (f"| {name} | {runs} | {_broken(c)} | {c['restored']} | {c['failing']} | "
                f"{c['wrong_as_written']} / {c['wrong_rewritten']} | {c['clause_dropped']} | "
                f"{_pct(c['restored'], _broken(c))} | {c['unbroken_kept']} of {c['unbroken_kept'] + c['unbroken']} |")

    for family, kinds in KINDS.items():
        for kind in kinds:
            if kind in report.kinds and kind not in REFUSED_KINDS:
                lines.append(row(kind, report.kinds[kind]))
        lines.append(row(f"**{family}**", report.family(family)))
    total = report.total()
    lines.append(row("**all**", total))
    runs = total["cases"] - total["reference_fails"] - total["suspect"]
    wrong = total["wrong_as_written"] + total["wrong_rewritten"]
    lines.append("")
    lines.append(f"Wrong rows: {wrong} of {runs} cases ({_pct(wrong, runs)}%), {total['wrong_rewritten']} of them "
                 f"rewritten by sqlmend ({_pct(total['wrong_rewritten'], runs)}%).")
    for kind in REFUSED_KINDS:
        c = report.kinds.get(kind)
        if c:
            lines.append(f"{kind}: {c['refused']} of {c['cases'] - c['reference_fails'] - c['suspect']} refused (EX03), "
                         "as they must be.")
    lines.append(f"Left out: {total['reference_fails']} cases whose reference fails on {report.engine}, "
                 f"{total['suspect']} whose reference a strict rule rewrites (a suspect gold).")
    return "\n".join(lines)


def _broken(c: dict[str, int]) -> int:
    return c["restored"] + c["failing"] + c["wrong_as_written"] + c["wrong_rewritten"] + c["clause_dropped"]


def write(report: DialectReport, out: Path) -> None:
    """The report as JSON."""
    import json

    out.write_text(json.dumps(asdict(report), indent=1, default=str))


__all__ = ["COUNTS", "MEASURED", "Case", "DialectReport", "bench_dialects", "make_cases", "markdown",
           "precision_record", "write"]
