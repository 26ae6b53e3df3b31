"""Run the service: in the foreground (``sqlmend serve``) or in a background thread (tests, benchmarks).

uvicorn runs with its fastest parts when installed (uvloop event loop,
httptools parser) and without its own access log: the service writes one JSON
line per request itself.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Any

from sqlmend.pipeline import PipelineConfig
from sqlmend.service.settings import ServiceSettings


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _uvicorn_options(host: str, port: int) -> dict[str, Any]:
    return {"host": host, "port": port, "loop": "auto", "http": "auto", "access_log": False,
            "log_level": "warning", "timeout_keep_alive": 30, "backlog": 2048}


def serve(config: PipelineConfig, settings: ServiceSettings, host: str = "127.0.0.1", port: int = 8080,
          workers: int = 1, db_root: str | None = None) -> None:
    """Serve in the foreground until interrupted.

    Args:
        config: the pipeline configuration.
        settings: token, limits, logging.
        host: address to bind.
        port: port.
        db_root: the folder of ``<db_id>/<db_id>.sqlite`` (default: Spider's of the data root).
        workers: processes (uvicorn workers, each with its own pipeline, gate and
            metrics); for several machines run replicas instead (docs/scale.md).
    """
    import uvicorn

    from sqlmend.service.app import CONFIG_ENV, DB_ROOT_ENV, SETTINGS_ENV, check_logins, create_app, default_db_root
    from sqlmend.service.observe import configure_logging

    if settings.log_requests:
        configure_logging()
    if workers > 1 and config.require_read_only_login:  # refused before the workers start
        check_logins(config, db_root or default_db_root())
    if workers <= 1:
        uvicorn.run(create_app(config, settings=settings, db_root=db_root), **_uvicorn_options(host, port))
        return
    os.environ[CONFIG_ENV] = config.model_dump_json()
    os.environ[SETTINGS_ENV] = settings.model_dump_json()
    os.environ[DB_ROOT_ENV] = db_root or ""
    uvicorn.run("sqlmend.service.app:app_from_env", factory=True, workers=workers,
                **_uvicorn_options(host, port))


class BackgroundServer:
    """An app served on loopback from a thread of this process (a real socket, real HTTP).

    >>> with BackgroundServer(app) as server:          # doctest: +SKIP
    ...     httpx.get(server.url + "/health")
    """

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int | None = None):
        import uvicorn

        self.host, self.port = host, port or free_port(host)
        self.server = uvicorn.Server(uvicorn.Config(app, **_uvicorn_options(self.host, self.port)))
        self.thread = threading.Thread(target=self.server.run, name="sqlmend-test-server", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def __enter__(self) -> BackgroundServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the service did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
