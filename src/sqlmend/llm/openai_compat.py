"""Any OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp server, LM Studio, ...)
through the official ``openai`` SDK.

Servers are added by configuration (``kind = "openai"`` with a ``base_url``), not by
classes. The key is read from an environment variable named by ``api_key_env`` and never
stored (not in the config, the call log, nor the cassettes). Calls are retried with
exponential backoff on 429, 5xx, connection errors and time-outs (honouring
``Retry-After``), and at most ``concurrency`` calls are in flight per endpoint.

Structured calls send the JSON schema as ``response_format`` (OpenAI structured outputs;
vLLM, llama.cpp, Ollama and ``sqlmend serve-model`` decode under it). With
``json_mode = "auto"`` (the default) a server that rejects ``response_format`` is
detected on the first structured call -- the call is repeated without it -- and
remembered for the endpoint (:func:`response_format_support`); its later calls rely on
the instruction and the parse-and-retry of :mod:`sqlmend.llm.structured`.
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
from typing import Any, Callable

from sqlmend.errors import ConfigError, ModelError, ModelTimeout
from sqlmend.llm.base import Backend, ChatOptions, ChatResult, Message, Usage
from sqlmend.llm.sqlgrammar import unmark

#: Sent when the server needs no key (local servers) and the variable is unset.
NO_KEY = "sk-no-key-required"
JSON_MODES = ("auto", "schema", "object", "none")

#: ``(base_url, model) -> False`` once a server rejected ``response_format`` (this process).
_RESPONSE_FORMAT: dict[tuple[str, str], bool] = {}
_RESPONSE_FORMAT_LOCK = threading.Lock()


def response_format_support(base_url: str | None, model: str) -> bool | None:
    """What is known of an endpoint's ``response_format`` support in this process.

    Args:
        base_url: the endpoint's API root (None: api.openai.com).
        model: the model name.

    Returns:
        True (it accepted one), False (it rejected one), None (not tried yet).
    """
    with _RESPONSE_FORMAT_LOCK:
        return _RESPONSE_FORMAT.get((base_url or "", model))


def _remember(base_url: str | None, model: str, supported: bool) -> None:
    with _RESPONSE_FORMAT_LOCK:
        _RESPONSE_FORMAT[(base_url or "", model)] = supported


class OpenAIBackend(Backend):
    """A model behind an OpenAI-protocol HTTP API.

    Args:
        model: the model name the server knows.
        base_url: the API root (``http://localhost:8000/v1``); None for api.openai.com.
        api_key_env: the environment variable holding the key.
        timeout: seconds per HTTP request.
        max_retries: retries after the first attempt (429 / 5xx / connection / time-out).
        backoff: first backoff delay in seconds (doubled each retry, with jitter).
        max_backoff: longest delay between retries.
        concurrency: most calls in flight at once through this endpoint.
        json_mode: how a schema is requested: ``auto`` (``response_format`` json_schema,
            dropped for good when the server rejects it), ``schema`` (always json_schema),
            ``object`` (json_object) or ``none`` (prompt only); validation happens either way.
        send_sql_grammar: keep the SQL-grammar marks
            (:data:`sqlmend.llm.sqlgrammar.SQL_KEY`) in the schema sent, for a server that
            reads them (``sqlmend serve-model``); other servers get a plain JSON schema.
        embed_model: model name for embeddings (default: ``model``).
        max_tokens_param: ``max_tokens`` or ``max_completion_tokens`` (newer OpenAI models).
        name: the endpoint name.
        log: the call log / cache.
    """

    kind = "openai"

    def __init__(self, model: str, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 timeout: float = 60.0, max_retries: int = 3, backoff: float = 1.0,
                 max_backoff: float = 30.0, concurrency: int = 4, json_mode: str = "auto",
                 embed_model: str | None = None, max_tokens_param: str = "max_tokens",
                 send_sql_grammar: bool = False, name: str | None = None, log=None):
        super().__init__(model, name=name, log=log)
        if json_mode not in JSON_MODES:
            raise ConfigError(f"json_mode {json_mode!r}: expected {', '.join(JSON_MODES)}")
        self.send_sql_grammar = bool(send_sql_grammar)
        self.base_url, self.api_key_env = base_url, api_key_env
        self.timeout, self.max_retries = float(timeout), int(max_retries)
        self.backoff, self.max_backoff = float(backoff), float(max_backoff)
        self.json_mode, self.embed_model = json_mode, embed_model or model
        self.max_tokens_param = max_tokens_param
        self._sem = threading.BoundedSemaphore(max(1, int(concurrency)))
        self._client: Any = None
        self._client_lock = threading.Lock()

    @property
    def client(self) -> Any:
        """The ``openai.OpenAI`` client (built on first use; the SDK's own retries are off)."""
        if self._client is None:
            with self._client_lock:
                if self._client is None:
                    import openai

                    key = os.environ.get(self.api_key_env) if self.api_key_env else None
                    if not key and self.base_url is None:
                        raise ConfigError(f"{self.name}: set ${self.api_key_env} to the API key")
                    self._client = openai.OpenAI(api_key=key or NO_KEY, base_url=self.base_url,
                                                 timeout=self.timeout, max_retries=0)
        return self._client

    # --- retries ----------------------------------------------------------------
    def _call(self, fn: Callable[[], Any]) -> Any:
        import openai

        last: Exception | None = None
        for attempt in range(self.max_retries + 1):
            delay = min(self.max_backoff, self.backoff * 2 ** attempt) * (0.5 + random.random() / 2)
            try:
                with self._sem:
                    return fn()
            except openai.APITimeoutError as exc:
                last = ModelTimeout(f"{self.name}: no answer within {self.timeout:g}s "
                                    f"(attempt {attempt + 1})")
                last.__cause__ = exc
            except openai.APIConnectionError as exc:
                last = ModelError(f"{self.name}: cannot reach {self.base_url or 'api.openai.com'}: {exc}")
            except openai.APIStatusError as exc:
                status = exc.status_code
                if status != 429 and status < 500:
                    raise _Rejected(f"{self.name}: HTTP {status}: {_message(exc)}") from exc
                last = ModelError(f"{self.name}: HTTP {status}: {_message(exc)}")
                retry_after = _retry_after(exc)
                if retry_after is not None:
                    delay = min(self.max_backoff, retry_after)
            except openai.OpenAIError as exc:  # bad response body and the like
                raise ModelError(f"{self.name}: {exc}") from exc
            except ValueError as exc:  # a 200 whose body is not JSON (a proxy's page, a broken server)
                raise ModelError(f"{self.name}: the answer is not a completion ({type(exc).__name__}: "
                                 f"{exc})") from exc
            if attempt < self.max_retries:
                time.sleep(delay)
        assert last is not None
        raise last

    # --- calls ------------------------------------------------------------------
    def _chat(self, messages: list[Message], options: ChatOptions,
              json_schema: dict | None) -> ChatResult:
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages,
                                  "temperature": options.temperature, "top_p": options.top_p,
                                  self.max_tokens_param: options.max_tokens}
        if options.seed is not None:
            kwargs["seed"] = options.seed
        if options.stop:
            kwargs["stop"] = list(options.stop)
        fmt = self._response_format(json_schema)
        if fmt is not None:
            kwargs["response_format"] = fmt
        t0 = time.perf_counter()
        try:
            resp = self._call(lambda: self.client.chat.completions.create(**kwargs))
        except _Rejected:
            if fmt is None or self.json_mode != "auto":
                raise
            # the server refuses response_format: ask once more without it, and remember
            del kwargs["response_format"]
            fmt = None
            resp = self._call(lambda: self.client.chat.completions.create(**kwargs))
            _remember(self.base_url, self.model, False)
        else:
            if fmt is not None and fmt["type"] == "json_schema":
                _remember(self.base_url, self.model, True)
        latency = time.perf_counter() - t0
        if not getattr(resp, "choices", None):
            raise ModelError(f"{self.name}: the response has no choices")
        choice = resp.choices[0]
        usage = Usage(resp.usage.prompt_tokens or 0, resp.usage.completion_tokens or 0) \
            if resp.usage else Usage()
        raw = resp.model_dump(mode="json")
        if fmt is not None:
            raw["constrained"] = "response_format"
        return ChatResult(text=choice.message.content or "", usage=usage, latency=latency,
                          raw=raw, model=self.model, backend=self.kind,
                          finish_reason=choice.finish_reason or "")

    def _response_format(self, json_schema: dict | None) -> dict[str, Any] | None:
        """The ``response_format`` to send for a schema, or None."""
        if json_schema is None or self.json_mode == "none":
            return None
        if self.json_mode == "object":
            return {"type": "json_object"}
        if self.json_mode == "auto" and response_format_support(self.base_url, self.model) is False:
            return None
        sent = json_schema if self.send_sql_grammar else unmark(json_schema)
        return {"type": "json_schema", "json_schema": {
            "name": _schema_name(json_schema), "schema": sent}}

    def _embed(self, texts: list[str]) -> tuple[Any, int]:
        resp = self._call(lambda: self.client.embeddings.create(model=self.embed_model, input=texts))
        data = sorted(resp.data, key=lambda d: d.index)
        if len(data) != len(texts):
            raise ModelError(f"{self.name}: {len(data)} embeddings for {len(texts)} texts")
        tokens = resp.usage.prompt_tokens if getattr(resp, "usage", None) else 0
        return [d.embedding for d in data], int(tokens or 0)

    def _next_token_scores(self, prompt, token_ids):
        raise ModelError(f"{self.name}: the OpenAI protocol returns tokens as text, not vocabulary "
                         "ids; next-token scores need a local (transformers) endpoint")

    def check(self) -> str:
        """List the server's models, then make one tiny chat call.

        Returns:
            A short description.
        """
        try:
            listed = [m.id for m in self._call(lambda: self.client.models.list()).data]
        except ModelError:
            listed = []
        note = "" if not listed or self.model in listed else f" (server lists {listed[:5]})"
        return super().check() + note


class _Rejected(ModelError):
    """The server refused the request (HTTP 4xx other than 429): not worth retrying as is."""


def _schema_name(json_schema: dict) -> str:
    """The schema's name as OpenAI wants it: ``[a-zA-Z0-9_-]{1,64}``."""
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", str(json_schema.get("title") or "answer"))
    return name[:64] or "answer"


def _message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:300]
    return str(exc)[:300]


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None
