"""The backend interface every language-model backend implements.

A backend answers three kinds of calls:

* :meth:`Backend.chat` -- chat completion, optionally asked for JSON that matches a schema
  (validated with pydantic, retried once with the validation error, else
  :class:`~sqlmend.errors.StructuredOutputError`);
* :meth:`Backend.embed` -- sentence embeddings, one row per text;
* :meth:`Backend.next_token_scores` -- log-probabilities of the next token, restricted to
  given token ids (what ErrorLLM's constrained error-token decoding needs).

Subclasses implement ``_chat`` / ``_embed`` / ``_next_token_scores``; the public methods
add the call log and cache (:mod:`sqlmend.llm.calllog`) and structured output
(:mod:`sqlmend.llm.structured`).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from sqlmend.errors import ModelError, StructuredOutputError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from sqlmend.llm.calllog import CallLog
    from sqlmend.types import Schema

#: A chat message: ``{"role": "system" | "user" | "assistant", "content": "..."}``.
Message = dict[str, str]


class ChatOptions(BaseModel):
    """Options of one chat call. Unknown options are refused (``extra="forbid"``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float = Field(0.0, ge=0.0, le=2.0, description="0 = greedy, deterministic")
    max_tokens: int = Field(256, ge=1, le=32_768, description="most tokens to generate")
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    seed: int | None = Field(None, description="sampling seed, where the backend supports one")
    stop: list[str] = Field(default_factory=list, description="stop generating at these strings")

    @classmethod
    def coerce(cls, options: "ChatOptions | dict[str, Any] | None") -> "ChatOptions":
        """Accept an options object, a plain dict or None (the defaults).

        Args:
            options: what the caller passed.

        Returns:
            A :class:`ChatOptions`.
        """
        if options is None:
            return cls()
        if isinstance(options, cls):
            return options
        return cls.model_validate(options)

    @property
    def deterministic(self) -> bool:
        """True when the same call must give the same answer (so it may be cached)."""
        return self.temperature == 0.0 or self.seed is not None


@dataclass
class Usage:
    """Tokens a call consumed."""

    tokens_in: int = 0
    tokens_out: int = 0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(self.tokens_in + other.tokens_in, self.tokens_out + other.tokens_out)


@dataclass
class ChatResult:
    """What a chat call returned.

    ``parsed`` is the validated object when a schema was asked for (a pydantic model
    instance for a model class, a dict for a JSON-schema dict), else None. ``raw`` is
    the backend's own response as JSON-able data (no keys). ``attempts`` counts the
    calls made (2 when structured output needed its retry); ``usage`` sums them.
    """

    text: str
    usage: Usage = field(default_factory=Usage)
    latency: float = 0.0  # seconds, of the model call(s); 0 when answered from the cache
    raw: dict[str, Any] = field(default_factory=dict)
    parsed: Any = None
    model: str = ""
    backend: str = ""
    cached: bool = False
    attempts: int = 1
    finish_reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (``parsed`` dumped when it is a pydantic model)."""
        d = asdict(self)
        if isinstance(self.parsed, BaseModel):
            d["parsed"] = self.parsed.model_dump(mode="json")
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ChatResult":
        """Inverse of :meth:`to_dict` (``parsed`` stays a dict).

        Args:
            d: a dict written by :meth:`to_dict`.

        Returns:
            The result.
        """
        d = dict(d)
        d["usage"] = Usage(**d.get("usage") or {})
        return cls(**d)


def spent(outcome: Any) -> tuple[int, int, int]:
    """What a chat call cost: its calls and tokens, from its answer or its schema failure.

    A :class:`~sqlmend.errors.StructuredOutputError` carries the attempts and tokens of
    every call made before it was raised; an answer (a :class:`ChatResult`, or anything
    with ``attempts`` and ``usage``) carries its own. Objects without them count one call
    and no tokens.

    Args:
        outcome: the answer, or the StructuredOutputError raised instead of one.

    Returns:
        ``(calls, tokens_in, tokens_out)``.

    >>> spent(ChatResult("{}", Usage(10, 3), attempts=2))
    (2, 10, 3)
    >>> spent(StructuredOutputError("bad", attempts=2, tokens_in=7, tokens_out=4))
    (2, 7, 4)
    """
    if isinstance(outcome, StructuredOutputError):
        return outcome.attempts, outcome.tokens_in, outcome.tokens_out
    usage = getattr(outcome, "usage", None)
    return (int(getattr(outcome, "attempts", 1) or 1), int(getattr(usage, "tokens_in", 0) or 0),
            int(getattr(usage, "tokens_out", 0) or 0))


def call_key(backend: str, model: str, kind: str, payload: dict[str, Any]) -> str:
    """The stable hash that keys the cache and the replay cassettes.

    Args:
        backend: backend kind (``openai``, ``transformers``, ...).
        model: model name or path as configured.
        kind: ``chat`` | ``embed`` | ``scores``.
        payload: the call's messages, options, schema, texts, ... (JSON-able).

    Returns:
        A hex SHA-256 digest.
    """
    blob = json.dumps({"backend": backend, "model": model, "kind": kind, **payload},
                      sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class Backend:
    """Base class of language-model backends.

    Attributes:
        kind: the registry name of the backend class (``openai``, ``transformers``, ...).
        model: the model name or path.
        name: the endpoint name it was configured under (``local-smollm2``, ...).
        log: the call log and cache every call goes through, or None for none.
    """

    kind: str = "base"

    def __init__(self, model: str, name: str | None = None, log: "CallLog | None" = None):
        self.model = model
        self.name = name or f"{self.kind}:{model}"
        self.log = log

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, model={self.model!r})"

    # --- identity used by the cache and the cassettes --------------------
    @property
    def identity(self) -> tuple[str, str]:
        """``(backend kind, model)`` as used in call keys."""
        return self.kind, self.model

    # --- the public calls -------------------------------------------------
    def chat(self, messages: Sequence[Message], options: ChatOptions | dict | None = None,
             schema: type[BaseModel] | dict | None = None, stage: str = "default",
             sql_schema: "Schema | None" = None, sql_field: str = "sql",
             sql_original: str | list[str] | None = None) -> ChatResult:
        """Complete a chat.

        Args:
            messages: the conversation, ``[{"role": ..., "content": ...}, ...]``.
            options: :class:`ChatOptions` or a dict of them.
            schema: ask for JSON matching this pydantic model class or JSON-schema dict;
                the answer is validated and retried once with the validation error.
                Local models decode under the schema (:mod:`sqlmend.llm.constrained`).
            stage: the pipeline stage making the call (logged).
            sql_schema: with ``schema``: the database the answer's SQL is for; a local
                model then writes the string property ``sql_field`` under the grammar of
                one SELECT over these tables and columns (:mod:`sqlmend.llm.sqlgrammar`).
            sql_field: the property holding the SQL.
            sql_original: with ``sql_schema``: the SQL being rewritten; the grammar's
                FROM-scopes are then its tables, give or take one, and every column is
                one of the chosen scope's (:func:`sqlmend.llm.sqlgrammar.scopes`).

        Returns:
            A :class:`ChatResult`; ``parsed`` holds the validated object when a schema was given.

        Raises:
            ModelError: the backend failed (ModelTimeout for a time-out).
            StructuredOutputError: the answer did not match ``schema``, even after the retry.
        """
        from sqlmend.llm import sqlgrammar
        from sqlmend.llm.structured import chat_structured, json_schema_of

        opts = ChatOptions.coerce(options)
        msgs = [dict(m) for m in messages]
        if schema is None:
            return self._logged_chat(msgs, opts, None, stage)
        js = json_schema_of(schema)
        if sql_schema is not None and sql_schema.tables:
            js = sqlgrammar.mark(js, sql_schema, sql_field, original=sql_original)
        return chat_structured(self, msgs, opts, schema, stage, json_schema=js)

    def embed(self, texts: Sequence[str], stage: str = "embedder") -> "np.ndarray":
        """Embed texts.

        Args:
            texts: the texts.
            stage: the pipeline stage making the call (logged).

        Returns:
            A float32 array of shape ``(len(texts), dim)``.

        Raises:
            ModelError: the backend cannot embed or failed.
        """
        import numpy as np

        texts = [str(t) for t in texts]
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        key = call_key(*self.identity, "embed", {"texts": texts})
        hit = self.log.cache_get(key) if self.log else None
        if hit is not None:
            self._record(stage, "embed", key, Usage(hit.get("tokens", 0), 0), 0.0, True)
            return np.asarray(hit["vectors"], dtype=np.float32)
        t0 = time.perf_counter()
        try:
            vectors, tokens = self._embed(texts)
        except ModelError as exc:
            self._record(stage, "embed", key, Usage(), time.perf_counter() - t0, False, str(exc))
            raise
        latency = time.perf_counter() - t0
        vectors = np.asarray(vectors, dtype=np.float32)
        self._record(stage, "embed", key, Usage(tokens, 0), latency, False)
        if self.log:
            self.log.cache_put(key, "embed", {"vectors": vectors.tolist(), "tokens": tokens})
        return vectors

    def next_token_scores(self, prompt: str | Sequence[Message], token_ids: Sequence[int],
                          stage: str = "detector") -> list[float]:
        """Log-probabilities of the next token, for the given token ids only.

        Args:
            prompt: a raw prompt string, or chat messages (rendered with the chat template
                and the generation prompt).
            token_ids: the vocabulary ids to score (e.g. the error tokens).

        Returns:
            One log-probability (over the full vocabulary) per id, in the order given.

        Raises:
            ModelError: the backend cannot score tokens.
        """
        ids = [int(i) for i in token_ids]
        payload = {"prompt": prompt if isinstance(prompt, str) else [dict(m) for m in prompt],
                   "token_ids": ids}
        key = call_key(*self.identity, "scores", payload)
        hit = self.log.cache_get(key) if self.log else None
        if hit is not None:
            self._record(stage, "scores", key, Usage(hit.get("tokens", 0), 0), 0.0, True)
            return list(hit["scores"])
        t0 = time.perf_counter()
        try:
            scores, tokens = self._next_token_scores(payload["prompt"], ids)
        except ModelError as exc:
            self._record(stage, "scores", key, Usage(), time.perf_counter() - t0, False, str(exc))
            raise
        self._record(stage, "scores", key, Usage(tokens, 0), time.perf_counter() - t0, False)
        if self.log:
            self.log.cache_put(key, "scores", {"scores": scores, "tokens": tokens})
        return list(scores)

    def check(self) -> str:
        """Make one tiny real call and say what answered (used by ``sqlmend models --check``).

        Returns:
            A short description of the answer.

        Raises:
            ModelError: the endpoint does not answer.
        """
        r = self._chat([{"role": "user", "content": "Say OK."}], ChatOptions(max_tokens=4), None)
        return f"chat ok ({r.usage.tokens_out} tokens, {r.latency:.2f}s): {r.text.strip()[:30]!r}"

    # --- logged chat (used by chat and structured output) ----------------
    def _logged_chat(self, messages: list[Message], opts: ChatOptions,
                     json_schema: dict | None, stage: str,
                     check: Callable[[str], Any] | None = None, attempt: int = 1) -> ChatResult:
        """One chat call through the cache and the call log.

        ``check`` (given for a structured call) validates the answer: its value becomes
        ``parsed``; when it raises ValueError, ``parsed`` stays None and the error is in
        ``raw["schema_error"]``. Either way the log row says whether the answer was valid.
        """
        payload = {"messages": messages, "options": opts.model_dump(mode="json"), "schema": json_schema}
        decoding = self._decoding(json_schema)
        if decoding:  # a constrained answer is not the free one: it has its own cache entry
            payload["decoding"] = decoding
        key = call_key(*self.identity, "chat", payload)
        use_cache = self.log is not None and opts.deterministic
        hit = self.log.cache_get(key) if use_cache else None
        if hit is not None:
            res = ChatResult.from_dict(hit)
            res.cached, res.latency = True, 0.0
            valid = _checked(res, check)
            self._record(stage, "chat", key, res.usage, 0.0, True, schema_valid=valid,
                         attempt=attempt, constrained=res.raw.get("constrained"))
            return res
        t0 = time.perf_counter()
        try:
            res = self._chat(messages, opts, json_schema)
        except ModelError as exc:
            self._record(stage, "chat", key, Usage(), time.perf_counter() - t0, False, str(exc),
                         schema_valid=False if check else None, attempt=attempt)
            raise
        res.latency = res.latency or (time.perf_counter() - t0)
        res.backend, res.model = res.backend or self.kind, res.model or self.model
        if use_cache:
            self.log.cache_put(key, "chat", res.to_dict())
        valid = _checked(res, check)
        self._record(stage, "chat", key, res.usage, res.latency, False, schema_valid=valid,
                     attempt=attempt, constrained=res.raw.get("constrained"))
        return res

    def _record(self, stage: str, kind: str, key: str, usage: Usage, latency: float,
                cache_hit: bool, error: str | None = None, **structured: Any) -> None:
        if self.log is not None:
            self.log.record(stage=stage, endpoint=self.name, backend=self.kind, model=self.model,
                            kind=kind, prompt_hash=key, usage=usage, latency=latency,
                            cache_hit=cache_hit, error=error, **structured)

    # --- what subclasses implement ----------------------------------------
    def _decoding(self, json_schema: dict | None) -> str | None:
        """How this backend holds decoding to ``json_schema`` when it does it itself
        (``llguidance``), else None. Part of the call key."""
        return None

    def _chat(self, messages: list[Message], options: ChatOptions,
              json_schema: dict | None) -> ChatResult:
        raise ModelError(f"{self.name} ({self.kind}) does not do chat completion")

    def _embed(self, texts: list[str]) -> tuple[Any, int]:
        """Return ``(vectors, tokens_in)``."""
        raise ModelError(f"{self.name} ({self.kind}) does not embed")

    def _next_token_scores(self, prompt: str | list[Message], token_ids: list[int]
                           ) -> tuple[list[float], int]:
        """Return ``(log-probabilities, prompt tokens)``."""
        raise ModelError(f"{self.name} ({self.kind}) cannot score next tokens")


def _checked(res: ChatResult, check: Callable[[str], Any] | None) -> bool | None:
    """Validate a structured answer in place (``parsed`` or ``raw["schema_error"]``)."""
    if check is None:
        return None
    try:
        res.parsed = check(res.text)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        res.parsed = None
        res.raw = {**res.raw, "schema_error": str(exc)}
        return False
    return True
