"""Replay: record model calls as JSONL cassettes and answer from them.

Each cassette line is one call: ``{"key", "kind", "backend", "model", "request", "response"}``.
The key is :func:`sqlmend.llm.base.call_key` of (backend kind, model, call kind, messages,
options, schema) -- the same key the call log uses -- so a cassette recorded against an
endpoint is replayed by a replay endpoint that names the same backend and model. Requests
hold messages and options only: no API keys, no headers. The schema is keyed without its
SQL-grammar marks (:func:`sqlmend.llm.sqlgrammar.unmark`): how an answer was decoded is the
recorded backend's business, so a cassette stays valid when a stage starts passing its
database.

Modes:

* ``record``  -- every call goes to the inner backend; the cassette is rewritten from scratch.
* ``replay``  -- answer from the cassette; a miss goes to the inner backend and is appended
  (or raises :class:`~sqlmend.errors.CassetteMiss` when there is no inner backend).
* ``strict``  -- answer from the cassette only; a miss raises ``CassetteMiss``, loudly.
* ``queue``   -- for tests: answer with ``answers`` in order, whatever was asked
  (``history`` keeps what was asked).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, Callable, Sequence

from sqlmend.errors import CassetteMiss, ConfigError
from sqlmend.llm.base import Backend, ChatOptions, ChatResult, Message, Usage, call_key
from sqlmend.llm.sqlgrammar import unmark

MODES = ("record", "replay", "strict", "queue")


class ReplayBackend(Backend):
    """A backend that replays (or records) calls from a JSONL cassette.

    Args:
        cassette: the JSONL file (None only in ``queue`` mode).
        mode: ``record`` | ``replay`` | ``strict`` | ``queue``.
        inner: the backend that really answers (or a zero-argument callable building it
            lazily); needed for ``record``, optional for ``replay``.
        backend: backend kind used in call keys (default: the inner backend's).
        model: model used in call keys (default: the inner backend's).
        answers: the texts ``queue`` mode answers with, in order.
        name: the endpoint name.
        log: the call log / cache.
    """

    kind = "replay"

    def __init__(self, cassette: str | os.PathLike | None = None, mode: str = "replay",
                 inner: Backend | Callable[[], Backend] | None = None, backend: str | None = None,
                 model: str | None = None, answers: Sequence[str] | None = None,
                 name: str | None = None, log=None):
        if mode not in MODES:
            raise ConfigError(f"replay mode {mode!r}: expected one of {', '.join(MODES)}")
        if mode == "record" and inner is None:
            raise ConfigError("replay mode 'record' needs an inner backend (of = \"endpoint\")")
        if mode != "queue" and cassette is None:
            raise ConfigError(f"replay mode {mode!r} needs a cassette file")
        self._inner = inner
        if isinstance(inner, Backend):
            backend, model = backend or inner.kind, model or inner.model
        super().__init__(model or "cassette", name=name, log=log)
        self.backend_kind = backend or "replay"
        self.mode = mode
        self.cassette = Path(cassette).expanduser() if cassette is not None else None
        self.answers = list(answers or [])
        self.history: list[dict[str, Any]] = []
        self._entries: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._fresh = mode == "record"
        if self.cassette is not None and mode != "record" and self.cassette.is_file():
            self._entries = {e["key"]: e for e in read_cassette(self.cassette)}
        elif mode == "strict":
            raise ConfigError(f"cassette {self.cassette} does not exist (strict mode)")

    @classmethod
    def scripted(cls, answers: Sequence[str], model: str = "scripted", log=None) -> "ReplayBackend":
        """A backend that answers with ``answers`` in order (``queue`` mode), for tests.

        Args:
            answers: the recorded answers.
            model: model name in logs.
            log: the call log (None: no logging, no cache).

        Returns:
            The backend; ``history`` lists the calls it received.
        """
        return cls(mode="queue", answers=answers, model=model, name=f"scripted:{model}", log=log)

    @property
    def identity(self) -> tuple[str, str]:
        return self.backend_kind, self.model

    @property
    def inner(self) -> Backend:
        """The backend that really answers."""
        if self._inner is None:
            raise CassetteMiss(f"{self.name}: no inner backend to answer a call missing from "
                               f"{self.cassette}")
        if not isinstance(self._inner, Backend):
            self._inner = self._inner()
        return self._inner

    def __len__(self) -> int:
        return len(self._entries)

    # --- the three calls ------------------------------------------------------
    def _chat(self, messages: list[Message], options: ChatOptions,
              json_schema: dict | None) -> ChatResult:
        request = {"messages": messages, "options": options.model_dump(mode="json"),
                   "schema": unmark(json_schema)}
        if self.mode == "queue":
            self.history.append(request)
            if not self.answers:
                raise CassetteMiss(f"{self.name}: no scripted answer left for call "
                                   f"{len(self.history)}")
            text = self.answers.pop(0)
            return ChatResult(text=text, usage=Usage(_words(messages), len(text.split())),
                              latency=0.0, model=self.model, backend=self.backend_kind,
                              raw={"scripted": True}, finish_reason="stop")
        response = self._answer("chat", request, lambda: self.inner._chat(messages, options,
                                                                            json_schema).to_dict())
        return ChatResult.from_dict(response)

    def _embed(self, texts: list[str]) -> tuple[Any, int]:
        import numpy as np

        def real() -> dict[str, Any]:
            vectors, tokens = self.inner._embed(texts)
            return {"vectors": np.asarray(vectors, dtype=np.float32).tolist(), "tokens": tokens}

        response = self._answer("embed", {"texts": texts}, real)
        return response["vectors"], response["tokens"]

    def _next_token_scores(self, prompt: str | list[Message], token_ids: list[int]
                           ) -> tuple[list[float], int]:
        def real() -> dict[str, Any]:
            scores, tokens = self.inner._next_token_scores(prompt, token_ids)
            return {"scores": scores, "tokens": tokens}

        response = self._answer("scores", {"prompt": prompt, "token_ids": token_ids}, real)
        return response["scores"], response["tokens"]

    def check(self) -> str:
        """Report the cassette (no call is made).

        Returns:
            A short description.
        """
        where = self.cassette if self.cassette else "scripted answers"
        return f"replay ({self.mode}) of {self.backend_kind}:{self.model}, {len(self)} calls in {where}"

    # --- cassette -------------------------------------------------------------
    def _answer(self, kind: str, request: dict[str, Any],
                real: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        key = call_key(self.backend_kind, self.model, kind, request)
        if self.mode != "record":
            with self._lock:
                entry = self._entries.get(key)
            if entry is not None:
                return entry["response"]
            if self.mode == "strict" or self._inner is None:
                preview = json.dumps(request, ensure_ascii=False)[:300]
                raise CassetteMiss(f"{self.name}: no recording in {self.cassette} for this {kind} "
                                   f"call (key {key[:12]}, {self.backend_kind}:{self.model}): {preview}")
        response = real()
        entry = {"key": key, "kind": kind, "backend": self.backend_kind, "model": self.model,
                 "request": request, "response": response}
        with self._lock:
            self._entries[key] = entry
            self.cassette.parent.mkdir(parents=True, exist_ok=True)
            with self.cassette.open("w" if self._fresh else "a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")
            self._fresh = False
        return response


def read_cassette(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Read a cassette file.

    Args:
        path: the JSONL file.

    Returns:
        Its entries, in order.

    Raises:
        ConfigError: a line is not a cassette entry.
    """
    entries = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                entry["key"], entry["response"]  # noqa: B018 - required fields
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise ConfigError(f"{path}:{n}: not a cassette entry ({exc})") from exc
            entries.append(entry)
    return entries


def _words(messages: list[Message]) -> int:
    return sum(len(str(m.get("content", "")).split()) for m in messages)
