"""Same input, same output: the default correction does not depend on how busy the machine is."""

from __future__ import annotations

import json

import pytest

from sqlmend.bench.determinism import bench_determinism
from sqlmend.pipeline import PipelineConfig

pytestmark = pytest.mark.slow


def test_one_worker_idle_and_four_beside_a_cpu_hog_write_the_same_bytes(pred_dir, tmp_path, monkeypatch,
                                                                        gold_cache):
    """Questions 89-120 of a shared file, default stages (no model): once with one worker, once with four
    workers while another process keeps a core busy; corrected.sql byte for byte. The slice holds 8 repair
    searches (2 stopped by their beam) and 11 changed queries (the first 120 hold 22, 5 and 12), the decisions
    a clock could sway; `sqlmend bench determinism` checks whole files
    (docs/benchmarks.md)."""
    monkeypatch.setenv("SQLMEND_CACHE", str(gold_cache))
    rows = bench_determinism("spider-dev", [pred_dir / "gpt-4_zero-shot.sql"], PipelineConfig(), tmp_path,
                             workers=4, hogs=1, skip=88, limit=32)
    (row,) = rows
    idle = (tmp_path / "gpt-4_zero-shot" / "idle" / "corrected.sql").read_bytes()
    loaded = (tmp_path / "gpt-4_zero-shot" / "loaded" / "corrected.sql").read_bytes()
    assert idle == loaded and row.identical and row.differing == 0
    assert row.n == 32 and row.fixed > 0 and row.regressed == 0
    assert row.item_errors_idle == row.item_errors_loaded == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert report[0]["identical"] is True


def test_the_checkpoint_is_written_in_dataset_order_whatever_finished_first(pred_dir, tmp_path):
    """corrections.jsonl of a finished run lists the tasks in the dataset's order, not in the order
    four workers finished them."""
    from sqlmend.data.datasets import load_dataset
    from sqlmend.data.predictions import load_predictions
    from sqlmend.pipeline import correct_batch

    ds = load_dataset("spider-dev")
    tasks = ds.with_sql(load_predictions(pred_dir / "codes-1b.sql", ds))[:40]
    checkpoint = tmp_path / "corrections.jsonl"
    correct_batch(tasks, PipelineConfig(stages=["static", "search", "guard"], workers=4),
                  checkpoint=checkpoint, progress=False, db_root=ds.db_root)
    ids = [json.loads(line)["question_id"] for line in checkpoint.read_text().splitlines()]
    assert ids == [t.question_id for t in tasks]
