"""Train the error-token detector: LoRA + error-token rows, resumable, within a time budget.

Two objectives:

- ``first_step`` (the default): the constrained distribution over the 33
  error tokens at the first answer position is trained towards the example's
  labels (uniform over its error types, or ``[ERR_NONE]``). That is exactly
  what the one-pass detector reads (:func:`sqlmend.detect.decoding.detection_from_probs`),
  the answer tokens need not be in the input, and several examples run in one
  left-padded forward pass (batches of similar length).
- ``sequence``: the cross-entropy of the whole answer (the error tokens, then
  ``[ERR_NONE]``), with ``loss="constrained"`` over the error tokens only
  (ErrorLLM §3.2) or ``loss="full"`` over the vocabulary; what ``decode`` mode needs.

With ``lora.top_layers`` the adapter sits on the top layers only and the
backward pass stops below them (:func:`sqlmend.detect.model.stop_gradient_below`).

A checkpoint (adapter, optimizer with its moments stored as bfloat16, step,
data order) is written every ``save_every`` optimizer steps and when the time
budget runs out; calling :func:`train` again with the same ``out_dir`` resumes
from it (``init_from`` copies another folder's checkpoint to start from).
"""

from __future__ import annotations

import json
import random
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from sqlmend import taxonomy
from sqlmend.detect import model as dmodel
from sqlmend.detect.decoding import MAX_LABELS
from sqlmend.detect.tokens import TokenTable

CHECKPOINT = "checkpoint"


@dataclass
class TrainConfig:
    """Settings of a detector training run."""

    out_dir: str
    backbone: str | None = None  # checkpoint folder / GGUF; None = SmolLM2-135M-Instruct
    epochs: float = 1.0
    max_steps: int | None = None  # optimizer steps; None = epochs over the data
    lr: float = 3e-4
    grad_accum: int = 4  # forward passes per optimizer step
    batch_size: int = 1  # examples per forward pass (first_step objective; similar lengths together)
    max_length: int = 512
    max_chars: int = 1700
    objective: str = "first_step"  # first_step | sequence
    loss: str = "constrained"  # constrained | full (sequence objective)
    save_every: int = 25
    time_budget: float | None = None  # seconds of training in this call
    seed: int = 0
    device: str = "cpu"
    threads: int | None = None  # torch CPU threads (1 is much faster on a busy 2-core machine)
    init_from: str | None = None  # a detector folder whose checkpoint starts this run (when out_dir has none)
    lora: dmodel.LoraSettings = field(default_factory=dmodel.LoraSettings)


@dataclass
class TrainReport:
    """What a training call did."""

    steps: int  # optimizer steps done in total (with earlier calls)
    examples_seen: int
    total_steps: int
    finished: bool
    mean_loss: float
    seconds: float
    out_dir: str


def answer_loss(logits, answer_ids: list[int], table: TokenTable, mode: str = "constrained"):
    """Cross-entropy of the answer tokens.

    Args:
        logits: ``[n_answer, vocab]`` logits at the positions that predict the answer tokens.
        answer_ids: the answer token ids.
        table: the token table.
        mode: ``constrained`` (softmax over the error tokens only) or ``full``.

    Returns:
        The mean loss (a scalar tensor).
    """
    import torch
    import torch.nn.functional as F

    target = torch.tensor(answer_ids, device=logits.device)
    if mode == "full":
        return F.cross_entropy(logits.float(), target)
    idx = torch.tensor(table.error_ids, device=logits.device)
    pos = {tid: i for i, tid in enumerate(table.error_ids)}
    local = torch.tensor([pos[a] for a in answer_ids], device=logits.device)
    return F.cross_entropy(logits.float().index_select(-1, idx), local)


def example_loss(peft_model, tokenizer, table: TokenTable, example: dict, config: TrainConfig):
    """The loss of one training example (a dict as written by ``sqlmend synth``)."""
    import torch

    text = dmodel.input_text(example["question"], example.get("context", {}), example["sql"],
                             example.get("evidence", ""), max_chars=config.max_chars)
    ids, answer = dmodel.encode(tokenizer, text, example["labels"], config.max_length)
    full = torch.tensor([ids + answer], device=peft_model.device)
    # only the positions that predict the answer need logits (the LM head is a fifth of a small model)
    logits = peft_model(input_ids=full, logits_to_keep=len(answer) + 1).logits[0]
    return answer_loss(logits[:len(answer)], answer, table, config.loss)


