"""Train the error-token detector: LoRA + error-token rows, resumable, within a time budget.

The loss is the cross-entropy of the answer tokens (the error tokens, then
``[ERR_NONE]``). With ``loss="constrained"`` (the default) it is taken over
the error tokens only, i.e. the likelihood of the constrained decoder of
ErrorLLM §3.2; ``loss="full"`` uses the whole vocabulary (plain SFT).

A checkpoint (adapter, optimizer, step, data order) is written every
``save_every`` optimizer steps and when the time budget runs out; calling
:func:`train` again with the same ``out_dir`` resumes from it.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from sqlmend.detect import model as dmodel
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
    grad_accum: int = 4
    max_length: int = 512
    max_chars: int = 1700
    loss: str = "constrained"  # constrained | full
    save_every: int = 25
    time_budget: float | None = None  # seconds of training in this call
    seed: int = 0
    device: str = "cpu"
    threads: int | None = None  # torch CPU threads (1 is much faster on a busy 2-core machine)
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


def _state_path(out_dir: Path) -> Path:
    return out_dir / CHECKPOINT / "state.pt"


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
    from tqdm import tqdm

    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(config.seed)
    if config.threads:
        torch.set_num_threads(config.threads)
    peft_model, tok, table = prepared or dmodel.prepare(config.backbone, config.lora, config.device)
    params = [p for p in peft_model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=config.lr, weight_decay=0.0)
    order = list(range(len(examples)))
    random.Random(config.seed).shuffle(order)
    per_epoch = max(1, len(order) // config.grad_accum)
    total = config.max_steps or max(1, int(per_epoch * config.epochs))
    step, seen, losses = 0, 0, []
    state_file = _state_path(out)
    if state_file.exists():
        state = torch.load(state_file, weights_only=False)
        set_peft_model_state_dict(peft_model, state["adapter"])
        opt.load_state_dict(state["optimizer"])
        step, seen, order, losses = state["step"], state["seen"], state["order"], state.get("losses", [])
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 10) * max(0.05, 1 - s / max(total, 1)), last_epoch=-1)
    for _ in range(step):
        sched.step()
    settings = {"backbone": table.backbone, "backbone_path": config.backbone, "train": {
        **{k: v for k, v in asdict(config).items() if k != "lora"}, "examples": len(examples)}}

    def checkpoint() -> None:
        from peft import get_peft_model_state_dict

        state_file.parent.mkdir(parents=True, exist_ok=True)
        torch.save({"adapter": get_peft_model_state_dict(peft_model, save_embedding_layers=False),
                    "optimizer": opt.state_dict(), "step": step, "seen": seen, "order": order,
                    "losses": losses[-2000:]}, state_file)
        (out / CHECKPOINT / "progress.json").write_text(json.dumps({"step": step, "total": total, "seen": seen}))

    started = time.monotonic()
    peft_model.train()
    bar = tqdm(total=total, initial=step, desc="train-detector", disable=not progress, unit="step")
    while step < total:
        opt.zero_grad()
        acc = 0.0
        for _ in range(config.grad_accum):
            ex = examples[order[seen % len(order)]]
            seen += 1
            loss = example_loss(peft_model, tok, table, ex, config) / config.grad_accum
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
    bar.close()
    checkpoint()
    peft_model.eval()
    finished = step >= total
    dmodel.save(peft_model, table, out, {**settings, "steps": step, "finished": finished})
    recent = losses[-50:] or [float("nan")]
    return TrainReport(step, seen, total, finished, sum(recent) / len(recent), time.monotonic() - started, str(out))
