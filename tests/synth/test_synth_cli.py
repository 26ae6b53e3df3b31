"""`sqlmend synth` on a few real Spider training questions."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from sqlmend.cli import app


def test_synth_command_writes_jsonl_and_distribution(tmp_path):
    out = tmp_path / "train.jsonl"
    result = CliRunner().invoke(app, ["synth", "--out", str(out), "--limit", "12", "--seed", "1",
                                      "--no-value-links"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sum(r["source"] == "gold" for r in rows) >= 10
    assert any(r["source"] == "rule" for r in rows)
    assert '"label:no_error"' in result.output and "wrote" in result.output


def test_synth_asillm_without_a_model_is_skipped_with_a_message(tmp_path, monkeypatch):
    from sqlmend.llm import config

    monkeypatch.setenv("SQLMEND_MODELS_CONFIG", str(tmp_path / "no-models.toml"))  # nothing configured
    monkeypatch.delenv("SQLMEND_MODEL", raising=False)
    config.set_default_config(None)
    preds = tmp_path / "preds.sql"
    preds.write_text("SELECT 1\n" * 7000)
    out = tmp_path / "train.jsonl"
    result = CliRunner().invoke(app, ["synth", "--out", str(out), "--limit", "3", "--no-value-links",
                                      "--asillm-predictions", str(preds)])
    assert result.exit_code == 0, result.output
    assert "AsiLLM labelling skipped" in result.output
