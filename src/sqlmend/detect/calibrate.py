"""Calibrate the one-pass threshold on P(no_error) for a target precision.

A SQL is flagged when the constrained ``P([ERR_NONE])`` is below the threshold
``t``. On held-out synthetic examples (whole databases held out of training),
:func:`calibrate_threshold` returns the largest ``t`` — the most recall —
whose flagged set still reaches the target precision.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from sqlmend import taxonomy
from sqlmend.detect import model as dmodel


def split_by_db(rows: list[dict], holdout: float, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """Split examples into training and held-out sets by database.

    Args:
        rows: examples with ``db_id``.
        holdout: the share of databases held out (0 for none).
        seed: the random seed.

    Returns:
        ``(train, held_out)``; the held-out set is shuffled.
    """
    dbs = sorted({r["db_id"] for r in rows})
    rng = random.Random(seed)
    held_dbs = set(rng.sample(dbs, int(round(len(dbs) * holdout)))) if holdout > 0 and len(dbs) > 1 else set()
    train = [r for r in rows if r["db_id"] not in held_dbs]
    held = [r for r in rows if r["db_id"] in held_dbs]
    rng.shuffle(held)
    return train, held


def calibrate_threshold(p_none: list[float], is_error: list[bool], target_precision: float) -> dict[str, float]:
    """Choose the threshold on P(no_error) reaching ``target_precision`` with the most recall.

    Args:
        p_none: P(no_error) of each held-out example.
        is_error: whether each example has an error.
        target_precision: the wanted precision of "has an error".

    Returns:
        ``{"threshold", "precision", "recall", "n"}``; when no threshold reaches
        the target, the one with the best precision (ties: more recall).
    """
    pairs = sorted(zip(p_none, is_error))
    positives = sum(is_error) or 1
    best = None
    best_fallback = None
    tp = fp = 0
    for i, (p, err) in enumerate(pairs):
        tp += err
        fp += not err
        if i + 1 < len(pairs) and pairs[i + 1][0] == p:
            continue
        nxt = pairs[i + 1][0] if i + 1 < len(pairs) else 1.0 + 1e-9
        thr = (p + nxt) / 2
        prec, rec = tp / (tp + fp), tp / positives
        if prec >= target_precision:
            best = {"threshold": thr, "precision": prec, "recall": rec}
        if best_fallback is None or (prec, rec) > (best_fallback["precision"], best_fallback["recall"]):
            best_fallback = {"threshold": thr, "precision": prec, "recall": rec}
    out = best or best_fallback or {"threshold": 0.5, "precision": 0.0, "recall": 0.0}
    return {**out, "n": len(pairs)}


def calibrate_folder(folder: str | Path, held: list[dict[str, Any]], target_precision: float,
                     backbone: str | None = None, device: str = "cpu", progress: bool = True) -> dict:
    """Score held-out examples with a trained detector and store the calibrated threshold.

    Args:
        folder: the detector folder.
        held: held-out examples (dicts from ``sqlmend synth``).
        target_precision: the wanted precision.
        backbone: override the recorded backbone.
        device: ``cpu``, ``cuda``, ``auto``.
        progress: show a progress bar.

    Returns:
        The calibration result (also written to ``detector.json``).
    """
    from sqlmend.detect.detector import ErrorTokenDetector
    from sqlmend.progress import bar as progress_bar
    from sqlmend.search.train import auroc

    det = ErrorTokenDetector.from_dir(folder, backbone=backbone, device=device)
    none_pos = det.table.tokens.index(taxonomy.NO_ERROR_TOKEN)
    p_none, errs = [], []
    for ex in progress_bar(held, desc="calibrate", disable=not progress):
        p_none.append(det.probs(ex["question"], ex.get("context", {}), ex["sql"], ex.get("evidence", ""))[none_pos])
        errs.append(any(x != taxonomy.NO_ERROR for x in ex["labels"]))
    result = {**calibrate_threshold(p_none, errs, target_precision), "target_precision": target_precision,
              "auroc": auroc(p_none, errs)}
    settings = dmodel.read_settings(folder)
    settings.update({"threshold": result["threshold"], "calibration": result})
    (Path(folder) / dmodel.SETTINGS_FILE).write_text(json.dumps(settings, indent=1))
    return result
