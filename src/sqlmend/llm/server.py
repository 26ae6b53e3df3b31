"""A small OpenAI-protocol HTTP server for local backends (``sqlmend serve-model``).

Serves ``GET /v1/models``, ``POST /v1/chat/completions`` (no streaming) and
``POST /v1/embeddings`` from a chat backend and an embedding backend, so that any
OpenAI client -- sqlmend's own ``openai`` endpoints included -- can use the embedded
models. A ``response_format`` (``json_schema`` or ``json_object``) is honoured: the schema
is added to the system message, and a local (transformers) chat model decodes under it
(:mod:`sqlmend.llm.constrained`), so the answer is JSON of the schema by construction;
SQL-marked properties (:data:`sqlmend.llm.sqlgrammar.SQL_KEY`) follow the database's SQL
grammar. The call is logged with whether the answer was schema-valid.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from typing import Any

from sqlmend.errors import ModelError
from sqlmend.llm.base import Backend, ChatOptions
from sqlmend.llm.structured import instruction, validate, with_instruction


def create_app(chat: Backend | None, embedder: Backend | None = None) -> Any:
    """Build the FastAPI app.

    Args:
        chat: the backend answering chat completions (None: 404 for them).
        embedder: the backend answering embeddings (None: 404 for them).

    Returns:
        A ``fastapi.FastAPI`` app.
    """
    from fastapi import Body, FastAPI
    from fastapi.responses import JSONResponse

    app = FastAPI(title="sqlmend model server", version="1")

    def error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
        return JSONResponse({"error": {"message": message, "type": kind}}, status_code=status)

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        data = [{"id": b.model, "object": "model", "owned_by": "sqlmend", "created": 0}
                for b in (chat, embedder) if b is not None]
        return {"object": "list", "data": data}

    @app.post("/v1/chat/completions")
    def chat_completions(body: dict[str, Any] = Body(...)) -> Any:
        if chat is None:
            return error(404, "this server has no chat model")
        if body.get("stream"):
            return error(400, "streaming is not supported by this server")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return error(400, "'messages' must be a non-empty list")
        stop = body.get("stop") or []
        try:
            options = ChatOptions(
                temperature=body.get("temperature") if body.get("temperature") is not None else 0.0,
                max_tokens=body.get("max_completion_tokens") or body.get("max_tokens") or 256,
                top_p=body.get("top_p") if body.get("top_p") is not None else 1.0,
                seed=body.get("seed"), stop=[stop] if isinstance(stop, str) else list(stop))
        except ValueError as exc:
            return error(400, f"bad options: {exc}")
        msgs = [{"role": str(m.get("role", "user")), "content": _content(m.get("content"))}
                for m in messages]
        fmt = body.get("response_format") or {}
        if not isinstance(fmt, dict) or fmt.get("type", "text") not in ("text", "json_schema",
                                                                          "json_object"):
            return error(400, "response_format: expected type text, json_schema or json_object")
        schema = (fmt.get("json_schema") or {}).get("schema") if fmt.get("type") == "json_schema" \
            else ({"type": "object"} if fmt.get("type") == "json_object" else None)
        if fmt.get("type") == "json_schema" and not isinstance(schema, dict):
            return error(400, "response_format.json_schema.schema must be a JSON schema object")
        if schema is not None and not any(instruction(schema) in m["content"] for m in msgs):
            msgs = with_instruction(msgs, schema)
        check = (lambda text: validate(schema, text)) if schema is not None else None
        try:
            res = chat._logged_chat(msgs, options, schema, stage="server", check=check)
        except ModelError as exc:
            return error(500, str(exc), "server_error")
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion",
            "created": int(time.time()), "model": chat.model,
            "choices": [{"index": 0, "finish_reason": res.finish_reason or "stop",
                         "message": {"role": "assistant", "content": res.text}}],
            "usage": {"prompt_tokens": res.usage.tokens_in, "completion_tokens": res.usage.tokens_out,
                      "total_tokens": res.usage.tokens_in + res.usage.tokens_out},
        }

    @app.post("/v1/embeddings")
    def embeddings(body: dict[str, Any] = Body(...)) -> Any:
        if embedder is None:
            return error(404, "this server has no embedding model")
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return error(400, "'input' must be a string or a list of strings")
        try:
            vectors = embedder.embed(texts, stage="server") if texts else []
        except ModelError as exc:
            return error(500, str(exc), "server_error")
        tokens = sum(len(t.split()) for t in texts)
        return {"object": "list", "model": embedder.model,
                "data": [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]}
                         for i, v in enumerate(vectors)],
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}

    return app


def _content(content: Any) -> str:
    """Message content as text (the protocol allows a list of typed parts)."""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


class ServerThread:
    """Run an ASGI app with uvicorn in a background thread (tests, notebooks).

    Args:
        app: the ASGI app.
        host: the address to bind (loopback by default).
        port: the port; 0 picks a free one.

    Use as a context manager; ``url`` is the API root (``http://127.0.0.1:PORT/v1``).
    """

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0):
        import uvicorn

        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, port))
        self.host, self.port = host, self._sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1,
                                lifespan="off")
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self._sock]},
                                        daemon=True, name=f"sqlmend-server-{self.port}")

    @property
    def url(self) -> str:
        """The API root."""
        return f"http://{self.host}:{self.port}/v1"

    def start(self, wait: float = 20.0) -> "ServerThread":
        """Start serving; return once the server accepts connections.

        Args:
            wait: most seconds to wait for the start.

        Returns:
            self.

        Raises:
            ModelError: the server did not start in time.
        """
        self._thread.start()
        deadline = time.monotonic() + wait
        while not self.server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise ModelError(f"model server on {self.url} did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        """Stop serving and wait for the thread."""
        self.server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()

    def __enter__(self) -> "ServerThread":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
