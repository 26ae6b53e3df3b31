"""``sqlmend correct``, ``sqlmend merge`` and ``sqlmend bench correct`` (``serve``: serve_cmd.py).

Option parsing and printing only: the runs are :mod:`sqlmend.batch`
(a prediction file, its shards and their merge) and :mod:`sqlmend.bench.correct`
(the paired report of several strategies).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from sqlmend.cli.output import QUIET, REQUIRE_READ_ONLY
from sqlmend.errors import ConfigError, SqlmendError
from sqlmend.pipeline import STAGE_ORDER, STRATEGIES, PipelineConfig, summarize

_STAGES_HELP = f"comma-separated stages to run, of {', '.join(STAGE_ORDER)} (default for errorllm: all but detector, which is opt-in)"
_STRATEGY_HELP = f"refinement strategy: {' | '.join(STRATEGIES)}"
_MODEL_HELP = ("model assignment STAGE=ENDPOINT, repeatable; '*=local' puts the embedded SmolLM2 "
               "on every model stage (stages: localizer, refiner, baseline, detector, ...)")


_OPTION_HELP = "stage option STAGE.KEY=VALUE, repeatable (e.g. refine.max_tokens=96, refine.shots=0)"

# options shared by correct, bench correct and serve
_STAGES = typer.Option(None, help=_STAGES_HELP)
_MODEL = typer.Option(None, "--model", help=_MODEL_HELP)
_OPTION = typer.Option(None, "--option", help=_OPTION_HELP)
_SEED = typer.Option(0, help="seed of --sample")
_WORKERS = typer.Option(4, help="tasks corrected in parallel")
_CONCURRENCY = typer.Option(1, help="model calls in flight at once")
_TIMEOUT = typer.Option(30.0, help="seconds per SQL execution")
_ALLOW_FUNCTION = typer.Option(
    None, "--allow-function", metavar="NAME",
    help="a function queries may call beside the dialect's read-only list (your own pure function; NAME or "
         "SCHEMA.NAME), repeatable: any other function the engine has is refused (docs/pipeline.md, "
         "'Read-only, whatever the login')")


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


def with_memory(config: PipelineConfig, store: str | Path | None = None,
                namespace: str | None = None) -> PipelineConfig:
    """Point the memory stage at a repair memory (``options["memory"]``: ``store``, ``namespace``).

    Args:
        config: the run's configuration.
        store: the memory folder or ``postgresql://`` URL (``--memory-store``), or None.
        namespace: the memory namespace (``--memory-namespace``), or None.

    Returns:
        ``config`` itself when both are None, else a copy with the memory options set
        (over any ``--option memory.store=...``).
    """
    memory = {k: v for k, v in (("store", str(store) if store else None), ("namespace", namespace)) if v}
    if not memory:
        return config
    options = {**config.options, "memory": {**config.options.get("memory", {}), **memory}}
    from sqlmend.memory.store import is_url
    from sqlmend.search import adaptation

    # the search's adaptation to the system, fitted with the memory (`memory build`); a PostgreSQL store
    # is asked when the search starts (none there: the shipped decision alone)
    if store and is_url(store):
        options["search"] = {"adaptation": str(store), "adaptation_namespace": namespace or "default",
                             **config.options.get("search", {})}
    elif store and (Path(store) / adaptation.FILENAME).is_file():
        options["search"] = {"adaptation": str(store), **config.options.get("search", {})}
    return config.model_copy(update={"options": options})


#: Rich styles of the labels of a correction's explanation (:func:`sqlmend.api.explain_lines`).
_STYLES = {"stage": "bold", "suggested": "yellow", "error": "red", "corrected": "green"}


def print_explanation(lines: Any) -> None:
    """Print ``(kind, label, rest)`` lines of :func:`sqlmend.api.explain_lines`, labels styled."""
    from rich.console import Console
    from rich.markup import escape

    con = Console(soft_wrap=True)
    for kind, label, rest in lines:
        rest = rest.encode("utf-8", "backslashreplace").decode("utf-8")  # a lone surrogate shown as \udcff
        styled = f"[{_STYLES[kind]}]{escape(label)}[/]" if label and kind in _STYLES else escape(label)
        con.print(styled + escape(rest), soft_wrap=True)


def with_risk(config: PipelineConfig, risk: float | None, history: Path | None) -> PipelineConfig:
    """Point the consensus stage at the risk rule (``--risk ALPHA --risk-history FILE``).

    Returns:
        ``config`` itself when ``risk`` is None.

    Raises:
        typer.BadParameter: ``--risk`` without ``--risk-history`` (the rule needs a labelled history), or
            a history file that cannot be read.
    """
    if risk is None:
        if history is not None:
            raise typer.BadParameter("--risk-history calibrates --risk ALPHA: give both")
        return config
    if history is None:
        raise typer.BadParameter("--risk ALPHA needs --risk-history FILE: the labelled history its threshold is "
                                 "calibrated on (written by `sqlmend bench alternatives --history-out FILE`)")
    options = {**config.options, "consensus": {**config.options.get("consensus", {}), "risk": risk,
                                               "history": str(history)}}
    try:
        return PipelineConfig(**{**config.model_dump(), "options": options})
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


def answer_one(db: str, question: str, sql_text: str, evidence: str, config: PipelineConfig,
               check: bool = False, alternatives: list[str] | None = None) -> tuple[Any, str]:
    """One query through :meth:`sqlmend.api.Correctors.answer`, the path of every door (the
    service's too): the correction (a missing database is the item's error) and the database's
    dialect (``sqlite`` when it cannot be opened).

    Raises:
        ConfigError: the database's login may do more than read, under ``require_read_only_login``:
            refused before any correction (the command's error, not an item's).
    """
    from sqlmend.api import Correctors, database_name
    from sqlmend.pipeline import Pipeline
    from sqlmend.types import Task

    doors = Correctors(Pipeline(config), size=1)
    try:
        task = Task(question_id="cli", db_id=database_name(db), question=question, sql=sql_text,
                    evidence=evidence or "", db=db, alternatives=list(alternatives or []))
        try:
            doors.get(db, task.db_id)  # opened first: a refused login ends the command
        except ConfigError:
            raise
        except SqlmendError:
            pass  # a database that cannot be opened: the item's error, as the answer gives it
        correction = doors.answer(task, check=check)
        try:
            dialect = doors.get(db, task.db_id).dialect  # kept open by the answer
        except SqlmendError:
            dialect = "sqlite"
        return correction, dialect
    finally:
        doors.close()


def _single(db: str, question: str, sql_text: str, evidence: str, config: PipelineConfig,
            as_json: bool, alternatives: list[str]) -> None:
    from sqlmend.api import explain_lines
    from sqlmend.types import json_text

    try:
        correction, dialect = answer_one(db, question, sql_text, evidence, config, alternatives=alternatives)
    except ConfigError as exc:  # a login that may write, under --require-read-only-login
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    if as_json:
        typer.echo(json_text(correction.to_dict()))
    else:
        print_explanation(explain_lines(correction, dialect))
    if correction.error:
        raise typer.Exit(1)


def correct(
    dataset: str = typer.Option(None, help="dataset name (spider-dev, bird-dev, ...) or a task file"),
    pred: Path = typer.Option(None, help="prediction file to correct (Spider, BIRD or JSONL format)"),
    out: Path = typer.Option(None, "--out", "-o", help="output folder (corrections.jsonl, summary.json, corrected.*)"),
    stages: str = _STAGES,
    strategy: str = typer.Option("errorllm", help=_STRATEGY_HELP),
    model: list[str] = _MODEL,
    option: list[str] = _OPTION,
    db: str = typer.Option(None, help="single query: the database (path or URL)"),
    question: str = typer.Option(None, help="single query: the question"),
    sql: str = typer.Option(None, "--sql", help="single query: the SQL to check"),
    evidence: str = typer.Option("", help="single query: evidence (BIRD style)"),
    alt: list[Path] = typer.Option(None, "--alt", metavar="FILE",
                                   help="a prediction file of other answers to the same questions (another "
                                        "system, prompt or sample), aligned with --pred, any format --pred takes; "
                                        "repeatable: the consensus stage groups each task's alternatives by result "
                                        "(docs/pipeline.md 'Second opinions')"),
    alternative: list[str] = typer.Option(None, "--alternative", metavar="SQL",
                                          help="single query: another answer to the question; repeatable"),
    risk: float = typer.Option(None, "--risk", metavar="ALPHA",
                               help="the consensus stage's risk rule instead of its strict one: replace when the "
                                    "alternatives' score passes a threshold that keeps the expected share of correct "
                                    "queries broken below ALPHA (e.g. 0.01), calibrated on --risk-history"),
    risk_history: Path = typer.Option(None, "--risk-history", metavar="FILE",
                                      help="the labelled history --risk is calibrated on (`sqlmend bench alternatives "
                                           "--history-out FILE`)"),
    limit: int = typer.Option(None, help="correct only the first N tasks"),
    sample: int = typer.Option(None, help="correct a seeded random sample of N tasks"),
    seed: int = _SEED,
    workers: int = _WORKERS,
    model_concurrency: int = _CONCURRENCY,
    timeout: float = _TIMEOUT,
    data_root: str = typer.Option(None, help="folder holding spider/ (default: found automatically)"),
    db_root: str = typer.Option(None, help="folder of <db_id>/<db_id>.sqlite for the dataset's databases "
                                           "(a task file's, BIRD's, ...; default: the dataset's own)"),
    shard: str = typer.Option(None, metavar="K/N",
                              help="correct only shard K of N of the chosen tasks (split by question id); "
                                   "join the N run folders with `sqlmend merge`"),
    engine: str = typer.Option("local", metavar="local|ray|ray://HOST:PORT",
                               help="where the tasks run: local threads, or --workers Ray actors (ray: "
                                    "RAY_ADDRESS's cluster, else a local Ray; needs the ray extra of "
                                    "sqlmend); same checkpoint and output (docs/scale.md)"),
    memory_store: str = typer.Option(None, "--memory-store", metavar="DIR|URL",
                                     help="repair memory for the memory stage: a folder as written by "
                                          "`sqlmend memory add/build --store`, or a postgresql:// URL shared "
                                          "by replicas (wins over --memory-namespace; env SQLMEND_MEMORY_STORE)"),
    memory_namespace: str = typer.Option(None, "--memory-namespace", metavar="NAME",
                                         help="repair memory namespace under the cache folder (default "
                                              "'default'; env SQLMEND_MEMORY_NAMESPACE)"),
    as_json: bool = typer.Option(False, "--json", help="single query: print the correction as JSON (the "
                                                        "service's /correct answer)"),
    model_gate: Optional[bool] = typer.Option(
        None, "--model-gate/--no-model-gate",
        help="a model's rewrite is kept only when the query it replaces fails to run, a strict rule proves it "
             "wrong, or the trained verifier prefers the rewrite by its calibrated margin (default: on for "
             "errorllm, off for the baselines; docs/pipeline.md 'The model gate')"),
    allow_function: list[str] = _ALLOW_FUNCTION,
    require_read_only_login: bool = REQUIRE_READ_ONLY,
    quiet: bool = QUIET,
) -> None:
    """Correct the SQL of a prediction file, or one query.

    A rerun with the same --out resumes: finished tasks are read from
    corrections.jsonl and not run again. Per-item failures (missing database,
    model errors) are recorded in the JSONL and the batch goes on. A single
    query's failure (missing database, empty SQL) is printed as its error, exit 1.

    Examples:

      sqlmend correct --dataset spider-dev --pred dev.sql --out runs/a --stages static,guard

      sqlmend correct --db concert_singer.sqlite --question "Oldest singer?" --sql "SELECT ..."

      sqlmend correct --dataset tasks.jsonl --db-root dbs/ --pred preds.jsonl --out runs/b --shard 1/4

      sqlmend correct --dataset spider-dev --pred dev.sql --out runs/c --engine ray --workers 8

      sqlmend correct --dataset spider-dev --pred a.sql --alt b.sql --alt c.sql --out runs/d

      sqlmend correct --db concert_singer.sqlite --question "..." --sql "..." --alternative "SELECT ..."
    """
    config = with_risk(with_memory(_config(strategy, stages, model, workers, model_concurrency, timeout, option,
                                           model_gate=model_gate, allow_functions=list(allow_function or []),
                                           require_read_only_login=require_read_only_login),
                                   memory_store, memory_namespace), risk, risk_history)
    if sql is not None:
        if not db or question is None:
            raise typer.BadParameter("a single query needs --db, --question and --sql")
        if alt:
            raise typer.BadParameter("--alt names prediction files; a single query takes --alternative SQL")
        try:
            _single(db, question, sql, evidence, config, as_json, list(alternative or []))
        except SqlmendError as exc:
            raise typer.BadParameter(str(exc)) from None
        return
    if not (dataset and pred and out):
        raise typer.BadParameter("give --dataset, --pred and --out (or --db, --question, --sql)")
    if alternative:
        raise typer.BadParameter("--alternative is for a single query; a prediction file takes --alt FILE")
    from sqlmend.batch import correct_file, parse_shard

    try:
        results, target = correct_file(dataset, pred, out, config, data_root=data_root, db_root=db_root,
                                       limit=limit, sample=sample, seed=seed, shard=parse_shard(shard),
                                       progress=not quiet, engine=engine, alternatives=list(alt or []))
    except SqlmendError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    s = summarize(results)
    typer.echo(f"{s.queries} tasks: {s.changed} changed, {s.errors} item errors, "
               f"{s.calls_per_query:.2f} calls/query, {s.executed / max(1, s.queries):.2f} queries run/item, "
               f"{s.seconds_per_query:.3f} s/query -> {target}")


def merge(
    run_dirs: list[Path] = typer.Argument(..., metavar="RUN_DIRS...",
                                         help="the --out folders of `sqlmend correct --shard K/N`, all N"),
    out: Path = typer.Option(..., "--out", "-o", help="the merged run folder"),
    pred: Path = typer.Option(None, help="the prediction file on this machine (default: the path the "
                                         "shards recorded; its bytes must be the same)"),
    data_root: str = typer.Option(None, help="folder holding spider/ on this machine"),
) -> None:
    """Merge the shards of a `sqlmend correct --shard K/N` run into one run folder.

    Writes corrections.jsonl (dataset order), summary.json and corrected.* exactly as
    the unsharded run would (wall and per-stage seconds aside). Refuses folders that are
    not the complete shards 1..N of the same run.

    Example: sqlmend merge runs/s1 runs/s2 runs/s3 --out runs/all
    """
    from sqlmend.batch import merge_runs

    try:
        merged = merge_runs(run_dirs, out, pred=pred, data_root=data_root)
    except SqlmendError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    s = summarize(merged.corrections)
    typer.echo(f"{merged.shards} shards, {s.queries} tasks: {s.changed} changed, {s.errors} item errors "
               f"-> {merged.target}")


def bench_correct(
    dataset: str = typer.Option("spider-dev", help="dataset name or task file"),
    pred: list[Path] = typer.Option(None, help="prediction file(s); default: the five shared Spider-dev files"),
    strategies: str = typer.Option("errorllm", help=f"comma-separated, of {', '.join(STRATEGIES)}"),
    stages: str = _STAGES,
    model: list[str] = _MODEL,
    option: list[str] = _OPTION,
    out: Path = typer.Option(Path("runs/bench-correct"), "--out", "-o", help="output folder (resumable)"),
    sample: int = typer.Option(None, help="a seeded random sample of N tasks per file"),
    seed: int = _SEED,
    workers: int = _WORKERS,
    model_concurrency: int = _CONCURRENCY,
    timeout: float = _TIMEOUT,
    data_root: str = typer.Option(None, help="folder holding spider/"),
    quiet: bool = QUIET,
) -> None:
    """Paired report per strategy: fixed / regressed / ΔEX, FR, CR, calls, tokens, s per query.

    Every strategy corrects the same tasks; the original and corrected SQL are
    both executed against the gold. FR = fixed / (flagged and wrong before),
    CR = regressed / (flagged and correct before), as in ErrorLLM §4.3.
    Questions whose gold SQL has a static finding itself are counted apart too
    (gold-suspect). Writes report.json and report.md under --out.
    """
    from sqlmend.bench.correct import bench_correct as run, markdown
    from sqlmend.data.predictions import shared_prediction_files

    names = [s.strip() for s in strategies.split(",") if s.strip()]
    configs = {s: _config(s, stages, model, workers, model_concurrency, timeout, option) for s in names}
    try:
        rows = run(dataset, pred or shared_prediction_files(data_root=data_root), names, configs.__getitem__,
                   out, sample=sample, seed=seed, timeout=timeout, data_root=data_root, progress=not quiet)
    except SqlmendError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(markdown(rows))


def bench_determinism(
    dataset: str = typer.Option("spider-dev", help="dataset name or task file"),
    pred: list[Path] = typer.Option(None, help="prediction file(s); default: the five shared Spider-dev files"),
    stages: str = _STAGES,
    option: list[str] = _OPTION,
    out: Path = typer.Option(Path("runs/bench-determinism"), "--out", "-o", help="output folder (started afresh)"),
    limit: int = typer.Option(None, help="the first N tasks of each file only (after --skip)"),
    skip: int = typer.Option(0, help="the first N tasks of each file left out (a slice: --skip 88 --limit 32)"),
    workers: int = typer.Option(4, help="workers of the loaded run"),
    hogs: int = typer.Option(2, help="CPU-bound processes beside the loaded run"),
    timeout: float = _TIMEOUT,
    data_root: str = typer.Option(None, help="folder holding spider/"),
    quiet: bool = QUIET,
) -> None:
    """Same input, same output: each file corrected with 1 worker, then with --workers beside --hogs
    busy processes; the two corrected files must be byte-identical (exit 1 when one is not).

    Also pairs the first run with the uncorrected file (fixed / regressed / ΔEX).
    Writes report.json and report.md under --out.

    Example: sqlmend bench determinism --limit 200 --workers 4 --hogs 2
    """
    from sqlmend.bench.determinism import bench_determinism as run, markdown
    from sqlmend.data.predictions import shared_prediction_files

    config = _config("errorllm", stages, None, 1, 1, timeout, option)
    try:
        rows = run(dataset, pred or shared_prediction_files(data_root=data_root), config, out, workers=workers,
                   hogs=hogs, limit=limit, skip=skip, timeout=timeout, data_root=data_root,
                   progress=not quiet)
    except SqlmendError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(markdown(rows, workers, hogs))
    if not all(r.identical for r in rows):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``correct`` and ``merge`` to the app, and ``correct`` to ``sqlmend bench``
    (``serve``: :mod:`sqlmend.cli.serve_cmd`)."""
    from sqlmend.cli import bench_app

    app.command("correct")(correct)
    app.command("merge")(merge)
    bench_app.command("correct")(bench_correct)
    bench_app.command("determinism")(bench_determinism)
