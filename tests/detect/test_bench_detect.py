"""``sqlmend bench detect`` with a tiny trained detector on real Spider-dev predictions."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from sqlmend.bench import load_dataset
from sqlmend.bench.sampling import seeded_sample
from sqlmend.cli import app


def test_bench_detect_scores_the_seeded_sample(tmp_path, data_dir, tiny_detector):
    folder, _ = tiny_detector
    preds = [data_dir / "predictions" / "spider-dev" / f for f in ("codes-1b.sql", "din-sql_gpt-4.sql")]
    out = tmp_path / "bench.json"
    r = CliRunner().invoke(app, ["bench", "detect", "--detector", str(folder), "--pred", str(preds[0]), "--pred",
                                 str(preds[1]), "--limit", "10", "--seed", "4", "--json", str(out), "-q"])
    assert r.exit_code == 0, r.output
    report = json.loads(out.read_text())
    ds = load_dataset("spider-dev")
    wanted = [t.question_id for t in seeded_sample(ds.tasks, 10, 4) if ds.db_path(t.db_id)]
    assert report["questions"] == len(wanted)
    assert {k.split(":", 1)[1] for k in report["labels"]} <= set(wanted)
    assert {k.split(":", 1)[0] for k in report["labels"]} == {"codes-1b", "din-sql_gpt-4"}
    assert set(report["table"]) == {f"{d} / {s}" for d in ("model", "static", "static+model")
                                    for s in ("all", "gold-clean")}
    n = report["table"]["model / all"]
    assert n["tp"] + n["fp"] + n["fn"] + n["tn"] == len(report["labels"])
    assert "| model / all |" in r.output
