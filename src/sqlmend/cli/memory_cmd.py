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
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape

from sqlmend.bench.memory import ABLATIONS, bench_memory, build_all, history_cases, llm_config, split_for
from sqlmend.cli import bench_app
from sqlmend.cli.output import QUIET, print_table
from sqlmend.db import connect
from sqlmend.errors import SqlmendError
from sqlmend.memory.build import BuildReport, ConfirmedCorrection, build_memory
from sqlmend.memory.store import is_url, open_store, shown, store_root

memory_app = typer.Typer(help="MIRA's repair memory: build it from confirmed corrections, inspect it.",
                         no_args_is_help=True)
console = Console(stderr=True, soft_wrap=True)

def _build_error(db_id: str, error: SqlmendError) -> None:
    console.print(f"[red]{escape(f'{db_id}: {error}')}[/red]")


_STORE_HELP = ("store folder, or postgresql://... of a store shared by replicas (wins over --namespace, "
               "which then names the memory inside it)")


def _location(namespace: str, store: str | None) -> Path | str:
    """Where ``--namespace``/``--store`` put the memory: a folder, or a PostgreSQL URL as given."""
    return store if is_url(store) else store_root(namespace, store)


def _print_build(report: BuildReport, folder: Path | str) -> None:
    console.print(f"{report.corrections} corrections -> {report.items} items in {shown(folder)}")
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
    store: Optional[str] = typer.Option(None, help=_STORE_HELP),
    model: Optional[str] = typer.Option(None, help="'local' for the embedded models, or an llm config file"),
    no_decompose: bool = typer.Option(False, help="ablation: one item per correction"),
    adapt: bool = typer.Option(True, help="also fit the search's adaptation to this system from the history "
                                          "(a folder store: adaptation.json; `correct --memory-store` reads it)"),
    workers: int = typer.Option(2, help="evaluation worker processes"),
    quiet: bool = QUIET,
) -> None:
    """Build each database's repair memory from the history part of a split (MIRA §3.2), and fit the
    search's adaptation to the system from the same history (issue 28)."""
    from sqlmend.data.datasets import load_dataset
    from sqlmend.data.predictions import load_predictions

    ds = load_dataset(dataset)
    preds = load_predictions(pred, ds)
    sp = split_for(ds, split, fraction, seed)
    folder = _location(namespace, store)
    report = build_all(ds, history_cases(ds, preds, sp, workers, not quiet), folder, llm_config(model),
                       not no_decompose, progress=not quiet, on_error=_build_error, namespace=namespace)
    _print_build(report, folder)
    if adapt:
        _fit_adaptation(ds, preds, sp, pred.stem, folder, quiet, namespace)


def _fit_adaptation(ds, preds: dict[str, str], sp, name: str, folder: Path | str, quiet: bool,
                    namespace: str = "default") -> None:
    """Fit the search's adaptation on the history part and store it with the memory."""
    from sqlmend.search.history import fit_history
    from sqlmend.progress import bar as progress_bar
    from sqlmend.search import adaptation

    hist = [ds.task(q) for q in sp.history if ds.db_path(ds.task(q).db_id) is not None]
    with ds.databases() as conn, progress_bar(total=len(hist), desc="adaptation", disable=quiet) as bar:
        a = fit_history(name, hist, preds, conn, progress=bar.update)
    path = adaptation.save(a, folder, namespace)
    rules = ([f"the verifier's first candidate over a gap of {a.margin:.3f}"] if a.margin is not None else []) + \
        ([f"the chooser's best over P(right) {a.threshold:.3f}"] if a.threshold is not None else [])
    rule = (f"replaces by {' or '.join(rules)}, searching unflagged queries below {a.suspect_below:g}" if rules
            else "no decision gained on the history: it replaces nothing")
    console.print(f"adaptation {a.label}: {a.history['searched']} searched, {a.history['reachable']} with a right "
                  f"candidate; {rule}; {a.fit['total_seconds']} s -> {shown(path)}")


