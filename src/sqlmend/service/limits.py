"""Admission control of the service: bearer token, body size, bounded concurrency.

* :class:`AdmissionMiddleware` (ASGI) answers before the app runs: 401 without
  the right bearer token (``/health`` stays open for probes), 413 for a body
  over the limit (by ``Content-Length``, and counted while it streams in). It
  also gives each request an id (``X-Request-ID``) and reports every response
  (status, seconds) for metrics and the request log.
* :class:`Gate` bounds the requests in flight: ``capacity`` of them may hold a
  slot (running or queued for a thread); one more is refused at once, and the
  app answers 503 with ``Retry-After``. A slot is given back when the work
  itself ends, not when the client stops waiting, so work past a deadline still
  counts against the bound.
"""

from __future__ import annotations

import hmac
import itertools
import json
import re
import secrets
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.exceptions import HTTPException

#: Paths answered without a token (liveness/readiness probes).
OPEN_PATHS = frozenset({"/health"})

_REQUEST_ID = re.compile(rb"[A-Za-z0-9._-]{1,64}")
_ID_PREFIX = secrets.token_hex(6)
_ID_COUNTER = itertools.count(1)

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class Gate:
    """A counter of requests in flight with a hard capacity (thread-safe).

    >>> g = Gate(1)
    >>> g.enter(), g.enter()
    (True, False)
    >>> g.leave(); g.in_flight
    0
    """

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.in_flight = 0
        self._lock = threading.Lock()

    def enter(self) -> bool:
        """Take a slot; False when all ``capacity`` slots are taken."""
        with self._lock:
            if self.in_flight >= self.capacity:
                return False
            self.in_flight += 1
            return True

    def leave(self, *_: Any) -> None:
        """Give a slot back (usable as a future's done-callback)."""
        with self._lock:
            self.in_flight = max(0, self.in_flight - 1)


class BodyTooLarge(HTTPException):
    """The request body grew past the limit while it was read (a 413 wherever it surfaces)."""

    def __init__(self, limit: int):
        super().__init__(413, f"request body over {limit} bytes")


async def _answer(send: Send, status: int, message: str, headers: list[tuple[bytes, bytes]] = ()) -> None:
    body = json.dumps({"detail": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


class AdmissionMiddleware:
    """Admit a request (token, body size), give it an id, time it and report its end.

    Args:
        app: the ASGI app.
        token: the bearer token (None: no authentication).
        max_body_bytes: the largest body accepted.
        on_done: ``callback(scope, status, seconds)`` once the response is sent (or
            the request is refused): metrics and the request log. The route may
            leave fields for the log in ``scope["state"]["log"]``.
    """

    def __init__(self, app: Any, token: str | None, max_body_bytes: int,
                 on_done: Callable[[Scope, int, float], None] | None = None):
        self.app = app
        self.token = token.encode() if token else None
        self.max_body_bytes = max_body_bytes
        self.on_done = on_done or (lambda scope, status, seconds: None)

    def _authorized(self, scope: Scope) -> bool:
        if self.token is None or scope.get("path") in OPEN_PATHS:
            return True
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                scheme, _, given = value.partition(b" ")
                return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self.token)
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        headers = dict(scope.get("headers", []))
        rid = request_id(headers.get(b"x-request-id"))
        state = scope.setdefault("state", {})
        state["request_id"] = rid
        status = 500
        seen = 0

        async def send_with_id(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), (b"x-request-id", rid.encode())]
            await send(message)

        async def limited_receive() -> dict[str, Any]:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body_bytes:
                    raise BodyTooLarge(self.max_body_bytes)
            return message

        try:
            length = headers.get(b"content-length")
            if not self._authorized(scope):
                state["log"] = {"refused": "auth"}
                await _answer(send_with_id, 401, "missing or wrong bearer token",
                              [(b"www-authenticate", b'Bearer realm="sqlmend"')])
            elif length is not None and (not length.isdigit() or int(length) > self.max_body_bytes):
                state["log"] = {"refused": "body_size"}
                await _answer(send_with_id, 413, f"request body over {self.max_body_bytes} bytes")
            else:
                try:
                    await self.app(scope, limited_receive, send_with_id)
                except BodyTooLarge as exc:
                    state["log"] = {"refused": "body_size"}
                    if status == 500:
                        await _answer(send_with_id, 413, exc.detail)
        finally:
            self.on_done(scope, status, time.perf_counter() - start)


def request_id(given: bytes | None) -> str:
    """The client's ``X-Request-ID`` when it is a plain token (<= 64 of ``[A-Za-z0-9._-]``), else a new one."""
    if given and _REQUEST_ID.fullmatch(given):
        return given.decode()
    # a random prefix per process and a counter: unique across replicas, and no system call per
    # request (uuid4 reads os.urandom, measured at 0.4 ms a call on the shared test machine)
    return f"{_ID_PREFIX}-{next(_ID_COUNTER):x}"
