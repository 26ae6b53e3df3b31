"""``sqlmend memory ...`` and ``sqlmend bench memory``: MIRA's repair memory from the command line.

* ``memory build``: build each database's memory from the history part of a
  split (the wrong predictions there, with the gold as confirmed correction);
* ``memory add``: add one confirmed correction;
* ``memory show``: list a database's items (the four parts) and rejections;
* ``bench memory``: build from the history part, correct the test part with
  the memory stage, report fixed / regressed / ΔEX and model usage (MIRA §4).
"""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from tqdm import tqdm

from sqlmend.cli import bench_app
from sqlmend.db import connect
from sqlmend.errors import SqlmendError
from sqlmend.memory.build import BuildReport, Correction, build_memory
from sqlmend.memory.split import Split, load_split, save_split, split_tasks
from sqlmend.memory.store import MemoryStore, store_root

memory_app = typer.Typer(help="MIRA's repair memory: build it from confirmed corrections, inspect it.",
                         no_args_is_help=True)
console = Console(stderr=True)

ABLATIONS = {"full": {}, "no-decompose": {"decompose": False}, "no-verify": {"verify": False},
             "no-local": {"local": False}}


def _llm(model: str | None) -> Any:
    if not model:
        return None
    from sqlmend import llm

    return llm.LLMConfig.local() if model == "local" else llm.LLMConfig.load(model)


def _split(dataset: Any, path: Path | None, fraction: float, seed: int) -> Split:
    if path is not None and path.exists():
        return load_split(path)
    split = split_tasks(dataset.tasks, fraction=fraction, seed=seed)
    if path is not None:
        save_split(split, path)
    return split


def _history(dataset: Any, preds: dict[str, str], split: Split, workers: int) -> dict[str, list[Correction]]:
    """The confirmed corrections of the history part: wrong predictions with their gold."""
    from sqlmend.bench.datasets import Dataset
    from sqlmend.bench.evaluate import evaluate

    hist = Dataset(dataset.name, [dataset.task(q) for q in split.history], db_root=dataset.db_root)
    report = evaluate(hist, preds, workers=workers, progress=True, label="history")
    cases: dict[str, list[Correction]] = defaultdict(list)
    for r in report.results:
        if r.scored and not r.correct and dataset.db_path(r.db_id) is not None:
            t = dataset.task(r.question_id)
            cases[t.db_id].append(Correction(t.question_id, t.question, preds[t.question_id], t.gold or ""))
    return cases


def build_all(dataset: Any, cases: dict[str, list[Correction]], folder: Path, cfg: Any = None,
              decompose: bool = True, fresh: bool = False) -> BuildReport:
    """Rebuild the memory of every database of ``cases`` in ``folder``.

    Args:
        dataset: the dataset (its database paths).
        cases: the historical corrections per database.
        folder: the store folder.
        cfg: an llm config (judge, recovery, embedder); None: mechanical items only.
        decompose: False: the "w/o repair-unit decomposition" ablation.
        fresh: True empties the whole folder first; False clears only the stores
            of the databases in ``cases`` (other databases' memories stay).

    Returns:
        The summed build report.
    """
    if fresh:
        shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    total = BuildReport()
    judge = cfg.resolve("judge") if cfg else None
    recovery = cfg.resolve("recovery") if cfg else None
    embedder = cfg.resolve("embedder") if cfg else None
    for db_id in tqdm(sorted(cases), desc="memory build", unit="db"):
        try:
            with connect(dataset.db_path(db_id)) as db, MemoryStore(folder, db_id) as store:
                store.clear()
                total.add(build_memory(db, db_id, cases[db_id], store, judge, embedder, decompose,
                                       recovery_backend=recovery))
        except SqlmendError as e:
            console.print(f"[red]{db_id}: {e}[/red]")
    return total


def _print_build(report: BuildReport, folder: Path) -> None:
    console.print(f"{report.corrections} corrections -> {report.items} items in {folder}")
    console.print(f"  items by kind: {dict(report.by_kind)}; recovery: {dict(report.recovered)}")
    console.print(f"  rejected by stage: {dict(report.rejected)}; offline model calls: "
                  f"{report.usage.chat} chat + {report.usage.embed} embed, tokens "
                  f"{report.usage.tokens_in}/{report.usage.tokens_out}")