@memory_app.command("add")
def add_cmd(
    db: Path = typer.Option(..., exists=True, help="the database file"),
    db_id: Optional[str] = typer.Option(None, help="database id (default: the file's stem)"),
    question: str = typer.Option(..., help="the question"),
    wrong: str = typer.Option(..., help="the incorrect SQL"),
    corrected: str = typer.Option(..., help="the confirmed corrected SQL"),
    question_id: str = typer.Option("manual", help="an id for this correction"),
    namespace: str = typer.Option("default", help="store namespace"),
    store: Optional[str] = typer.Option(None, help=_STORE_HELP),
    model: Optional[str] = typer.Option(None, help="'local' or an llm config file for judge/recovery"),
) -> None:
    """Add one confirmed correction to a database's memory (§3.2)."""
    cfg = llm_config(model)
    db_id = db_id or db.stem
    folder = _location(namespace, store)
    with connect(db) as conn, open_store(folder, db_id, namespace=namespace) as st:
        report = build_memory(conn, db_id, [ConfirmedCorrection(question_id, question, wrong, corrected)], st,
                              cfg.resolve("judge") if cfg else None, cfg.resolve("embedder") if cfg else None,
                              recovery_backend=cfg.resolve("recovery") if cfg else None)
        for qid, stage, reason in st.rejections():
            if qid == question_id:
                console.print(f"no item from {stage}: {reason}")
        from sqlmend.search.history import refit_with
        from sqlmend.types import Task

        task = Task(question_id, db_id, question, wrong, gold=corrected, db=str(db))
        adapted = refit_with(folder, [task], lambda _db_id: conn, namespace)
        if adapted is not None:
            console.print(f"adaptation refitted: {adapted.label}, margin {adapted.margin}, "
                          f"threshold {adapted.threshold}")
    _print_build(report, folder)


@memory_app.command("show")
def show_cmd(
    db_id: str = typer.Argument(..., help="the database id"),
    namespace: str = typer.Option("default", help="store namespace"),
    store: Optional[str] = typer.Option(None, help=_STORE_HELP),
    as_json: bool = typer.Option(False, "--json", help="print the items as JSON"),
) -> None:
    """Show a database's memory items (contract, signature, local check, support) and rejections."""
    folder = _location(namespace, store)
    try:
        with open_store(folder, db_id, create=False, namespace=namespace) as st:
            items, rejections = st.items(), st.rejections()
    except SqlmendError as e:
        console.print(f"[red]{e}[/red] (build one with `sqlmend memory build` or `sqlmend memory add`)")
        raise typer.Exit(1) from e
    if as_json:
        typer.echo(json.dumps([i.to_dict() | {"vector": bool(i.vector)} for i in items], indent=1, default=str))
        return
    print_table(("id", "kind", "error type", "required behaviour", "local check", "keys", "source"),
                [(i.id, i.kind, i.error_type, i.contract.required_behavior, i.check.violation,
                  " ".join(i.keys[:4]), i.support.question_id) for i in items],
                title=f"{db_id}: {len(items)} items ({shown(folder)})")
    if rejections:
        typer.echo(f"{len(rejections)} corrections or groups gave no item, e.g.:")
        for qid, stage, reason in rejections[:10]:
            typer.echo(f"  {qid} [{stage}] {reason}")


