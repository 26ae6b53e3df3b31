"""What the login of a database may do beyond reading: checked when sqlmend connects.

sqlmend reads through read-only transactions and refuses anything but one read-only query, but the
surest lock is a login that cannot write. :func:`check_login` asks the engine what this one may do:

* **PostgreSQL**: superuser; membership of ``pg_write_all_data``, ``pg_read_server_files``,
  ``pg_write_server_files``, ``pg_execute_server_program``, ``pg_signal_backend`` (and the other
  predefined roles that act on the server); the CREATEROLE, CREATEDB, REPLICATION and BYPASSRLS
  attributes; INSERT, UPDATE, DELETE or TRUNCATE on any table, UPDATE on any sequence, CREATE on any
  schema of the database;
* **MySQL / MariaDB**: every privilege of ``SHOW GRANTS`` beyond SELECT (and USAGE, which is none):
  FILE, SUPER, PROCESS, the write privileges, a grant option, and the privileges of granted roles;
* **SQLite / DuckDB**: whether this process may write the file (sqlmend opens it read-only; a login
  that can write it can also open it otherwise).

``sqlmend db check URL`` prints the answer, and ``/health`` lists every login that may write. Where
sqlmend's own lock holds whatever the login (:data:`OWN_LOCK`: a SQLite file, opened read-only with an
authorizer that allows only reads) a writable login is that line and no more; elsewhere (PostgreSQL,
MySQL, DuckDB) ``correct``, ``check``, ``eval``, ``serve``, ``mcp`` and :class:`sqlmend.Corrector` warn
about it once per process (a log line). Under ``--require-read-only-login``
(``require_read_only_login`` in the configuration) every one of them refuses a login that may write,
SQLite's too (:func:`admit`). The statements that make a read-only login for each engine are in
docs/pipeline.md ("Read-only, whatever the login").

>>> Login("x.sqlite", "SQLite", "ana", ["the file is writable by this process"]).summary
'the file is writable by this process: may write'
"""

from __future__ import annotations

import logging
import os
import re
import threading
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from sqlmend.errors import ConfigError, SqlmendError

_log = logging.getLogger("sqlmend")

#: PostgreSQL's predefined roles that act on the server beyond reading the tables.
PG_POWER_ROLES = ("pg_write_all_data", "pg_read_server_files", "pg_write_server_files", "pg_execute_server_program",
                  "pg_signal_backend", "pg_checkpoint", "pg_create_subscription", "pg_use_reserved_connections",
                  "pg_maintain")
#: MySQL privileges that only read (USAGE is no privilege at all).
MYSQL_READ_PRIVILEGES = frozenset({"SELECT", "USAGE"})
#: Engines on which sqlmend's own lock holds whatever the login may do, and what that lock is
#: (:mod:`sqlmend.db.sqlite`). DuckDB is not: sqlmend opens it read-only too, but with no authorizer of
#: its own inside the engine.
OWN_LOCK = {"SQLite": "the file opened read-only (mode=ro, query_only), with an authorizer that allows only reads"}


@dataclass
class Login:
    """What one database's login may do.

    Attributes:
        target: the database (a path, or a URL without its password).
        name: the name it is known by (a db_id, a file's stem), what logs and ``/health`` show.
        engine: ``PostgreSQL``, ``MariaDB``, ``MySQL``, ``SQLite`` or ``DuckDB``.
        user: the login (a server's user, or the process's for a file).
        powers: what it may do beyond reading, most serious first (empty: read-only).
        superuser: a superuser (PostgreSQL), or all privileges on every database (MySQL).
        error: why the engine could not be asked (the login then counts as one that may write).
    """

    target: str
    engine: str
    user: str
    powers: list[str] = field(default_factory=list)
    name: str = ""
    superuser: bool = False
    error: str | None = None

    @property
    def may_write(self) -> bool:
        """Whether the login may do more than read (or could not be checked)."""
        return bool(self.powers) or self.superuser or self.error is not None

    @property
    def summary(self) -> str:
        """One line: ``read-only``, ``superuser: may write``, ``<first power>: may write``."""
        if self.superuser:
            return "superuser: may write"
        if self.error is not None:
            return f"not checked ({self.error}): may write"
        return f"{self.powers[0]}: may write" if self.powers else "read-only"

    @property
    def own_lock(self) -> str | None:
        """sqlmend's own lock on this database when it holds whatever the login (:data:`OWN_LOCK`), else None."""
        return OWN_LOCK.get(self.engine) if self.error is None else None

    @property
    def warns(self) -> bool:
        """Whether it is warned about: it may write, and no lock of sqlmend's own holds."""
        return self.may_write and self.own_lock is None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "may_write": self.may_write, "summary": self.summary, "own_lock": self.own_lock}