@memory_app.command("build")
def build_cmd(
    dataset: str = typer.Option("spider-dev", help="dataset name or task file"),
    pred: Path = typer.Option(..., exists=True, help="predictions of an upstream system"),
    split: Optional[Path] = typer.Option(None, help="split JSON (created with --fraction/--seed if absent)"),
    fraction: float = typer.Option(0.25, help="history share per database (MIRA §4.1)"),
    seed: int = typer.Option(0, help="split seed"),
    namespace: str = typer.Option("default", help="store namespace ('default' is the one `sqlmend correct "
                                                   "--stages memory` reads; $SQLMEND_MEMORY_NAMESPACE changes that)"),
    store: Optional[Path] = typer.Option(None, help="store folder (wins over --namespace)"),
    model: Optional[str] = typer.Option(None, help="'local' for the embedded models, or an llm config file"),
    no_decompose: bool = typer.Option(False, help="ablation: one item per correction"),
    workers: int = typer.Option(2, help="evaluation worker processes"),
) -> None:
    """Build each database's repair memory from the history part of a split (MIRA §3.2)."""
    from sqlmend.bench.datasets import load_dataset
    from sqlmend.bench.predictions import load_predictions

    ds = load_dataset(dataset)
    preds = load_predictions(pred, ds)
    sp = _split(ds, split, fraction, seed)
    folder = store_root(namespace, store)
    report = build_all(ds, _history(ds, preds, sp, workers), folder, _llm(model), not no_decompose)
    _print_build(report, folder)


@memory_app.command("add")
def add_cmd(
    db: Path = typer.Option(..., exists=True, help="the database file"),
    db_id: Optional[str] = typer.Option(None, help="database id (default: the file's stem)"),
    question: str = typer.Option(..., help="the question"),
    wrong: str = typer.Option(..., help="the incorrect SQL"),
    corrected: str = typer.Option(..., help="the confirmed corrected SQL"),
    question_id: str = typer.Option("manual", help="an id for this correction"),
    namespace: str = typer.Option("default", help="store namespace"),
    store: Optional[Path] = typer.Option(None, help="store folder (wins over --namespace)"),
    model: Optional[str] = typer.Option(None, help="'local' or an llm config file for judge/recovery"),
) -> None:
    """Add one confirmed correction to a database's memory (§3.2)."""
    cfg = _llm(model)
    db_id = db_id or db.stem
    folder = store_root(namespace, store)
    with connect(db) as conn, MemoryStore(folder, db_id) as st:
        report = build_memory(conn, db_id, [Correction(question_id, question, wrong, corrected)], st,
                              cfg.resolve("judge") if cfg else None, cfg.resolve("embedder") if cfg else None,
                              recovery_backend=cfg.resolve("recovery") if cfg else None)
        for qid, stage, reason in st.rejections():
            if qid == question_id:
                console.print(f"no item from {stage}: {reason}")
    _print_build(report, folder)


@memory_app.command("show")
def show_cmd(
    db_id: str = typer.Argument(..., help="the database id"),
    namespace: str = typer.Option("default", help="store namespace"),
    store: Optional[Path] = typer.Option(None, help="store folder (wins over --namespace)"),
    as_json: bool = typer.Option(False, "--json", help="print the items as JSON"),
) -> None:
    """Show a database's memory items (contract, signature, local check, support) and rejections."""
    folder = store_root(namespace, store)
    try:
        with MemoryStore(folder, db_id, create=False) as st:
            items, rejections = st.items(), st.rejections()
    except SqlmendError as e:
        console.print(f"[red]{e}[/red] (build one with `sqlmend memory build` or `sqlmend memory add`)")
        raise typer.Exit(1) from e
    if as_json:
        typer.echo(json.dumps([i.to_dict() | {"vector": bool(i.vector)} for i in items], indent=1, default=str))
        return
    table = Table(title=f"{db_id}: {len(items)} items ({folder})")
    for col in ("id", "kind", "error type", "required behaviour", "local check", "keys", "source"):
        table.add_column(col, overflow="fold")
    for i in items:
        table.add_row(i.id, i.kind, i.error_type, i.contract.required_behavior, i.check.violation,
                      " ".join(i.keys[:4]), i.support.question_id)
    Console().print(table)
    if rejections:
        Console().print(f"{len(rejections)} corrections or groups gave no item, e.g.:")
        for qid, stage, reason in rejections[:10]:
            Console().print(escape(f"  {qid} [{stage}] {reason}"))