def first_step_loss(logits, labels: list[list[str]], table: TokenTable):
    """Cross-entropy of the constrained first-step distribution against the labels.

    Args:
        logits: ``[batch, vocab]`` next-token logits where the answer starts.
        labels: the error types of each example (``["no_error"]`` or empty for a correct SQL).
        table: the token table.

    Returns:
        The mean loss (a scalar tensor).
    """
    import torch

    idx = torch.tensor(table.error_ids, device=logits.device)
    logp = torch.log_softmax(logits.float().index_select(-1, idx), dim=-1)
    pos = {tok: i for i, tok in enumerate(table.tokens)}
    target = torch.zeros_like(logp)
    for b, labs in enumerate(labels):
        errors = [x for x in labs if x != taxonomy.NO_ERROR][:MAX_LABELS]
        for x in errors or [taxonomy.NO_ERROR]:
            target[b, pos[taxonomy.get(x).token]] = 1.0 / max(1, len(errors))
    return -(target * logp).sum(-1).mean()


def encode_examples(tokenizer, examples: list[dict], config: TrainConfig) -> list[list[int]]:
    """Token ids of each example's detector input (without the answer)."""
    out = []
    for ex in examples:
        text = dmodel.input_text(ex["question"], ex.get("context", {}), ex["sql"], ex.get("evidence", ""),
                                 max_chars=config.max_chars)
        out.append(dmodel.encode(tokenizer, text, None, config.max_length)[0])
    return out


def length_batches(lengths: list[int], batch_size: int, seed: int = 0, window: int = 64) -> list[list[int]]:
    """Batches of example indices: shuffled, then sorted by length within windows, batches shuffled.

    Similar lengths share a batch (little padding) while the order stays random
    at the scale of ``window`` batches.

    Args:
        lengths: the token count of each example.
        batch_size: examples per batch.
        seed: the shuffle's seed.
        window: batches per sorting window.

    Returns:
        The batches, in training order.
    """
    rng = random.Random(seed)
    order = list(range(len(lengths)))
    rng.shuffle(order)
    out: list[list[int]] = []
    span = max(1, batch_size * window)
    for w in range(0, len(order), span):
        chunk = sorted(order[w:w + span], key=lengths.__getitem__)
        part = [chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size)]
        rng.shuffle(part)
        out += part
    return out


def _state_path(out_dir: Path) -> Path:
    return out_dir / CHECKPOINT / "state.pt"


def _pack(opt_state: dict) -> dict:
    """The optimizer state with its float32 moment tensors stored as bfloat16 (half the bytes)."""
    import torch

    state = {k: {n: v.to(torch.bfloat16) if torch.is_tensor(v) and v.dtype == torch.float32 and v.dim() else v
                 for n, v in st.items()} for k, st in opt_state["state"].items()}
    return {**opt_state, "state": state}


def _unpack(opt_state: dict) -> dict:
    import torch

    state = {k: {n: v.float() if torch.is_tensor(v) and v.dtype == torch.bfloat16 else v for n, v in st.items()}
             for k, st in opt_state["state"].items()}
    return {**opt_state, "state": state}