def check_login(db: Any, name: str = "") -> Login:
    """Ask the engine of an open database what its login may do beyond reading.

    Args:
        db: an open :class:`~sqlmend.db.base.Database`.
        name: the name the database is known by (default: its target).

    Returns:
        The :class:`Login`; a failed question is its ``error`` (and counts as "may write").
    """
    check = _CHECKS.get(db.dialect)
    engine = _ENGINES.get(db.dialect, db.dialect)
    try:
        login = check(db) if check else Login(db.target, engine, "", error=f"no login check for {db.dialect}")
    except SqlmendError as exc:
        login = Login(db.target, engine, "", error=str(exc).splitlines()[0][:200])
    login.name = name or db.target
    return login


def file_login(path: str | os.PathLike, engine: str = "SQLite", name: str = "") -> Login:
    """The login of a database file: whether this process may write it (sqlmend opens it read-only)."""
    import getpass

    writable = os.access(path, os.W_OK)
    return Login(os.fspath(path), engine, getpass.getuser(), ["the file is writable by this process"] if writable else [],
                 name=name or os.fspath(path))


def root_logins(root: str | os.PathLike) -> list[Login]:
    """The logins of the database files of a benchmark root (``<root>/<db_id>/<db_id>.sqlite``), in name order:
    what ``sqlmend serve`` checks when it starts."""
    from pathlib import Path

    from sqlmend.db import BENCHMARK_EXTENSIONS

    out = []
    base = Path(root).expanduser()
    for folder in sorted(base.iterdir()) if base.is_dir() else ():
        found = next((folder / f"{folder.name}{ext}" for ext in BENCHMARK_EXTENSIONS
                      if (folder / f"{folder.name}{ext}").is_file()), None)
        if found is not None:
            out.append(file_login(found.resolve(), name=folder.name))
    return out


def _file_login(db: Any) -> Login:
    return file_login(db.path, _ENGINES[db.dialect])


def _postgres_login(db: Any) -> Login:
    user, superuser, createrole, createdb, replication, bypassrls = db._query(
        "SELECT rolname, rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls "
        "FROM pg_catalog.pg_roles WHERE rolname = current_user")[0]
    powers = ["superuser"] if superuser else []
    names = ", ".join(f"'{r}'" for r in PG_POWER_ROLES)
    powers += [f"member of {r[0]}" for r in db._query(
        f"SELECT rolname FROM pg_catalog.pg_roles WHERE rolname IN ({names}) "
        "AND pg_catalog.pg_has_role(current_user, oid, 'USAGE') ORDER BY rolname")]
    powers += [attr for attr, on in (("CREATEROLE", createrole), ("CREATEDB", createdb),
                                     ("REPLICATION", replication), ("BYPASSRLS", bypassrls)) if on]
    writes = db._query(
        "SELECT n.nspname || '.' || c.relname FROM pg_catalog.pg_class c "
        "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
        "WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
        "AND n.nspname NOT LIKE 'pg\\_toast%' AND (pg_catalog.has_table_privilege(c.oid, 'INSERT') OR "
        "pg_catalog.has_table_privilege(c.oid, 'UPDATE') OR pg_catalog.has_table_privilege(c.oid, 'DELETE') OR "
        "pg_catalog.has_table_privilege(c.oid, 'TRUNCATE')) ORDER BY 1")
    if writes:
        powers.append(_some("writes (INSERT, UPDATE, DELETE or TRUNCATE) on", [r[0] for r in writes], "table"))
    sequences = db._query(
        "SELECT n.nspname || '.' || c.relname FROM pg_catalog.pg_class c "
        "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
        "WHERE CASE WHEN c.relkind = 'S' THEN pg_catalog.has_sequence_privilege(c.oid, 'UPDATE') END ORDER BY 1")
    if sequences:
        powers.append(_some("UPDATE on", [r[0] for r in sequences], "sequence"))
    schemas = db._query(
        "SELECT nspname FROM pg_catalog.pg_namespace WHERE nspname NOT LIKE 'pg\\_%' "
        "AND nspname <> 'information_schema' AND pg_catalog.has_schema_privilege(oid, 'CREATE') ORDER BY 1")
    if schemas:
        powers.append(_some("CREATE on", [r[0] for r in schemas], "schema"))
    return Login(db.target, "PostgreSQL", str(user), powers, superuser=bool(superuser))