def _log_usage(since: float, tag: str | None = None) -> dict[str, int]:
    """Calls, cache hits, errors and tokens in the llm call log since ``since`` (all stages)."""
    from sqlmend.llm import CallLog

    rows = CallLog().summary(tag=tag, since=since)
    return {k: int(sum(r.get(k) or 0 for r in rows)) for k in ("calls", "cache_hits", "errors", "tokens_in",
                                                                "tokens_out")} | \
        {"by_stage": {r["stage"]: int(r["calls"]) for r in rows}}


def bench_one(pred: Path, dataset: str, split_path: Path | None, fraction: float, seed: int,
              ablation: str, model: str | None, workers: int, databases: list[str] | None = None) -> dict[str, Any]:
    """Build memory from the history part, correct the test part, pair the evaluations (MIRA §4).

    Args:
        pred: the prediction file.
        dataset: the dataset name.
        split_path: the split file (created if absent).
        fraction: history share per database.
        seed: split seed.
        ablation: a key of :data:`ABLATIONS`.
        model: None (mechanical), "local" or an llm config file.
        workers: evaluation worker processes.
        databases: only these databases (history and test); None: all.

    Returns:
        The JSON-able result: items, paired report, offline and online usage
        (counted by the stage, and read from the llm call log).
    """
    import time

    from sqlmend import llm

    from sqlmend.bench.compare import compare
    from sqlmend.bench.datasets import Dataset, load_dataset
    from sqlmend.bench.evaluate import evaluate
    from sqlmend.bench.predictions import load_predictions
    from sqlmend.pipeline import PipelineConfig, correct_batch

    ds = load_dataset(dataset)
    preds = load_predictions(pred, ds)
    sp = _split(ds, split_path, fraction, seed)
    opts = ABLATIONS[ablation]
    cfg = _llm(model)
    if databases:
        keep = set(databases)
        sp = Split([q for q in sp.history if ds.task(q).db_id in keep], [q for q in sp.test if ds.task(q).db_id in keep],
                   sp.fraction, sp.seed)
    folder = store_root(f"bench-{pred.stem}-{ablation}-{model or 'nomodel'}")
    t0 = time.time()
    with llm.tagged(f"memory-bench-offline-{t0}"):
        built = build_all(ds, _history(ds, preds, sp, workers), folder, cfg, opts.get("decompose", True), fresh=True)
    offline_log = _log_usage(t0, f"memory-bench-offline-{t0}") if cfg else {}
    _print_build(built, folder)
    test_ids = [q for q in sp.test if ds.db_path(ds.task(q).db_id) is not None]
    tasks = [t for t in ds.with_sql(preds) if t.question_id in set(test_ids)]
    config = PipelineConfig(stages=["memory", "guard"], workers=2,
                            options={"memory": {"store": str(folder), "verify": opts.get("verify", True),
                                                "local": opts.get("local", True)}})
    t1 = time.time()
    corrections = correct_batch(tasks, config, progress=True, resolve=(cfg.resolve if cfg else lambda s: None),
                                db_root=ds.db_root)
    online_log = _log_usage(t1) if cfg else {}
    test = Dataset(ds.name, [ds.task(q) for q in test_ids], db_root=ds.db_root)
    before = evaluate(test, preds, workers=workers, label=pred.stem)
    after = evaluate(test, {c.question_id: c.sql for c in corrections}, workers=workers, label="memory")
    paired = compare(before, after)
    mem = [s for c in corrections for s in c.stages if s.stage == "memory"]
    hows = defaultdict(int)
    for s in mem:
        if s.verdict is not None and s.verdict.accepted:
            hows[s.detail.get("how", "?")] += 1
    n = len(tasks) or 1
    return {"pred": pred.name, "ablation": ablation, "model": model or "none", "items": built.items,
            "items_by_kind": dict(built.by_kind), "history_corrections": built.corrections,
            "rejected": dict(built.rejected), "test": len(tasks),
            "fixed": len(paired.all.fixed), "regressed": len(paired.all.regressed),
            "changed": len(paired.all.changed), "before_ex": round(paired.all.before_ex, 2),
            "after_ex": round(paired.all.after_ex, 2), "delta_ex": round(paired.all.delta_ex, 2),
            "accepted_by": dict(hows),
            "offline": {"chat": built.usage.chat, "embed": built.usage.embed,
                        "tokens_in": built.usage.tokens_in, "tokens_out": built.usage.tokens_out},
            "online_per_query": {"calls": round(sum(s.calls for s in mem) / n, 3),
                                 "tokens_in": round(sum(s.tokens_in for s in mem) / n, 1),
                                 "tokens_out": round(sum(s.tokens_out for s in mem) / n, 1)},
            "call_log": {"offline": offline_log, "online": online_log,
                         "online_calls_per_query": round(online_log.get("calls", 0) / n, 3),
                         "online_tokens_per_query": round((online_log.get("tokens_in", 0) +
                                                           online_log.get("tokens_out", 0)) / n, 1)},
            "databases": sorted({ds.task(q).db_id for q in test_ids}),
            "fixed_ids": paired.all.fixed, "regressed_ids": paired.all.regressed}


