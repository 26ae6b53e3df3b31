"""``sqlmend correct`` and ``sqlmend bench correct``: run the correction pipeline.

``sqlmend correct`` corrects a prediction file of a dataset (JSONL of
corrections with their traces, a resumable checkpoint, and the corrected file in
the input's format) or one query (``--db --question --sql``). ``sqlmend bench
correct`` runs several strategies on the same inputs and prints the paired
report: fixed / regressed / ΔEX, FR, CR, calls, tokens and seconds per query.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import typer

from sqlmend.errors import SqlmendError
from sqlmend.pipeline import STAGE_ORDER, STRATEGIES, PipelineConfig, correct_batch, summarize
from sqlmend.types import Correction, Task

_STAGES_HELP = f"comma-separated stages to run, of {', '.join(STAGE_ORDER)} (default: all for errorllm)"
_STRATEGY_HELP = f"refinement strategy: {' | '.join(STRATEGIES)}"
_MODEL_HELP = ("model assignment STAGE=ENDPOINT, repeatable; '*=local' puts the embedded SmolLM2 "
               "on every model stage (stages: localizer, refiner, baseline, detector, ...)")


_OPTION_HELP = "stage option STAGE.KEY=VALUE, repeatable (e.g. refine.max_tokens=96, refine.shots=0)"


def parse_options(specs: list[str] | None) -> dict[str, dict[str, Any]]:
    """Parse ``STAGE.KEY=VALUE`` flags into ``PipelineConfig.options`` (values read as JSON if they parse).

    Args:
        specs: the flags.

    Returns:
        ``{stage: {key: value}}``.

    >>> parse_options(["refine.max_tokens=96", "memory.store=/tmp/m"])
    {'refine': {'max_tokens': 96}, 'memory': {'store': '/tmp/m'}}
    """
    out: dict[str, dict[str, Any]] = {}
    for spec in specs or []:
        key, sep, raw = spec.partition("=")
        stage, dot, name = key.partition(".")
        if not (sep and dot and stage and name):
            raise typer.BadParameter(f"bad option {spec!r}: expected STAGE.KEY=VALUE")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        out.setdefault(stage, {})[name] = value
    return out


def _config(strategy: str, stages: str | None, models: list[str] | None, workers: int,
            model_concurrency: int, timeout: float, options: list[str] | None = None,
            **extra: Any) -> PipelineConfig:
    try:
        return PipelineConfig(options=parse_options(options),
            strategy=strategy,
            stages=[s.strip() for s in stages.split(",") if s.strip()] if stages else None,
            models=list(models or []), workers=workers, model_concurrency=model_concurrency,
            timeout=timeout, **extra)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


def with_memory(config: PipelineConfig, store: Path | None = None,
                namespace: str | None = None) -> PipelineConfig:
    """Point the memory stage at a repair memory (``options["memory"]``: ``store``, ``namespace``).

    Args:
        config: the run's configuration.
        store: the memory folder (``--memory-store``), or None.
        namespace: the memory namespace (``--memory-namespace``), or None.

    Returns:
        ``config`` itself when both are None, else a copy with the memory options set
        (over any ``--option memory.store=...``).
    """
    memory = {k: v for k, v in (("store", str(store) if store else None), ("namespace", namespace)) if v}
    if not memory:
        return config
    options = {**config.options, "memory": {**config.options.get("memory", {}), **memory}}
    return config.model_copy(update={"options": options})


def select(tasks: list[Task], limit: int | None = None, sample: int | None = None,
           seed: int = 0) -> list[Task]:
    """Choose the tasks to run: a seeded random sample (kept in dataset order) or the first N.

    Args:
        tasks: all tasks, in dataset order.
        limit: the first ``limit`` tasks.
        sample: a random sample of this size (wins over ``limit``).
        seed: the sample's seed.

    Returns:
        The chosen tasks, in dataset order.
    """
    if sample is not None and sample < len(tasks):
        keep = set(random.Random(seed).sample(range(len(tasks)), sample))
        return [t for i, t in enumerate(tasks) if i in keep]
    return tasks[:limit] if limit is not None else tasks


def _load(dataset: str, pred: Path, data_root: str | None) -> tuple[Any, dict[str, str]]:
    from sqlmend.bench.datasets import load_dataset
    from sqlmend.bench.predictions import load_predictions

    ds = load_dataset(dataset, data_root=data_root)
    return ds, load_predictions(pred, ds)


def run_file(ds: Any, preds: dict[str, str], tasks: list[Task], config: PipelineConfig,
             out: Path, fmt: str, progress: bool = True) -> tuple[list[Correction], Path]:
    """Correct ``tasks`` of a prediction file and write the outputs under ``out``.

    Writes ``corrections.jsonl`` (the checkpoint: a rerun resumes from it),
    ``summary.json`` and ``corrected.<ext>``: the whole prediction file in its own
    format, with the corrected SQL for the tasks run and the input elsewhere.

    Returns:
        The corrections and the path of the corrected prediction file.
    """
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    results = correct_batch(tasks, config, checkpoint=out / "corrections.jsonl", progress=progress,
                            db_root=ds.db_root)
    wall = time.perf_counter() - t0
    from sqlmend.bench.predictions import write_predictions

    corrected = dict(preds)
    corrected.update({c.question_id: c.sql for c in results})
    ext = {"spider": "sql", "bird": "json", "jsonl": "jsonl"}[fmt]
    target = out / f"corrected.{ext}"
    write_predictions(target, corrected, ds, fmt=fmt)
    summary = summarize(results).to_dict()
    summary["wall_seconds"] = round(wall, 2)
    summary["item_errors"] = {c.question_id: c.error for c in results if c.error}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return results, target


def _single(db: str, question: str, sql_text: str, evidence: str, config: PipelineConfig) -> None:
    from rich.console import Console

    from sqlmend.pipeline import Pipeline

    task = Task(question_id="q", db_id=Path(db).stem, question=question, sql=sql_text, evidence=evidence,
                db=db)
    c = Pipeline(config).correct(task)
    con = Console()
    for s in c.stages:
        con.print(f"[bold]{s.stage}[/] {s.status}: {s.note}  "
                  f"({len(s.findings)} findings, {s.calls} calls)")
        for f in s.findings:
            con.print(f"   {f.code} {f.error_type}: {f.message}")
    if c.error:
        con.print(f"[red]error:[/] {c.error}")
    con.print(("[green]corrected:[/] " if c.changed else "unchanged: ") + c.sql, soft_wrap=True)


def correct(
    dataset: str = typer.Option(None, help="dataset name (spider-dev, bird-dev, ...) or a task file"),
    pred: Path = typer.Option(None, help="prediction file to correct (Spider, BIRD or JSONL format)"),
    out: Path = typer.Option(None, help="output folder (corrections.jsonl, summary.json, corrected.*)"),
    stages: str = typer.Option(None, help=_STAGES_HELP),
    strategy: str = typer.Option("errorllm", help=_STRATEGY_HELP),
    model: list[str] = typer.Option(None, "--model", help=_MODEL_HELP),
    option: list[str] = typer.Option(None, "--option", help=_OPTION_HELP),
    db: str = typer.Option(None, help="single query: the database (path or URL)"),
    question: str = typer.Option(None, help="single query: the question"),
    sql: str = typer.Option(None, "--sql", help="single query: the SQL to check"),
    evidence: str = typer.Option("", help="single query: evidence (BIRD style)"),
    limit: int = typer.Option(None, help="correct only the first N tasks"),
    sample: int = typer.Option(None, help="correct a seeded random sample of N tasks"),
    seed: int = typer.Option(0, help="seed of --sample"),
    workers: int = typer.Option(4, help="tasks corrected in parallel"),
    model_concurrency: int = typer.Option(1, help="model calls in flight at once"),
    timeout: float = typer.Option(30.0, help="seconds per SQL execution"),
    data_root: str = typer.Option(None, help="folder holding spider/ (default: found automatically)"),
    memory_store: Path = typer.Option(None, "--memory-store", metavar="DIR",
                                      help="repair memory folder for the memory stage, as written by "
                                           "`sqlmend memory add/build --store` (wins over --memory-namespace; "
                                           "env SQLMEND_MEMORY_STORE)"),
    memory_namespace: str = typer.Option(None, "--memory-namespace", metavar="NAME",
                                         help="repair memory namespace under the cache folder (default "
                                              "'default'; env SQLMEND_MEMORY_NAMESPACE)"),
    quiet: bool = typer.Option(False, help="no progress bar"),
) -> None:
    """Correct the SQL of a prediction file, or one query.

    A rerun with the same --out resumes: finished tasks are read from
    corrections.jsonl and not run again. Per-item failures (missing database,
    model errors) are recorded in the JSONL and the batch goes on.

    Examples:

      sqlmend correct --dataset spider-dev --pred dev.sql --out runs/a --stages static,guard

      sqlmend correct --db concert_singer.sqlite --question "Oldest singer?" --sql "SELECT ..."
    """
    config = with_memory(_config(strategy, stages, model, workers, model_concurrency, timeout, option),
                         memory_store, memory_namespace)
    if sql is not None:
        if not db or question is None:
            raise typer.BadParameter("a single query needs --db, --question and --sql")
        try:
            _single(db, question, sql, evidence, config)
        except SqlmendError as exc:
            raise typer.BadParameter(str(exc)) from None
        return
    if not (dataset and pred and out):
        raise typer.BadParameter("give --dataset, --pred and --out (or --db, --question, --sql)")
    from sqlmend.bench.predictions import sniff_pred_format

    try:
        ds, preds = _load(dataset, pred, data_root)
        tasks = select(ds.with_sql(preds), limit, sample, seed)
        results, target = run_file(ds, preds, tasks, config, out, sniff_pred_format(pred),
                                   progress=not quiet)
    except SqlmendError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    s = summarize(results)
    typer.echo(f"{s.queries} tasks: {s.changed} changed, {s.errors} item errors, "
               f"{s.calls_per_query:.2f} calls/query, {s.seconds_per_query:.3f} s/query -> {target}")


# --- the paired benchmark ---------------------------------------------------


@dataclass
class StrategyRow:
    """One line of the paired report: one strategy on one prediction file."""

    pred: str
    strategy: str
    n: int
    before_ex: float
    after_ex: float
    fixed: int
    regressed: int
    delta_ex: float
    flagged: int
    fr: float  # fixed rate: fixed / flagged-and-wrong (ErrorLLM §4.3)
    cr: float  # corruption rate: regressed / flagged-and-correct
    changed: int
    calls_per_query: float
    tokens_per_query: float
    seconds_per_query: float
    item_errors: int
    suspects: int = 0  # questions whose gold SQL itself has a static finding
    regressed_clean: int = 0  # regressions among the other questions
    delta_ex_clean: float = 0.0  # ΔEX without the gold-suspect questions


def gold_suspects(ds: Any, tasks: list[Task], timeout: float = 30.0) -> list[str]:
    """Questions whose gold SQL has a static finding itself (the gold may share the defect).

    The shared data's README names such label noise (e.g. ``flight_2`` stores
    names with a trailing space the gold omits): a correction that finds the real
    rows is then scored wrong. These ids are reported apart, not dropped.

    Args:
        ds: the dataset (gold SQL and databases).
        tasks: the tasks of the run.
        timeout: seconds per SQL execution.

    Returns:
        The suspect question ids.
    """
    cfg = PipelineConfig(stages=["static"], timeout=timeout, workers=4)
    golds = [Task(question_id=t.question_id, db_id=t.db_id, question=t.question, sql=t.gold or "")
             for t in (ds.task(x.question_id) for x in tasks) if t.gold]
    return [c.question_id for c in correct_batch(golds, cfg, progress=False, db_root=ds.db_root)
            if c.findings]


def flagged(c: Correction) -> bool:
    """Whether a strategy acted on a task: found an error or proposed a rewrite."""
    from sqlmend import taxonomy

    known = set(taxonomy.ids())
    return any(f.error_type in known for f in c.findings) or any(s.candidate for s in c.stages)


def paired_row(pred: str, strategy: str, results: list[Correction], before: Any, after: Any,
               suspects: list[str] = ()) -> StrategyRow:
    """Pair the evaluations before/after one strategy and compute FR and CR.

    Args:
        pred: the prediction file's label.
        strategy: the strategy's name.
        results: its corrections.
        before: ``EvalReport`` of the original SQL (on the same tasks).
        after: ``EvalReport`` of the corrected SQL.
        suspects: gold-suspect question ids (see :func:`gold_suspects`).
    """
    from sqlmend.bench.compare import compare

    report = compare(before, after, suspects)
    paired = report.all
    scored = {r.question_id: r for r in before.results if r.scored}
    flags = [c for c in results if flagged(c) and c.question_id in scored]
    tp = [c for c in flags if not scored[c.question_id].correct]
    fp = [c for c in flags if scored[c.question_id].correct]
    fixed, regressed = set(paired.fixed), set(paired.regressed)
    s = summarize(results)
    return StrategyRow(
        pred=pred, strategy=strategy, n=paired.n, before_ex=round(paired.before_ex, 2),
        after_ex=round(paired.after_ex, 2), fixed=len(fixed), regressed=len(regressed),
        delta_ex=round(paired.delta_ex, 2), flagged=len(flags),
        fr=round(100.0 * sum(c.question_id in fixed for c in tp) / len(tp), 2) if tp else 0.0,
        cr=round(100.0 * sum(c.question_id in regressed for c in fp) / len(fp), 2) if fp else 0.0,
        changed=s.changed, calls_per_query=round(s.calls_per_query, 3),
        tokens_per_query=round(s.tokens_per_query, 1), seconds_per_query=round(s.seconds_per_query, 4),
        item_errors=s.errors, suspects=len(report.suspect_ids),
        regressed_clean=len(report.clean.regressed), delta_ex_clean=round(report.clean.delta_ex, 2))


def markdown(rows: list[StrategyRow]) -> str:
    """The paired report as a Markdown table."""
    head = ("| predictions | strategy | n | EX before | EX after | fixed | regressed | ΔEX | flagged "
            "| FR % | CR % | calls/q | tokens/q | s/q | gold-suspect | regressed w/o suspects "
            "| ΔEX w/o suspects |\n" + "|---" * 17 + "|\n")
    return head + "".join(
        f"| {r.pred} | {r.strategy} | {r.n} | {r.before_ex:.2f} | {r.after_ex:.2f} | {r.fixed} "
        f"| {r.regressed} | {r.delta_ex:+.2f} | {r.flagged} | {r.fr:.1f} | {r.cr:.1f} "
        f"| {r.calls_per_query:.2f} | {r.tokens_per_query:.0f} | {r.seconds_per_query:.3f} "
        f"| {r.suspects} | {r.regressed_clean} | {r.delta_ex_clean:+.2f} |\n"
        for r in rows)


def _default_preds(data_root: str | None) -> list[Path]:
    from sqlmend.paths import data_root as find

    return sorted((find(data_root) / "predictions" / "spider-dev").glob("*.sql"))


def bench_correct(
    dataset: str = typer.Option("spider-dev", help="dataset name or task file"),
    pred: list[Path] = typer.Option(None, help="prediction file(s); default: the five shared Spider-dev files"),
    strategies: str = typer.Option("errorllm", help=f"comma-separated, of {', '.join(STRATEGIES)}"),
    stages: str = typer.Option(None, help=_STAGES_HELP),
    model: list[str] = typer.Option(None, "--model", help=_MODEL_HELP),
    option: list[str] = typer.Option(None, "--option", help=_OPTION_HELP),
    out: Path = typer.Option(Path("runs/bench-correct"), help="output folder (resumable)"),
    sample: int = typer.Option(None, help="a seeded random sample of N tasks per file"),
    seed: int = typer.Option(0, help="seed of --sample"),
    workers: int = typer.Option(4, help="tasks corrected in parallel"),
    model_concurrency: int = typer.Option(1, help="model calls in flight at once"),
    timeout: float = typer.Option(30.0, help="seconds per SQL execution"),
    data_root: str = typer.Option(None, help="folder holding spider/"),
    quiet: bool = typer.Option(False, help="no progress bars"),
) -> None:
    """Paired report per strategy: fixed / regressed / ΔEX, FR, CR, calls, tokens, s per query.

    Every strategy corrects the same tasks; the original and corrected SQL are
    both executed against the gold. FR = fixed / (flagged and wrong before),
    CR = regressed / (flagged and correct before), as in ErrorLLM §4.3.
    Questions whose gold SQL has a static finding itself are counted apart too
    (gold-suspect). Writes report.json and report.md under --out.
    """
    from sqlmend.bench.datasets import Dataset
    from sqlmend.bench.evaluate import evaluate
    from sqlmend.bench.predictions import sniff_pred_format

    names = [s.strip() for s in strategies.split(",") if s.strip()]
    rows: list[StrategyRow] = []
    for path in pred or _default_preds(data_root):
        ds, preds = _load(dataset, path, data_root)
        tasks = select(ds.with_sql(preds), None, sample, seed)
        sub = Dataset(name=f"{ds.name}-{len(tasks)}-s{seed}" if sample else ds.name,
                      tasks=[ds.task(t.question_id) for t in tasks], db_root=ds.db_root, source=ds.source)
        before = evaluate(sub, {t.question_id: t.sql for t in tasks}, timeout=timeout,
                          label=path.stem, progress=not quiet)
        suspects = gold_suspects(ds, tasks, timeout)
        for strategy in names:
            config = _config(strategy, stages, model, workers, model_concurrency, timeout, option)
            results, _ = run_file(ds, preds, tasks, config, out / path.stem / strategy,
                                  sniff_pred_format(path), progress=not quiet)
            after = evaluate(sub, {c.question_id: c.sql for c in results}, timeout=timeout,
                             label=f"{path.stem}+{strategy}", progress=not quiet)
            rows.append(paired_row(path.stem, strategy, results, before, after, suspects))
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps([asdict(r) for r in rows], indent=2) + "\n",
                                     encoding="utf-8")
    table = markdown(rows)
    (out / "report.md").write_text(table, encoding="utf-8")
    typer.echo(table)


def serve(
    host: str = typer.Option("127.0.0.1", help="address to bind"),
    port: int = typer.Option(8080, help="port"),
    db_root: str = typer.Option(None, help="folder of <db_id>/<db_id>.sqlite (default: Spider's)"),
    stages: str = typer.Option(None, help=_STAGES_HELP),
    strategy: str = typer.Option("errorllm", help=_STRATEGY_HELP),
    model: list[str] = typer.Option(None, "--model", help=_MODEL_HELP),
    allow_paths: bool = typer.Option(False, help="accept database paths/URLs in requests"),
    timeout: float = typer.Option(30.0, help="seconds per SQL execution"),
) -> None:
    """Serve POST /correct and POST /check (JSON) over HTTP.

    Example: curl -s localhost:8080/correct -H 'content-type: application/json'
    -d '{"db_id": "concert_singer", "question": "...", "sql": "SELECT ..."}'
    """
    import uvicorn

    from sqlmend.service import create_app

    from sqlmend.paths import data_root

    config = _config(strategy, stages, model, 1, 1, timeout)
    root = db_root or str(data_root() / "spider" / "database")
    uvicorn.run(create_app(config, allow_paths=allow_paths, db_root=root), host=host, port=port,
                log_level="info")


def register(app: typer.Typer) -> None:
    """Add ``correct`` and ``serve`` to the app, and ``correct`` to ``sqlmend bench``."""
    from sqlmend.cli import bench_app

    app.command("correct")(correct)
    app.command("serve")(serve)
    bench_app.command("correct")(bench_correct)