def bench_memory_cmd(
    pred: list[Path] = typer.Option(..., exists=True, help="prediction file(s); repeat the option"),
    dataset: str = typer.Option("spider-dev", help="dataset name"),
    split: Optional[Path] = typer.Option(None, help="split JSON (created if absent)"),
    fraction: float = typer.Option(0.25, help="history share per database (MIRA §4.1)"),
    seed: int = typer.Option(0, help="split seed"),
    ablation: str = typer.Option("full", help=f"one of {', '.join(ABLATIONS)} (MIRA §4.4)"),
    model: Optional[str] = typer.Option(None, help="'local' for the embedded models; default: none"),
    workers: int = typer.Option(2, help="evaluation worker processes"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="write the results as JSON here"),
    databases: Optional[str] = typer.Option(None, help="comma-separated database ids: only their history "
                                                       "and test questions (a subset for slow models)"),
    quiet: bool = QUIET,
) -> None:
    """Repair memory on a split: items built, fixed / regressed / ΔEX on the test part, model usage.

    With a model, calls and tokens are also read from the llm call log (offline: the
    build's tagged calls; online: every call after the build - give the run its own
    log with $SQLMEND_LLM_LOG when others share the machine).
    """
    if ablation not in ABLATIONS:
        raise typer.BadParameter(f"--ablation must be one of {', '.join(ABLATIONS)}")
    dbs = [d.strip() for d in databases.split(",") if d.strip()] if databases else None
    rows = [bench_memory(p, dataset, split, fraction, seed, ablation, model, workers, dbs, progress=not quiet,
                         report_build=None if quiet else _print_build, on_error=_build_error) for p in pred]
    print_table(("predictions", "items", "test", "fixed", "regressed", "ΔEX pp", "EX before→after",
                 "online calls/q", "offline calls"),
                [(r["pred"], r["items"], r["test"], r["fixed"], r["regressed"], f"{r['delta_ex']:+.2f}",
                  f"{r['before_ex']:.2f}→{r['after_ex']:.2f}", r["online_per_query"]["calls"],
                  r["offline"]["chat"] + r["offline"]["embed"]) for r in rows],
                title=f"repair memory ({ablation}, model {model or 'none'})")
    if out is not None:
        out.write_text(json.dumps(rows, indent=1))


def bench_history_cmd(
    pred: list[Path] = typer.Option(..., exists=True, help="prediction file(s); repeat the option"),
    dataset: str = typer.Option("spider-dev", help="dataset name"),
    fraction: float = typer.Option(0.25, help="history share per database (MIRA §4.1)"),
    seed: int = typer.Option(0, help="split seed"),
    curve: str = typer.Option("0.1,0.25,0.5", help="history fractions of the learning curve ('' for none)"),
    workers: int = typer.Option(1, help="evaluation worker processes"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="write the results as JSON here"),
    cache: Optional[Path] = typer.Option(None, help="folder keeping each file's searches (written when absent, "
                                                    "read when present: decisions remade without searching)"),
    quiet: bool = QUIET,
) -> None:
    """A system's history adapts the search (issue 28): on the test part of the split, static+search as
    shipped, + memory items, + the adapted decision, all; the oracle; seconds to fit, ms online; a learning
    curve over history fractions."""
    from sqlmend.bench.history import bench_file, markdown
    from sqlmend.data.datasets import load_dataset
    from sqlmend.progress import bar as progress_bar

    ds = load_dataset(dataset)
    fractions = tuple(float(f) for f in curve.split(",") if f.strip())
    rows = []
    for p in pred:
        bars: list = []

        def progress(total: int, name: str = p.stem):
            bars.append(progress_bar(total=total, desc=name, disable=quiet))
            return bars[-1].update

        rows.append(bench_file(ds, p, fraction=fraction, seed=seed, workers=workers, curve=fractions,
                               progress=progress,
                               cache=cache / f"{p.stem}-{fraction:g}-{seed}.pkl" if cache else None))
        for b in bars:
            b.close()
        if out is not None:
            out.write_text(json.dumps(rows, indent=1))
    typer.echo(markdown(rows))


def register(app: typer.Typer) -> None:
    """Add ``sqlmend memory`` and ``sqlmend bench memory``."""
    app.add_typer(memory_app, name="memory")
    bench_app.command("memory")(bench_memory_cmd)
    bench_app.command("history")(bench_history_cmd)