_GRANT = re.compile(r"^GRANT (?P<privileges>.+?) ON (?P<object>\S+) TO (?P<grantee>.+?)(?P<option> WITH GRANT OPTION)?$",
                    re.S)
_ROLE = re.compile(r"^GRANT (?P<roles>[^ ]+(?:, [^ ]+)*) TO ", re.S)


def _mysql_grants(db: Any, grantee: str | None = None, seen: set[str] | None = None) -> tuple[list[str], bool]:
    """The privileges beyond reading of ``SHOW GRANTS`` (of a granted role, recursively), and whether they
    include every privilege on every database."""
    seen = seen if seen is not None else set()
    rows = db._query("SHOW GRANTS" + (f" FOR {grantee}" if grantee else ""))
    powers: list[str] = []
    superuser = False
    for (line,) in rows:
        line = str(line)
        match = _GRANT.match(line)
        if match:
            privileges = [p.strip() for p in re.split(r",(?![^(]*\))", match["privileges"])]
            beyond = [p for p in privileges if p.split("(")[0].strip().upper() not in MYSQL_READ_PRIVILEGES]
            where = match["object"]
            if any(p.upper().startswith("ALL") for p in beyond) and where == "*.*":
                superuser = True
            if "SUPER" in (p.upper() for p in beyond):
                superuser = True
            if beyond:
                powers.append(f"{', '.join(beyond)} on {where}")
            if match["option"]:
                powers.append(f"grant option on {where}")
            continue
        role = _ROLE.match(line)
        if role and " ON " not in line.split(" TO ")[0]:
            for name in role["roles"].split(", "):
                if name in seen:
                    continue
                seen.add(name)
                try:
                    more, sup = _mysql_grants(db, name, seen)
                except SqlmendError:
                    more, sup = [f"role {name} (its privileges could not be read)"], False
                powers += [f"{p} (role {name})" for p in more]
                superuser = superuser or sup
    return powers, superuser


def _mysql_login(db: Any) -> Login:
    user = str(db._query("SELECT CURRENT_USER()")[0][0])
    powers, superuser = _mysql_grants(db)
    engine = "MariaDB" if getattr(db, "mariadb", False) else "MySQL"
    return Login(db.target, engine, user, powers, superuser=superuser)


def _some(what: str, names: list[str], noun: str, shown: int = 3) -> str:
    """``writes on 12 tables (public.a, public.b, public.c, ...)``."""
    more = ", ..." if len(names) > shown else ""
    plural = noun if len(names) == 1 else noun + "s"
    return f"{what} {len(names)} {plural} ({', '.join(names[:shown])}{more})"


_ENGINES = {"sqlite": "SQLite", "duckdb": "DuckDB", "postgres": "PostgreSQL", "mysql": "MySQL"}
_CHECKS = {"sqlite": _file_login, "duckdb": _file_login, "postgres": _postgres_login, "mysql": _mysql_login}


