"""Cost of one detector training step and of one detection (``sqlmend bench detect-train-speed``).

Two training set-ups run for a few optimizer steps on the same Spider-train
examples, and the seconds per training example are reported:

- ``before``: the set-up of the first trained detector (the whole schema in
  the input, LoRA r=16 on every layer, the whole answer's loss, one example
  per forward pass);
- ``after``: the shipped set-up (the linked sub-graph only, LoRA on the top
  layers with the backward pass stopped below them, the first-step loss,
  length-bucketed batches).

Inference is timed the same way: one forward pass per query, then batches.
The model loading and the first step (warm-up) are not counted.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from sqlmend.data.sampling import seeded_sample


@dataclass
class SpeedArm:
    """One training set-up to time."""

    name: str
    linked_only: bool
    objective: str
    top_layers: int | None
    lora_r: int
    batch_size: int
    max_length: int = 256
    max_chars: int = 900
    tokens: list[int] = field(default_factory=list)  # input lengths seen (filled by the bench)


BEFORE = SpeedArm("before", linked_only=False, objective="sequence", top_layers=None, lora_r=16, batch_size=1)
AFTER = SpeedArm("after", linked_only=True, objective="first_step", top_layers=8, lora_r=8, batch_size=4)


def _examples(rows: list[dict], dataset: Any, linked_only: bool) -> list[dict]:
    """The rows with their structural context rebuilt (whole schema or linked sub-graph)."""
    from sqlmend import structure
    from sqlmend.db import connect

    out = []
    for r in rows:
        path = dataset.db_path(r["db_id"])
        if not path:
            continue
        db = connect(path)
        try:
            ctx = structure.describe(db, r["question"], r["sql"], samples=structure.sample_values(db),
                                     value_index=db.value_index(), linked_only=linked_only)
        finally:
            db.close()
        out.append({**r, "context": ctx.to_dict()})
    return out


def time_training(rows: list[dict], arm: SpeedArm, steps: int, threads: int = 1) -> dict[str, float]:
    """Seconds per training example of one set-up, over ``steps`` optimizer steps after a warm-up step.

    Args:
        rows: examples with their context (as ``sqlmend synth`` writes them).
        arm: the set-up.
        steps: optimizer steps timed (one more runs first as warm-up).
        threads: torch CPU threads.

    Returns:
        ``s_per_example``, ``s_per_step``, ``examples_per_step``, ``mean_tokens``.
    """
    from sqlmend.detect import model as dmodel
    from sqlmend.detect.train import TrainConfig, encode_examples, train

    stamps: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        cfg = TrainConfig(out_dir=tmp, max_steps=steps + 1, grad_accum=1, batch_size=arm.batch_size,
                          max_length=arm.max_length, max_chars=arm.max_chars, objective=arm.objective,
                          threads=threads, save_every=10 ** 9,
                          lora=dmodel.LoraSettings(r=arm.lora_r, alpha=2 * arm.lora_r, top_layers=arm.top_layers))
        prepared = dmodel.prepare(None, cfg.lora)
        lengths = [len(x) for x in encode_examples(prepared[1], rows, cfg)]
        train(rows, cfg, progress=False, prepared=prepared, on_step=lambda s, _l: stamps.append(time.perf_counter()))
    per_step = (stamps[-1] - stamps[0]) / max(1, len(stamps) - 1)
    per_ex = arm.batch_size if arm.objective == "first_step" else 1
    return {"s_per_example": per_step / per_ex, "s_per_step": per_step, "examples_per_step": per_ex,
            "mean_tokens": statistics.mean(lengths)}


def time_inference(rows: list[dict], batch_size: int, n: int = 16, threads: int = 1) -> dict[str, float]:
    """Seconds per query of the detector's forward pass, one at a time and in batches.

    Args:
        rows: examples with their context.
        batch_size: queries per batch.
        n: queries timed.
        threads: torch CPU threads.

    Returns:
        ``s_per_query_single``, ``s_per_query_batched``.
    """
    import torch

    from sqlmend.detect import model as dmodel
    from sqlmend.detect.train import TrainConfig, encode_examples

    torch.set_num_threads(threads)
    model, tok, _ = dmodel.prepare(None, dmodel.LoraSettings(r=8, alpha=16, top_layers=8))
    model.eval()
    ids = encode_examples(tok, rows[:n], TrainConfig(out_dir="", max_length=256, max_chars=900))
    pad = dmodel.pad_id(tok)
    with torch.no_grad():
        dmodel.next_logits(model, ids[:1], pad)  # warm-up
        t0 = time.perf_counter()
        for x in ids:
            dmodel.next_logits(model, [x], pad)
        single = (time.perf_counter() - t0) / len(ids)
        order = sorted(ids, key=len)
        t0 = time.perf_counter()
        for i in range(0, len(order), batch_size):
            dmodel.next_logits(model, order[i:i + batch_size], pad)
        batched = (time.perf_counter() - t0) / len(ids)
    return {"s_per_query_single": single, "s_per_query_batched": batched}


def bench_train_speed(rows: list[dict], dataset: Any, steps: int = 20, n: int = 64, seed: int = 0,
                      threads: int = 1, arms: tuple[SpeedArm, ...] = (BEFORE, AFTER)) -> dict[str, Any]:
    """Time training (each arm) and inference on a seeded sample of synthesized Spider-train examples.

    Args:
        rows: ``sqlmend synth`` rows (their contexts are rebuilt per arm from the databases).
        dataset: the dataset the rows come from (for the database paths).
        steps: optimizer steps timed per arm.
        n: examples sampled (the arms cycle through them).
        seed: the sample's seed.
        threads: torch CPU threads.
        arms: the set-ups.

    Returns:
        ``{arm name: figures, "inference": figures, "n": examples}``.
    """
    sample = seeded_sample(rows, n, seed)
    out: dict[str, Any] = {"n": len(sample), "steps": steps}
    linked = None
    for arm in arms:
        ex = _examples(sample, dataset, arm.linked_only)
        if arm.linked_only:
            linked = ex
        out[arm.name] = time_training(ex, arm, steps, threads)
    out["inference"] = time_inference(linked or _examples(sample, dataset, True), AFTER.batch_size,
                                      threads=threads)
    return out
