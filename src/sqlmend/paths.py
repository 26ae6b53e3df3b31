"""Where sqlmend finds benchmark data and keeps its caches.

* Benchmark data: ``$SQLMEND_DATA``, else the first ``shared/data`` found
  beside the current directory or one of its parents (the layout of a
  checkout with ``../shared`` next to it).
* Caches (value indexes, gold results, converted models, call log):
  ``$SQLMEND_CACHE``, else ``~/.cache/sqlmend``.
"""

from __future__ import annotations

import os
from pathlib import Path

from sqlmend.errors import ConfigError


def data_root(explicit: str | os.PathLike | None = None) -> Path:
    """Return the benchmark data folder (the one holding ``spider/``).

    Args:
        explicit: a folder given by the user (``--data-root``); wins over everything.

    Raises:
        ConfigError: no data folder can be found.
    """
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_dir():
            raise ConfigError(f"data root {path} is not a folder")
        return path
    env = os.environ.get("SQLMEND_DATA")
    if env:
        path = Path(env).expanduser()
        if not path.is_dir():
            raise ConfigError(f"SQLMEND_DATA={env} is not a folder")
        return path
    for base in (Path.cwd(), *Path.cwd().parents, Path(__file__).resolve().parent):
        for candidate in (base / "shared" / "data", base.parent / "shared" / "data"):
            if (candidate / "spider").is_dir():
                return candidate
    raise ConfigError("benchmark data not found: set SQLMEND_DATA or pass --data-root "
                      "(the folder that holds spider/)")


def cache_dir(*parts: str) -> Path:
    """Return (and create) a folder under sqlmend's cache root."""
    root = Path(os.environ.get("SQLMEND_CACHE") or Path.home() / ".cache" / "sqlmend").expanduser()
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path
