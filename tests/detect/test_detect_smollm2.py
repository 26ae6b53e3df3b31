"""A few real training steps on SmolLM2-135M-Instruct (the CPU backbone), then a save/load round trip."""

from __future__ import annotations

import math

import pytest
import torch

from sqlmend.detect import model as dmodel
from sqlmend.detect.decoding import decode
from sqlmend.detect.train import TrainConfig, train

pytestmark = pytest.mark.slow

EXAMPLES = [
    {"question": "How many singers are from France?", "db_id": "concert_singer", "labels": ["value_error"],
     "sql": "SELECT count(*) FROM singer WHERE country = 'france'",
     "context": {"qss": "singer(Singer_ID* int, Name text, Country text ['Netherlands','France'])",
                 "ast": "(select (count *) (from (table singer)) (where (eq (col country) 'france')))",
                 "exec": "ok: 1 rows x 1 cols (count(*)); rows: (0,)"}},
    {"question": "How many singers are there?", "db_id": "concert_singer", "labels": ["no_error"],
     "sql": "SELECT count(*) FROM singer",
     "context": {"qss": "singer(Singer_ID* int, Name text)", "ast": "(select (count *) (from (table singer)))",
                 "exec": "ok: 1 rows x 1 cols (count(*)); rows: (6,)"}},
]


def test_smollm2_trains_and_round_trips(tmp_path):
    torch.set_num_threads(1)
    losses: list[float] = []
    cfg = TrainConfig(out_dir=str(tmp_path), max_steps=3, grad_accum=1, max_length=160, lr=1e-3, threads=1)
    report = train(EXAMPLES, cfg, progress=False, on_step=lambda s, loss: losses.append(loss))
    assert report.steps == 3 and all(math.isfinite(x) for x in losses)
    size = sum(p.stat().st_size for p in tmp_path.glob("adapter_model.*"))
    assert 0 < size < 40_000_000  # the adapter, not the 540 MB model
    model, tok, table = dmodel.load(tmp_path)
    ids = dmodel.encode(tok, dmodel.input_text(EXAMPLES[0]["question"], EXAMPLES[0]["context"]), None, 160)[0]
    det = decode(model, ids, table)
    assert det.p_no_error is not None and all(t in {x for x, _ in table.used()} for t, _ in det.types)
