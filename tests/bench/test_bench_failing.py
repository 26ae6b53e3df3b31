"""``sqlmend bench failing`` on a few Spider-train questions: failing originals, the static stage first,
then the search stage's choices."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from sqlmend.bench.failing import CHOICES, bench_failing, markdown
from sqlmend.cli import app
from sqlmend.data import load_dataset
from sqlmend.synth.failing import KINDS

pytestmark = pytest.mark.slow


def test_bench_failing_counts_each_break_and_each_choice(data_dir):
    ds = load_dataset("spider-train", data_root=data_dir)
    # 4 questions, half the budget: 9 failing originals of every kind, 5 with a reachable fix (12-07; 3.4 s
    # of CPU against 12.6 s for 6 questions at 1.0)
    report = bench_failing(ds, questions=4, options={"budget": 0.5})
    assert report["questions"] == 4 and set(report["kinds"]) == set(KINDS)
    total = report["all"]
    assert total["failing"] == total["static_fixed"] + total["searched"] > 0
    assert total["searched"] >= total["with_candidate"] >= total["reachable"]
    for how in CHOICES:  # a fix returns the gold's rows, so it needs a candidate that does
        assert total[f"fixed_{how}"] <= total["reachable"]
    assert sum(total[f"fixed_{how}"] for how in CHOICES) > 0
    table = markdown(report)
    assert "| all |" in table and "fixed: ranker" in table


def test_bench_failing_refuses_dev():
    r = CliRunner().invoke(app, ["bench", "failing", "--dataset", "spider-dev", "--questions", "1"])
    assert r.exit_code == 2 and "training questions only" in r.output
