"""``sqlmend models``, ``sqlmend serve-model`` and ``sqlmend bench llm``."""

from __future__ import annotations

from typing import Optional

import typer

from sqlmend.cli.output import QUIET

MODEL_HELP = "Assign an endpoint to a stage, STAGE=ENDPOINT ('*=local': the embedded models everywhere)."
CONFIG_HELP = "The models config file (TOML); default $SQLMEND_MODELS_CONFIG or ~/.config/sqlmend/models.toml."


def _config(config: Optional[str], model: list[str]):
    from sqlmend.llm import LLMConfig

    cfg = LLMConfig.load(config)
    return cfg.with_overrides(model) if model else cfg


def _check(cfg, name: str) -> str:
    """Call one endpoint: ``"ok ..."`` or ``"FAILED ..."`` (a missing optional package named with its extra)."""
    from sqlmend.errors import SqlmendError

    try:
        return f"ok {cfg.backend(name).check()}"
    except SqlmendError as exc:
        return f"FAILED {exc}"
    except ImportError as exc:  # torch, transformers, sentence-transformers: the models extra
        return (f"FAILED needs the models extra (missing Python module {exc.name or exc}): "
                "pip install 'sqlmend[models]' (torch CPU first, see README)")


def register(app: typer.Typer) -> None:
    """Add the model commands to the ``sqlmend`` app.

    Args:
        app: the root typer app.
    """
    from sqlmend.cli import bench_app

    @app.command("models")
    def models(
        check: bool = typer.Option(False, "--check", help="Call every endpoint once and report "
                                   "whether it answers (the embedded models run offline)."),
        endpoint: list[str] = typer.Option([], "--endpoint", "-e", help="Only these endpoints."),
        config: Optional[str] = typer.Option(None, "--config", help=CONFIG_HELP),
        model: list[str] = typer.Option([], "--model", "-m", help=MODEL_HELP),
    ) -> None:
        """List the model endpoints and which stage uses which; --check calls them."""
        from sqlmend.cli.output import print_table
        from sqlmend.errors import SqlmendError
        from sqlmend.llm.config import STAGES, default_model

        try:
            cfg = _config(config, model)
        except SqlmendError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2)
        typer.echo(f"models config: {cfg.source}")
        print_table(("stage", "endpoint"),
                    [(stage, cfg.endpoint_for(stage) or "none (stage skipped)")
                     for stage in sorted(set(STAGES) | set(cfg.stages) - {"default"}) + ["default"]],
                    title="stages")
        rows, failed = [], 0
        for name in endpoint or sorted(cfg.endpoints):
            spec = cfg.endpoints.get(name)
            if spec is None:
                typer.echo(f"unknown endpoint {name!r}", err=True)
                failed += 1
                continue
            where = spec.get("base_url") or spec.get("cassette") or spec.get("path") or \
                spec.get("description", "")
            row = [name, spec["kind"], str(spec.get("model") or default_model(spec["kind"])), str(where)]
            if check:
                outcome = _check(cfg, name)
                failed += not outcome.startswith("ok")
                row.append(outcome)
            rows.append(row)
        print_table(("endpoint", "kind", "model", "where") + (("check",) if check else ()), rows,
                    title="endpoints")
        if failed:
            raise typer.Exit(1)

    @app.command("serve-model")
    def serve_model(
        chat: str = typer.Option("local-smollm2", "--chat", help="Endpoint answering chat completions ('none': no chat)."),
        embed: str = typer.Option("local-minilm", "--embed", help="Endpoint answering embeddings ('none': no embeddings)."),
        host: str = typer.Option("127.0.0.1", help="Address to bind."),
        port: int = typer.Option(8000, help="Port to listen on."),
        config: Optional[str] = typer.Option(None, "--config", help=CONFIG_HELP),
    ) -> None:
        """Serve local models over the OpenAI protocol (/v1/chat/completions, /v1/embeddings)."""
        import uvicorn

        from sqlmend.llm.server import create_app

        cfg = _config(config, [])
        app_ = create_app(None if chat == "none" else cfg.backend(chat),
                          None if embed == "none" else cfg.backend(embed))
        typer.echo(f"serving {chat} / {embed} on http://{host}:{port}/v1")
        uvicorn.run(app_, host=host, port=port, log_level="info")

    @bench_app.command("llm")
    def bench_llm(
        chat: str = typer.Option("local-smollm2", "--chat", help="Chat endpoint to time."),
        embed: str = typer.Option("local-minilm", "--embed", help="Embedding endpoint to time."),
        tokens: int = typer.Option(64, help="Tokens generated per run."),
        runs: int = typer.Option(3, help="Measured generation runs (median reported)."),
        texts: int = typer.Option(512, help="Spider dev questions embedded."),
        calls: int = typer.Option(200, help="Cache-hit calls timed."),
        data_root: Optional[str] = typer.Option(None, help="Benchmark data folder (holds spider/)."),
        config: Optional[str] = typer.Option(None, "--config", help=CONFIG_HELP),
        quiet: bool = QUIET,
    ) -> None:
        """Generation speed, first-token latency, embedding throughput, cache-hit overhead."""
        from rich.console import Console

        from sqlmend.bench.llm_speed import bench_llm as run
        from sqlmend.progress import bar as progress_bar

        console = Console(soft_wrap=True)
        cfg = _config(config, [])
        with progress_bar(total=3, desc="bench llm", unit="step", disable=quiet, leave=False) as bar:
            started: list[str] = []

            def step(name: str) -> None:  # the start of a step: the one before it is done
                if started:
                    bar.update(1)
                started.append(name)
                bar.set_description(name)

            r = run(cfg, chat, embed, tokens=tokens, runs=runs, texts=texts, calls=calls, data_root=data_root,
                    step=step)
            bar.update(1 if started else 0)  # the last step is done too
        c, e, h = r["chat"], r["embed"], r["cache"]
        console.print(f"{chat}: first token {c['first_token_s'] * 1000:.0f} ms "
                      f"(prompt {c['prompt_tokens']} tokens), {c['tokens_per_s']:.1f} tokens/s "
                      f"({c['tokens_out']} tokens, median of {runs})")
        console.print(f"{embed}: {e['texts_per_s']:.0f} texts/s ({e['texts']} Spider dev questions "
                      f"in {e['seconds']:.2f}s, dim {e['dim']})")
        console.print(f"cache hit: {h['hit_ms']:.2f} ms per call (mean of {h['calls']}; "
                      f"the real call took {h['miss_s']:.2f}s)")

