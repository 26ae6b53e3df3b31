"""``sqlmend serve`` (the HTTP service) and ``sqlmend bench serve`` (its load test)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from sqlmend.cli.correct_cmd import (_ALLOW_FUNCTION, _MODEL, _OPTION, _STAGES, _STRATEGY_HELP, _TIMEOUT, _config,
                                     with_memory)
from sqlmend.cli.output import REQUIRE_READ_ONLY
from sqlmend.pipeline import PipelineConfig

_STORE_HELP = ("repair memory: a folder, or postgresql://USER@HOST/DB for one store shared by replicas "
               "(schema migrated on first use; default: $SQLMEND_MEMORY_STORE, else the local folder)")

# options shared by serve and mcp (the pipeline of a server)
_STRATEGY = typer.Option("errorllm", help=_STRATEGY_HELP)
_MEMORY_STORE = typer.Option(None, "--memory-store", metavar="DIR|URL", help=_STORE_HELP)
_MEMORY_NAMESPACE = typer.Option(None, "--memory-namespace", help="which memory of the store")



def server_config(strategy: str, stages: str | None, model: list[str] | None, option: list[str] | None,
                  timeout: float, memory_store: str | None, memory_namespace: str | None,
                  allow_functions: list[str] | None = None, require_read_only_login: bool = False) -> PipelineConfig:
    """The pipeline configuration of a server's options (serve, mcp): one model call at a time."""
    return with_memory(_config(strategy, stages, model, 1, 1, timeout, option,
                               allow_functions=list(allow_functions or []),
                               require_read_only_login=require_read_only_login),
                       memory_store, memory_namespace)  # a URL stays a str: never a Path


def serve(
    host: str = typer.Option("127.0.0.1", help="address to bind"),
    port: int = typer.Option(8080, help="port"),
    db_root: str = typer.Option(None, help="folder of <db_id>/<db_id>.sqlite (default: Spider's)"),
    stages: str = _STAGES,
    strategy: str = _STRATEGY,
    model: list[str] = _MODEL,
    option: list[str] = _OPTION,
    memory_store: str = _MEMORY_STORE,
    memory_namespace: str = _MEMORY_NAMESPACE,
    allow_paths: bool = typer.Option(False, help="accept database paths/URLs in requests"),
    timeout: float = _TIMEOUT,
    token: str = typer.Option(None, envvar="SQLMEND_TOKEN", show_envvar=True,
                              help="bearer token required on every request but /health"),
    max_body: int = typer.Option(64 * 1024, help="largest request body in bytes (larger: 413)"),
    deadline: float = typer.Option(30.0, help="seconds a request may take (later: 504)"),
    max_concurrency: int = typer.Option(4, help="requests corrected at once"),
    max_queue: int = typer.Option(64, help="requests waiting beyond those; more: 503 + Retry-After"),
    workers: int = typer.Option(1, help="worker processes (each with its own pipeline and metrics)"),
    log: bool = typer.Option(True, "--log/--no-log", help="one JSON line per request on stderr"),
    allow_function: list[str] = _ALLOW_FUNCTION,
    require_read_only_login: bool = REQUIRE_READ_ONLY,
) -> None:
    """Serve POST /correct, POST /check, GET /health and GET /metrics over HTTP.

    A db_id is a plain name of the database root; anything else is a 400. With
    --token (or $SQLMEND_TOKEN) every request but /health needs the header
    'Authorization: Bearer TOKEN'. Replicas share one repair memory with
    --memory-store postgresql://... (docs/scale.md).

    Example: curl -s localhost:8080/correct -H 'content-type: application/json'
    -d '{"db_id": "concert_singer", "question": "...", "sql": "SELECT ..."}'

    Example (only read-only logins): sqlmend serve --db-root dbs/ --require-read-only-login
    """
    from sqlmend.errors import ConfigError
    from sqlmend.service.runner import serve as run
    from sqlmend.service.settings import ServiceSettings

    config = server_config(strategy, stages, model, option, timeout, memory_store, memory_namespace,
                           allow_function, require_read_only_login)
    try:
        settings = ServiceSettings(token=token or None, allow_paths=allow_paths, max_body_bytes=max_body,
                                   deadline=deadline, max_concurrency=max_concurrency, max_queue=max_queue,
                                   log_requests=log)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    try:
        run(config, settings, host=host, port=port, workers=workers, db_root=db_root)
    except ConfigError as exc:  # a login that may write, under --require-read-only-login
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def bench_serve(
    requests: int = typer.Option(200, help="requests to send (at most 20,000)"),
    concurrency: int = typer.Option(16, help="requests in flight at once"),
    replicas: int = typer.Option(1, help="separate `sqlmend serve` processes, requests round-robin"),
    stages: str = typer.Option("static,guard", help="pipeline stages of the replicas"),
    memory_store: str = typer.Option(None, "--memory-store", metavar="URL",
                                     help="postgresql://... shared by the replicas"),
    memory_items: int = typer.Option(0, help="memory items added concurrently during the run "
                                             "(needs a PostgreSQL --memory-store)"),
    pred: Path = typer.Option(None, help="prediction file the requests come from "
                                         "(default: the first shared Spider-dev file)"),
    max_seconds: float = typer.Option(120.0, help="stop sending after this long (at most 600)"),
    max_concurrency: int = typer.Option(None, help="--max-concurrency of each replica"),
    workers: int = typer.Option(1, help="--workers of each replica"),
    out: Path = typer.Option(None, "--out", "-o", help="write report.json and report.md here"),
    logs: Path = typer.Option(None, help="keep the replicas' JSON request logs in this folder"),
    data_root: str = typer.Option(None, help="folder holding spider/"),
) -> None:
    """Load-test `sqlmend serve` on loopback: req/s, p50/p95/p99 ms, errors, memory items lost.

    Example (one process): sqlmend bench serve --requests 200 --concurrency 16

    Example (3 replicas on one PostgreSQL memory, 100 items written meanwhile):
    sqlmend bench serve --replicas 3 --requests 2000 --concurrency 32
    --stages static,memory,guard --memory-store postgresql://... --memory-items 100
    """
    from sqlmend.stress.serve import load_bodies, run_load
    from sqlmend.paths import data_root as find

    pred = pred or sorted((find(data_root) / "predictions" / "spider-dev").glob("*.sql"))[0]
    serve_args = ["--workers", str(workers)]
    if max_concurrency:
        serve_args += ["--max-concurrency", str(max_concurrency)]
    if data_root:
        serve_args += ["--db-root", str(find(data_root) / "spider" / "database")]
    report = run_load(load_bodies(pred, data_root), requests=requests, concurrency=concurrency,
                      replicas=replicas, stages=stages, memory_store=memory_store, memory_items=memory_items,
                      max_seconds=max_seconds, serve_args=serve_args, log_dir=logs)
    table = report.markdown()
    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.json").write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
        (out / "report.md").write_text(table, encoding="utf-8")
    typer.echo(table)
    for sample in report.error_samples:
        typer.echo(f"error: {sample}", err=True)
    if report.errors or report.items_lost or report.items_duplicated:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``serve`` to the app and ``serve`` to ``sqlmend bench``."""
    from sqlmend.cli import bench_app

    app.command("serve")(serve)
    bench_app.command("serve")(bench_serve)
