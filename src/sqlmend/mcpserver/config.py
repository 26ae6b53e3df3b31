"""The databases of ``sqlmend mcp``: configured by whoever starts the server, never by the agent.

Two forms, which may be combined (a name given twice is an error):

* ``--db NAME=TARGET`` (repeatable), or ``--db TARGET`` named after the file's stem or the
  URL's database (:func:`sqlmend.api.database_name`);
* ``--config FILE``, a TOML file whose ``[databases]`` table maps names to targets; a relative
  path is read from the file's folder::

      require_read_only_login = true        # optional: refuse a login that may write
      allow_functions = ["shop.net_price"]   # optional: your own pure functions

      [databases]
      concert = "spider/database/concert_singer/concert_singer.sqlite"
      shop = "postgresql://reader@db.internal/shop"
      erp = { url = "postgresql://reader@db.internal/erp", schemas = ["sales", "hr"] }

  A database given as a table takes ``url`` and ``schemas``, the schema filter (only those schemas
  are read: a database with hundreds of them).

A target is what :class:`sqlmend.Corrector` takes: a SQLite path, ``postgresql://...``,
``duckdb:///...``. Every database gets one Corrector, opened when the server starts (a missing
one stops it there) and kept open; all share one set of stages (:class:`sqlmend.api.Correctors`).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

from sqlmend.api import Corrector, Correctors, check_config, database_name
from sqlmend.db import with_schemas
from sqlmend.errors import ConfigError, SqlmendError
from sqlmend.pipeline import Pipeline, PipelineConfig

#: What a database name may be: what an agent types and a log line shows.
NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def parse_db(spec: str) -> tuple[str, str]:
    """``NAME=TARGET`` or a bare ``TARGET`` as ``(name, target)``.

    >>> parse_db("concert=dbs/concert_singer.sqlite")
    ('concert', 'dbs/concert_singer.sqlite')
    >>> parse_db("postgresql://h/shop?sslmode=require")
    ('shop', 'postgresql://h/shop?sslmode=require')

    Raises:
        ConfigError: an empty target, or a name that is not a plain word.
    """
    name, sep, target = spec.partition("=")
    if not sep or "/" in name or ":" in name:  # no name: '=' belongs to the target (a URL's query)
        name, target = database_name(spec), spec
    if not target.strip():
        raise ConfigError(f"--db {spec!r}: expected NAME=PATH_OR_URL")
    if not NAME.fullmatch(name):
        raise ConfigError(f"--db {spec!r}: a database name is 1-64 of letters, digits, '_', '.', '-'")
    return name, target


#: The keys a configuration file may hold beside ``[databases]``, and their types.
SETTINGS = {"require_read_only_login": bool, "allow_functions": list}


def _load(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None


def config_settings(path: str | Path) -> dict:
    """The settings of a TOML file beside its databases: ``require_read_only_login`` (refuse a login that may
    write) and ``allow_functions`` (functions beside the read-only list), those it sets.

    Raises:
        ConfigError: the file cannot be read, or a setting of the wrong type.
    """
    path = Path(path)
    data = _load(path)
    out = {}
    for key, kind in SETTINGS.items():
        if key in data:
            if not isinstance(data[key], kind) or (kind is list and not all(isinstance(x, str) for x in data[key])):
                raise ConfigError(f"{path}: {key} must be {'true or false' if kind is bool else 'a list of names'}")
            out[key] = data[key]
    return out


def _with_filter(path: Path, name: str, entry: dict) -> str:
    """A database given as a table, ``{ url = "...", schemas = ["sales", "hr"] }``, as its target."""
    unknown = sorted(set(entry) - {"url", "schemas"})
    if unknown or not isinstance(entry.get("url"), str):
        raise ConfigError(f"{path}: databases.{name} takes url (a string) and schemas (a list of names)"
                          + (f"; unknown keys: {', '.join(unknown)}" if unknown else ""))
    return with_schemas(entry["url"], entry.get("schemas"))


def read_config(path: str | Path) -> dict[str, str]:
    """The ``[databases]`` of a TOML file, relative paths read from the file's folder.

    Raises:
        ConfigError: the file cannot be read, is not TOML, has no ``[databases]`` or other tables.
    """
    path = Path(path)
    data = _load(path)
    unknown = sorted(set(data) - {"databases", *SETTINGS})
    dbs = data.get("databases")
    if unknown or not isinstance(dbs, dict) or not dbs:
        raise ConfigError(f"{path}: expected a [databases] table of NAME = \"PATH_OR_URL\" lines"
                          + (f" (unknown keys: {', '.join(unknown)})" if unknown else ""))
    out = {}
    for name, target in dbs.items():
        if isinstance(target, dict):
            target = _with_filter(path, name, target)
        if not isinstance(target, str):
            raise ConfigError(f"{path}: databases.{name} must be a string (a path or URL) or a table "
                              "{ url = \"...\", schemas = [...] }")
        if "://" not in target and not Path(target).is_absolute():
            target = str(path.parent / target)
        out[parse_db(f"{name}={target}")[0]] = target
    return out


def databases(specs: Iterable[str] = (), config: str | Path | None = None) -> dict[str, str]:
    """The configured databases, ``{name: target}``: the config file's first, then each ``--db``.

    Raises:
        ConfigError: none given, a name given twice, or a bad spec or file.
    """
    out = read_config(config) if config else {}
    for spec in specs:
        name, target = parse_db(spec)
        if name in out:
            raise ConfigError(f"database {name!r} is configured twice ({out[name]!r} and {target!r})")
        out[name] = target
    if not out:
        raise ConfigError("no database configured: give --db NAME=PATH_OR_URL or --config FILE")
    return out


def open_databases(targets: Mapping[str, str], config: PipelineConfig) -> tuple[Correctors, dict[str, Corrector]]:
    """One open Corrector per database, all on one pipeline built once.

    Returns:
        The :class:`~sqlmend.api.Correctors` holding them (close it to close them all) and
        ``{name: Corrector}``, what :mod:`sqlmend.mcpserver.tools` takes.

    Raises:
        ConfigError: a database cannot be opened (the message names it), or a bad configuration.
    """
    pipe = Pipeline(config)
    held = Correctors(pipe, Pipeline(check_config(config), resolve=pipe.resolve), size=max(32, len(targets)))
    opened = {}
    try:
        for name, target in targets.items():
            try:
                opened[name] = held.get(target)
            except SqlmendError as exc:
                raise ConfigError(f"database {name!r}: {type(exc).__name__}: {exc}") from None
    except BaseException:
        held.close()
        raise
    return held, opened


__all__ = ["NAME", "databases", "open_databases", "parse_db", "read_config"]
