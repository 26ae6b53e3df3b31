"""The error-token model: a causal LM with error tokens, LoRA adapters and its files.

:func:`prepare` loads a backbone through :func:`sqlmend.llm.local.load_causal_lm`,
adds the error tokens (:mod:`sqlmend.detect.tokens`) and wraps it with peft LoRA
whose ``trainable_token_indices`` trains the error-token rows only (peft keeps a
tied output head consistent). :func:`save` writes the small adapter (LoRA
weights + the 33 token rows), the token table and the training settings, never
the full embedding matrix; :func:`load` rebuilds the detector from them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sqlmend import structure
from sqlmend.detect.decoding import target_tokens
from sqlmend.detect.tokens import TokenTable, add_error_tokens
from sqlmend.errors import ConfigError
from sqlmend.llm import prompts

SETTINGS_FILE = "detector.json"


@dataclass
class LoraSettings:
    """LoRA hyper-parameters (rank, scale, dropout, target modules)."""

    r: int = 16
    alpha: int = 32
    dropout: float = 0.05
    target_modules: str | list[str] = "all-linear"
    top_layers: int | None = None  # LoRA on the top N decoder layers only (None: all layers)


def decoder_layers(model) -> Any:
    """The list of decoder layers of a (peft-wrapped) causal LM."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return base.model.layers


def stop_gradient_below(model, n_top: int) -> Any:
    """Cut the backward pass below the top ``n_top`` decoder layers (they alone carry LoRA).

    A forward pre-hook detaches the hidden states entering the lowest adapted
    layer, so the backward pass runs through ``n_top`` layers instead of all:
    with SmolLM2's 30 layers and 8 adapted, a training step costs about half.

    Returns:
        The hook handle (``.remove()`` undoes it).
    """
    layers = decoder_layers(model)
    first = max(0, len(layers) - n_top)
    return layers[first].register_forward_pre_hook(lambda _mod, args: (args[0].detach(), *args[1:]))


def instruction() -> str:
    """Return the detector instruction ``I_Λ`` (the data file ``prompts/detector_instruction.yaml``)."""
    return prompts.load("sqlmend.detect", "detector_instruction")["instruction"].strip()


def input_text(question: str, context: dict[str, str], sql_text: str = "", evidence: str = "",
               max_chars: int = 1700) -> str:
    """The detector input ``x^(Det)`` of one SQL from its structural context.

    Args:
        question: the question.
        context: ``{"sql", "qss", "ast", "exec"}`` from :func:`sqlmend.structure.describe`.
        sql_text: the SQL, when ``context`` has no canonical ``sql``.
        evidence: optional external knowledge.
        max_chars: the size budget.

    Returns:
        The text, ending with ``Errors:``.
    """
    return structure.detector_input(instruction(), question, context.get("qss", ""),
                                    context.get("sql") or sql_text, context.get("ast", ""),
                                    context.get("exec", ""), evidence=evidence, max_chars=max_chars)


def encode(tokenizer, text: str, labels: list[str] | None = None, max_length: int = 512) -> tuple[list[int], list[int]]:
    """Tokenize a detector input (and, for training, its answer tokens).

    The input is cut from the left when too long, so that the SQL, its result
    and the answer prompt always stay.

    Args:
        tokenizer: the extended tokenizer.
        text: the detector input.
        labels: the error types of the answer (None at inference).
        max_length: the most tokens of input plus answer.

    Returns:
        ``(input_ids, answer_ids)``; ``answer_ids`` is empty at inference.
    """
    answer = [tokenizer.convert_tokens_to_ids(t) for t in target_tokens(labels)] if labels is not None else []
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    room = max_length - len(answer)
    return ids[-room:], answer


def next_logits(model, batch: list[list[int]], pad_id: int = 0):
    """Next-token logits after each of several inputs, in one left-padded forward pass.

    Inputs of unequal length are padded on the left and masked; with rotary
    positions a left shift changes no attention score, so each row gets the
    logits it would get alone (up to float rounding).

    Args:
        model: the causal LM.
        batch: token ids of each input.
        pad_id: the id written in the padding (masked out).

    Returns:
        A ``[len(batch), vocab]`` tensor.
    """
    import torch

    width = max(len(x) for x in batch)
    ids = torch.tensor([[pad_id] * (width - len(x)) + x for x in batch], device=model.device)
    if all(len(x) == width for x in batch):
        return model(input_ids=ids, logits_to_keep=1).logits[:, -1]
    mask = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in batch], device=model.device)
    return model(input_ids=ids, attention_mask=mask, logits_to_keep=1).logits[:, -1]


def pad_id(tokenizer) -> int:
    """The id used for padding (the tokenizer's pad token, else its end token, else 0)."""
    for tid in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if tid is not None:
            return int(tid)
    return 0