class LoginWarnings:
    """The databases of this process whose login may write, each warned about once (a log line); not those
    under sqlmend's own lock (:attr:`Login.warns`)."""

    def __init__(self) -> None:
        self._seen: dict[str, Login] = {}
        self._lock = threading.Lock()

    def note(self, logins: list[Login]) -> None:
        """Remember the logins that may write and log one line for those not warned about before."""
        with self._lock:
            new = [x for x in logins if x.warns and x.target not in self._seen]
            for x in new:
                self._seen[x.target] = x
        if not new:
            return
        shown = "; ".join(f"{x.name} ({x.engine}, login {x.user or '?'}): {x.summary}" for x in new[:5])
        more = f"; and {len(new) - 5} more" if len(new) > 5 else ""
        _log.warning("the login of %d database%s may do more than read: %s%s. sqlmend still reads only, but a "
                     "read-only login is the surer lock (docs/pipeline.md, \"Read-only, whatever the login\"); "
                     "--require-read-only-login refuses such a login", len(new), "" if len(new) == 1 else "s",
                     shown, more)


def health(logins: Any) -> dict[str, Any]:
    """What ``/health`` says of the logins of a server's databases: whether all are read-only, and those
    that may write (the database's name, its engine, what the login may do and, where it holds, sqlmend's
    own lock; no path, no password)."""
    writers = [{"database": x.name, "engine": x.engine, "summary": x.summary,
                **({"own_lock": x.own_lock} if x.own_lock else {})} for x in logins if x.may_write]
    return {"read_only": not writers, "may_write": writers}


#: The process's warnings (the service, the MCP server and the Python API share them).
WARNINGS = LoginWarnings()


def refusal(login: Login) -> str:
    """The error of a login refused under ``--require-read-only-login``."""
    return (f"{login.name}: the login {login.user or '?'} may do more than read ({'; '.join(login.powers[:3]) or login.summary}); "
            "--require-read-only-login refuses it: connect as a read-only login "
            "(docs/pipeline.md, \"Read-only, whatever the login\")")


def admit(logins: list[Login], require_read_only: bool) -> None:
    """Let the databases of these logins be used: under ``require_read_only`` refuse any whose login may
    write (SQLite's too); otherwise warn once per process about those sqlmend's own lock does not hold.

    Raises:
        ConfigError: a login that may write, under ``require_read_only``; it names the first such
            database and how many more there are.
    """
    writers = [x for x in logins if x.may_write]
    if writers and require_read_only:
        more = f" (and {len(writers) - 1} more database{'s' if len(writers) > 2 else ''})" if len(writers) > 1 else ""
        raise ConfigError(refusal(writers[0]) + more)
    WARNINGS.note(writers)


def target_logins(named: Iterable[tuple[str, str]]) -> list[Login]:
    """The logins of databases named by path or URL (``(name, target)`` pairs; each target once, in
    order), as :func:`sqlmend.db.connect` reads the target: a file's is whether this process may write
    it (the file is not opened); a server's is asked of the server (:func:`check_login`). A database
    that cannot be opened is left out: its items say so."""
    from sqlmend.db import DUCKDB_SUFFIXES, connect

    out: list[Login] = []
    seen: set[str] = set()
    for name, target in named:
        if target in seen:
            continue
        seen.add(target)
        text = os.fspath(target).split("?", 1)[0]
        low = text.lower()
        if "://" not in low or low.startswith(("sqlite://", "duckdb://")):
            path = text.split("://", 1)[-1]
            if os.path.isfile(path):
                engine = "DuckDB" if low.startswith("duckdb://") or low.endswith(DUCKDB_SUFFIXES) else "SQLite"
                out.append(file_login(os.path.abspath(path), engine, name=name))
            continue
        try:
            with connect(target) as db:
                out.append(check_login(db, name=name))
        except SqlmendError:
            continue
    return out


__all__ = ["Login", "LoginWarnings", "MYSQL_READ_PRIVILEGES", "OWN_LOCK", "PG_POWER_ROLES", "WARNINGS", "admit",
           "check_login", "file_login", "health", "refusal", "root_logins", "target_logins"]
