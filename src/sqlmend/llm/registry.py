"""The backend registry: backend kinds by name.

Built-in kinds register here exactly as third-party ones do, with :func:`register_kind`
(or the ``sqlmend.llm_backends`` entry-point group, loaded on first miss). An
OpenAI-compatible server is not a kind of its own: it is an endpoint of kind ``openai``
with its own ``base_url`` in the config file.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any, Callable

from sqlmend.errors import ConfigError
from sqlmend.llm.base import Backend

#: kind -> factory, or "module:Class" imported on first use (keeps heavy imports lazy).
_KINDS: dict[str, Callable[..., Backend] | str] = {
    "openai": "sqlmend.llm.openai_compat:OpenAIBackend",
    "transformers": "sqlmend.llm.local:TransformersBackend",
    "sentence-transformers": "sqlmend.llm.embedder:LocalEmbedder",
    "replay": "sqlmend.llm.replay:ReplayBackend",
}
_plugins_loaded = False


def register_kind(kind: str, factory: Callable[..., Backend] | str) -> None:
    """Register a backend kind.

    Args:
        kind: the name used as ``kind = "..."`` in the config file.
        factory: a Backend subclass / callable taking ``model=``, ``name=``, ``log=`` and the
            endpoint's other keys, or a ``"module:Class"`` string imported on first use.
    """
    _KINDS[kind] = factory


def kinds() -> list[str]:
    """The registered kinds."""
    _load_plugins()
    return sorted(_KINDS)


def factory(kind: str) -> Callable[..., Backend]:
    """The factory of a kind.

    Args:
        kind: a registered kind.

    Returns:
        The callable that builds the backend.

    Raises:
        ConfigError: unknown kind.
    """
    if kind not in _KINDS:
        _load_plugins()
    if kind not in _KINDS:
        raise ConfigError(f"unknown backend kind {kind!r}; known: {', '.join(sorted(_KINDS))}")
    target = _KINDS[kind]
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        target = getattr(importlib.import_module(module), attr)
        _KINDS[kind] = target
    return target


def create(kind: str, **params: Any) -> Backend:
    """Build a backend of a kind.

    Args:
        kind: a registered kind.
        **params: constructor arguments (``model``, ``name``, ``log``, endpoint keys).

    Returns:
        The backend.

    Raises:
        ConfigError: unknown kind or bad parameters.
    """
    build = factory(kind)
    try:
        return build(**params)
    except TypeError as exc:
        raise ConfigError(f"backend kind {kind!r}: bad endpoint settings: {exc}") from exc


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for ep in entry_points(group="sqlmend.llm_backends"):
        _KINDS.setdefault(ep.name, ep.value)