def prepare(backbone: str | None = None, lora: LoraSettings | None = None, device: str = "cpu",
            semantic_init: bool = True) -> tuple[Any, Any, TokenTable]:
    """Load a backbone, add the error tokens and wrap it for LoRA training.

    Args:
        backbone: a checkpoint folder or GGUF file; None for SmolLM2-135M-Instruct.
        lora: LoRA settings.
        device: ``cpu``, ``cuda``, ``auto``.
        semantic_init: initialize used tokens from their type descriptions (§3.1).

    Returns:
        ``(peft_model, tokenizer, token_table)``.
    """
    from sqlmend.llm.local import load_causal_lm

    model, tok = load_causal_lm(backbone, device=device)
    return wrap(model, tok, lora, backbone=str(backbone or "smollm2-135m-instruct"), semantic_init=semantic_init)


def wrap(model, tokenizer, lora: LoraSettings | None = None, backbone: str = "",
         semantic_init: bool = True) -> tuple[Any, Any, TokenTable]:
    """Add the error tokens to an already loaded model and wrap it with LoRA.

    Args:
        model: a ``transformers`` causal LM.
        tokenizer: its tokenizer.
        lora: LoRA settings.
        backbone: the backbone's name, stored in the token table.
        semantic_init: initialize used tokens from their type descriptions.

    Returns:
        ``(peft_model, tokenizer, token_table)``.
    """
    from peft import LoraConfig, get_peft_model

    lora = lora or LoraSettings()
    table = add_error_tokens(model, tokenizer, backbone=backbone, semantic=semantic_init)
    table.extra["lora"] = asdict(lora)
    n_layers = model.config.num_hidden_layers
    top = list(range(max(0, n_layers - lora.top_layers), n_layers)) if lora.top_layers else None
    targets = lora.target_modules
    if top and isinstance(targets, str):  # peft wants module names with layers_to_transform
        import torch

        targets = sorted({name.rsplit(".", 1)[-1] for name, mod in decoder_layers(model)[0].named_modules()
                          if isinstance(mod, torch.nn.Linear)})
    config = LoraConfig(
        task_type="CAUSAL_LM", r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout,
        target_modules=targets, trainable_token_indices=table.error_ids,
        layers_to_transform=top)
    return get_peft_model(model, config), tokenizer, table


def save(peft_model, table: TokenTable, folder: str | Path, settings: dict | None = None,
         half: bool = True) -> Path:
    """Write the adapter (LoRA + token rows), the token table and the settings.

    Args:
        peft_model: the trained peft model.
        table: its token table.
        folder: the output folder.
        settings: extra settings to record (backbone, max_length, threshold, ...).
        half: store the adapter weights as float16 (half the size; loading casts them back).

    Returns:
        The folder.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    peft_model.save_pretrained(str(folder), save_embedding_layers=False)
    if half:
        _halve(folder / "adapter_model.safetensors")
    table.save(folder)
    old = read_settings(folder) if (folder / SETTINGS_FILE).exists() else {}
    (folder / SETTINGS_FILE).write_text(json.dumps({**old, **(settings or {})}, indent=1))
    return folder


def _halve(path: Path) -> None:
    """Rewrite a safetensors file with its float32 tensors as float16."""
    import torch
    from safetensors.torch import load_file, save_file

    if not path.exists():
        return
    tensors = {k: v.half() if v.dtype == torch.float32 else v for k, v in load_file(str(path)).items()}
    save_file(tensors, str(path), metadata={"format": "pt"})


def read_settings(folder: str | Path) -> dict:
    """Read ``detector.json`` of a detector folder (empty dict when absent)."""
    path = Path(folder) / SETTINGS_FILE
    return json.loads(path.read_text()) if path.exists() else {}


def load(folder: str | Path, backbone: str | None = None, device: str = "cpu", base=None) -> tuple[Any, Any, TokenTable]:
    """Rebuild a trained detector from its folder.

    Args:
        folder: what :func:`save` wrote.
        backbone: override the backbone recorded in the folder.
        device: ``cpu``, ``cuda``, ``auto``.
        base: an already loaded ``(model, tokenizer)`` to use instead of loading the backbone.

    Returns:
        ``(model, tokenizer, token_table)`` with the model in eval mode.

    Raises:
        ConfigError: the folder is not a detector, or its token ids do not match the backbone.
    """
    from peft import PeftModel

    folder = Path(folder)
    saved = TokenTable.load(folder)
    if base is None:
        from sqlmend.llm.local import load_causal_lm

        name = backbone or read_settings(folder).get("backbone_path")
        model, tok = load_causal_lm(name or None, device=device)
    else:
        model, tok = base
    table = add_error_tokens(model, tok, backbone=saved.backbone)
    if table.ids != saved.ids:
        raise ConfigError(f"{folder}: the backbone gives the error tokens other ids than at training")
    table.extra = saved.extra
    model = PeftModel.from_pretrained(model, str(folder))
    model.eval()
    return model, tok, table