def train(examples: list[dict], config: TrainConfig, progress: bool = True,
          prepared: tuple[Any, Any, TokenTable] | None = None,
          on_step: Callable[[int, float], None] | None = None) -> TrainReport:
    """Train (or resume training) the detector on synthesized examples.

    Args:
        examples: training examples (dicts with question, sql, context, labels).
        config: the run settings.
        progress: show a progress bar.
        prepared: an already built ``(peft_model, tokenizer, table)`` (tests); else :func:`dmodel.prepare`.
        on_step: called with ``(step, loss)`` after each optimizer step.

    Returns:
        A :class:`TrainReport`. The adapter is in ``out_dir`` when the run finished,
        and the resumable checkpoint in ``out_dir/checkpoint`` in any case.
    """
    import torch
    from peft import set_peft_model_state_dict

    from sqlmend.progress import bar as progress_bar

    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    state_file = _state_path(out)
    if not state_file.exists() and config.init_from and _state_path(Path(config.init_from)).exists():
        shutil.copytree(Path(config.init_from) / CHECKPOINT, out / CHECKPOINT, dirs_exist_ok=True)
    state = torch.load(state_file, weights_only=False) if state_file.exists() else None
    if state and state.get("lora"):  # a resumed run keeps the adapter's shape
        config.lora = dmodel.LoraSettings(**state["lora"])
    torch.manual_seed(config.seed)
    if config.threads:
        torch.set_num_threads(config.threads)
    peft_model, tok, table = prepared or dmodel.prepare(config.backbone, config.lora, config.device)
    hook = dmodel.stop_gradient_below(peft_model, config.lora.top_layers) if config.lora.top_layers else None
    params = [p for p in peft_model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=config.lr, weight_decay=0.0)
    first = config.objective == "first_step"
    encoded = encode_examples(tok, examples, config) if first else None
    if state and "batches" in state and state.get("examples") == len(examples):
        batches = state["batches"]  # the same data: continue where the last call stopped
    else:
        size = config.batch_size if first else 1
        batches = length_batches([len(x) for x in encoded] if first else [0] * len(examples), size, config.seed)
    per_epoch = max(1, len(batches) // config.grad_accum)
    total = config.max_steps or max(1, int(per_epoch * config.epochs))
    step, seen, losses = 0, 0, []
    if state:
        set_peft_model_state_dict(peft_model, state["adapter"])
        opt.load_state_dict(_unpack(state["optimizer"]))
        step, seen, losses = state["step"], state["seen"], state.get("losses", [])
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 10) * max(0.05, 1 - s / max(total, 1)), last_epoch=-1)
    for _ in range(step):
        sched.step()
    settings = {"backbone": table.backbone, "backbone_path": config.backbone, "train": {
        **{k: v for k, v in asdict(config).items() if k != "lora"}, "examples": len(examples)}}
    pad = dmodel.pad_id(tok)

    def checkpoint() -> None:
        from peft import get_peft_model_state_dict

        state_file.parent.mkdir(parents=True, exist_ok=True)
        torch.save({"adapter": get_peft_model_state_dict(peft_model, save_embedding_layers=False),
                    "optimizer": _pack(opt.state_dict()), "step": step, "seen": seen, "batches": batches,
                    "examples": len(examples),
                    "lora": asdict(config.lora), "losses": losses[-2000:]}, state_file)
        (out / CHECKPOINT / "progress.json").write_text(json.dumps(
            {"step": step, "total": total, "seen_batches": seen, "batches_per_epoch": len(batches),
             "epochs_done": round(seen / max(1, len(batches)), 3)}))

    def batch_loss(batch: list[int]):
        if first:
            logits = dmodel.next_logits(peft_model, [encoded[i] for i in batch], pad)
            return first_step_loss(logits, [examples[i]["labels"] for i in batch], table)
        return sum(example_loss(peft_model, tok, table, examples[i], config) for i in batch) / len(batch)

    started = time.monotonic()
    peft_model.train()
    bar = progress_bar(total=total, initial=step, desc="train-detector", disable=not progress, unit="step")
    try:
        while step < total:
            opt.zero_grad()
            acc = 0.0
            for _ in range(config.grad_accum):
                loss = batch_loss(batches[seen % len(batches)]) / config.grad_accum
                seen += 1
                loss.backward()
                acc += float(loss.detach())
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            step += 1
            losses.append(acc)
            bar.update(1)
            bar.set_postfix(loss=f"{sum(losses[-20:]) / len(losses[-20:]):.3f}")
            if on_step:
                on_step(step, acc)
            if step % config.save_every == 0:
                checkpoint()
            if config.time_budget is not None and time.monotonic() - started > config.time_budget:
                break
    finally:
        bar.close()
        if hook is not None:
            hook.remove()
    checkpoint()
    peft_model.eval()
    finished = step >= total
    dmodel.save(peft_model, table, out, {**settings, "lora": asdict(config.lora), "steps": step,
                                         "examples_seen": seen * (config.batch_size if first else 1),
                                         "finished": finished})
    recent = losses[-50:] or [float("nan")]
    return TrainReport(step, seen * (config.batch_size if first else 1), total, finished,
                       sum(recent) / len(recent), time.monotonic() - started, str(out))
