"""Error tokens in a causal LM's vocabulary (ErrorLLM §3.1).

The vocabulary ``W`` of any Hugging Face causal LM is extended to
``W' = W ∪ {[ERR_i]}_{i=1..N} ∪ {[ERR_NONE]}`` with the ``N = 32`` reserved
tokens of :mod:`sqlmend.taxonomy` (unused slots stay reserved so that a new
error type never renumbers a trained vocabulary). Each *used* token starts
from the backbone's own embedding of its type's description (semantic
initialization); unused slots start at the mean embedding.

The :class:`TokenTable` records which id each token received; it is saved
next to the adapter instead of the whole embedding matrix.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlmend import taxonomy
from sqlmend.errors import ConfigError

TABLE_FILE = "token_table.json"


@dataclass
class TokenTable:
    """Where the error tokens live in an extended vocabulary.

    ``ids`` maps each of the 33 tokens (``[ERR_1]..[ERR_32]``, ``[ERR_NONE]``)
    to its id; ``base_vocab`` is the backbone's embedding size before the
    extension; ``backbone`` names the checkpoint the table belongs to.
    """

    ids: dict[str, int]
    base_vocab: int
    backbone: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def tokens(self) -> list[str]:
        """All error tokens, in taxonomy order (slots 1..N, then ``[ERR_NONE]``)."""
        return taxonomy.all_tokens()

    @property
    def error_ids(self) -> list[int]:
        """Ids of all error tokens (``W' \\ W``), in :attr:`tokens` order."""
        return [self.ids[t] for t in self.tokens]

    @property
    def none_id(self) -> int:
        """Id of ``[ERR_NONE]``."""
        return self.ids[taxonomy.NO_ERROR_TOKEN]

    def used(self) -> list[tuple[str, int]]:
        """Return ``(type_id, token_id)`` for every used type, ``no_error`` last."""
        return [(t.id, self.ids[t.token]) for t in taxonomy.all_types(include_no_error=True)]

    def type_of(self, token_id: int) -> str | None:
        """Return the error-type id of a token id, or None for an unused slot / ordinary token."""
        for type_id, tid in self.used():
            if tid == token_id:
                return type_id
        return None

    def id_of(self, type_id: str) -> int:
        """Return the token id of an error-type id (``no_error`` included)."""
        return self.ids[taxonomy.get(type_id).token]

    def save(self, folder: str | Path) -> Path:
        """Write the table as ``token_table.json`` into ``folder``.

        Args:
            folder: the adapter folder.

        Returns:
            The path written.
        """
        path = Path(folder) / TABLE_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=1))
        return path

    @classmethod
    def load(cls, folder: str | Path) -> "TokenTable":
        """Read ``token_table.json`` from an adapter folder.

        Raises:
            ConfigError: the file is missing or does not hold every error token.
        """
        path = Path(folder) / TABLE_FILE
        if not path.exists():
            raise ConfigError(f"{path} not found: is {folder} a trained detector folder?")
        data = json.loads(path.read_text())
        table = cls(**data)
        missing = [t for t in taxonomy.all_tokens() if t not in table.ids]
        if missing:
            raise ConfigError(f"{path} lacks tokens {missing}")
        return table


def add_error_tokens(model, tokenizer, backbone: str = "", semantic: bool = True) -> TokenTable:
    """Extend ``tokenizer`` and ``model`` with the 33 error tokens.

    The tokens are added as special tokens (never split, never merged with
    text); the input (and, when untied, output) embeddings are resized, and
    the new rows are initialized by :func:`semantic_init` (or the mean
    embedding when ``semantic`` is False).

    Args:
        model: a ``transformers`` causal LM.
        tokenizer: its tokenizer (modified in place).
        backbone: a name for the checkpoint, stored in the table.
        semantic: initialize used tokens from their type descriptions.

    Returns:
        The :class:`TokenTable` of the extended vocabulary.
    """
    base_vocab = model.get_input_embeddings().weight.shape[0]
    tokens = taxonomy.all_tokens()
    tokenizer.add_tokens(tokens, special_tokens=True)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in tokens}
    if len(set(ids.values())) != len(tokens):
        raise ConfigError("the tokenizer did not give each error token its own id")
    new_size = max(max(ids.values()) + 1, base_vocab)
    if new_size != base_vocab:
        model.resize_token_embeddings(new_size, mean_resizing=False)
    table = TokenTable(ids=ids, base_vocab=base_vocab, backbone=backbone)
    init_token_rows(model, tokenizer, table, semantic=semantic)
    return table


def description_text(type_id: str) -> str:
    """Return the text whose embedding initializes a type's token: its name and description."""
    t = taxonomy.get(type_id)
    return f"{t.id.replace('_', ' ')}: {t.description}"


def init_token_rows(model, tokenizer, table: TokenTable, semantic: bool = True) -> None:
    """Initialize the error-token rows of the embedding (and untied output) matrices.

    Semantic initialization (ErrorLLM §3.1): the row of a used token is the
    mean of the backbone's input embeddings of the tokens of its type's
    description. Unused slots get the mean of the original vocabulary rows.

    Args:
        model: the resized causal LM.
        tokenizer: its tokenizer.
        table: where the tokens are.
        semantic: False puts every token at the mean embedding (the ablation).
    """
    import torch

    emb = model.get_input_embeddings().weight
    out = model.get_output_embeddings()
    tied = out is None or out.weight.data_ptr() == emb.data_ptr()
    with torch.no_grad():
        mean = emb[: table.base_vocab].mean(dim=0)
        used = dict((tid, type_id) for type_id, tid in table.used())
        for token, tid in table.ids.items():
            row = mean
            if semantic and tid in used:
                desc_ids = tokenizer(description_text(used[tid]), add_special_tokens=False)["input_ids"]
                desc_ids = [i for i in desc_ids if i < table.base_vocab]
                if desc_ids:
                    row = emb[torch.tensor(desc_ids)].mean(dim=0)
            emb[tid] = row
            if not tied:
                out.weight[tid] = out.weight[: table.base_vocab].mean(dim=0) if not semantic else row