def bench_memory_cmd(
    pred: list[Path] = typer.Option(..., exists=True, help="prediction file(s); repeat the option"),
    dataset: str = typer.Option("spider-dev", help="dataset name"),
    split: Optional[Path] = typer.Option(None, help="split JSON (created if absent)"),
    fraction: float = typer.Option(0.25, help="history share per database (MIRA §4.1)"),
    seed: int = typer.Option(0, help="split seed"),
    ablation: str = typer.Option("full", help=f"one of {', '.join(ABLATIONS)} (MIRA §4.4)"),
    model: Optional[str] = typer.Option(None, help="'local' for the embedded models; default: none"),
    workers: int = typer.Option(2, help="evaluation worker processes"),
    out: Optional[Path] = typer.Option(None, help="write the results as JSON here"),
    databases: Optional[str] = typer.Option(None, help="comma-separated database ids: only their history "
                                                       "and test questions (a subset for slow models)"),
) -> None:
    """Repair memory on a split: items built, fixed / regressed / ΔEX on the test part, model usage.

    With a model, calls and tokens are also read from the llm call log (offline: the
    build's tagged calls; online: every call after the build - give the run its own
    log with $SQLMEND_LLM_LOG when others share the machine).
    """
    if ablation not in ABLATIONS:
        raise typer.BadParameter(f"--ablation must be one of {', '.join(ABLATIONS)}")
    dbs = [d.strip() for d in databases.split(",") if d.strip()] if databases else None
    rows = [bench_one(p, dataset, split, fraction, seed, ablation, model, workers, dbs) for p in pred]
    table = Table(title=f"repair memory ({ablation}, model {model or 'none'})")
    for col in ("predictions", "items", "test", "fixed", "regressed", "ΔEX pp", "EX before→after",
                "online calls/q", "offline calls"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["pred"], str(r["items"]), str(r["test"]), str(r["fixed"]), str(r["regressed"]),
                      f"{r['delta_ex']:+.2f}", f"{r['before_ex']:.2f}→{r['after_ex']:.2f}",
                      str(r["online_per_query"]["calls"]), str(r["offline"]["chat"] + r["offline"]["embed"]))
    Console().print(table)
    if out is not None:
        out.write_text(json.dumps(rows, indent=1))


def register(app: typer.Typer) -> None:
    """Add ``sqlmend memory`` and ``sqlmend bench memory``."""
    app.add_typer(memory_app, name="memory")
    bench_app.command("memory")(bench_memory_cmd)
