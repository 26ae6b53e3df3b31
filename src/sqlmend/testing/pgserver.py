"""A throw-away PostgreSQL server for tests and benchmarks: initdb + pg_ctl on a temp folder and a
free port (``tests/pg_server.py`` re-exports it for the test fixtures).

initdb refuses to run as root, and CI runs as root: the server then runs as
the ``postgres`` system user (created with ``useradd`` when missing). With no
server binaries on the machine, :func:`find_bin` returns None and the fixtures
skip with that reason (``scripts/setup.sh`` installs them).

Any test may use it through the ``pg_server`` fixture of ``tests/conftest.py``
or directly::

    with PgServer.start() as server:
        server.admin("CREATE DATABASE x")
        url = server.url("x")
        server.halt(); server.resume()     # down and up again, same port, same data (bench faults)
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import psycopg

#: The login of read-only test clients.
READER = "sqlmend_reader"


def find_bin() -> Path | None:
    """Return the folder of the PostgreSQL server binaries (initdb, pg_ctl), or None."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version_key)
    return Path(candidates[-1]).parent if candidates else None


def _version_key(path: str) -> tuple[int, ...]:
    part = Path(path).parent.parent.name
    return tuple(int(x) for x in part.split(".") if x.isdigit())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _server_user() -> str | None:
    """The user to run the server as: None (this one) unless we are root."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                        "postgres"], check=True, capture_output=True)
    return "postgres"


class PgServer:
    """A running PostgreSQL server owned by the tests (superuser ``postgres``, trust auth on 127.0.0.1)."""

    def __init__(self, bindir: Path, root: Path, port: int, user: str | None) -> None:
        self.bindir = bindir
        self.root = root
        self.port = port
        self.user = user

    @classmethod
    def start(cls, bindir: Path | None = None) -> PgServer:
        """Create a cluster in a temp folder and start it.

        Args:
            bindir: folder of the server binaries (default: :func:`find_bin`).

        Returns:
            The running server.

        Raises:
            RuntimeError: no binaries, or initdb / pg_ctl failed (their output included).
        """
        bindir = bindir or find_bin()
        if bindir is None:
            raise RuntimeError("PostgreSQL server binaries (initdb, pg_ctl) not found")
        user = _server_user()
        root = Path(tempfile.mkdtemp(prefix="sqlmend-pg-"))
        if user:
            shutil.chown(root, user=user)
        server = cls(bindir, root, _free_port(), user)
        server._run("initdb", "-D", str(root / "data"), "-U", "postgres", "--auth=trust",
                    "--encoding=UTF8", "--locale=C", "--no-sync")
        server.resume()
        server.admin(f"CREATE ROLE {READER} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE")
        return server

    def resume(self) -> None:
        """Start the server (again) on its port and data folder; return once it accepts connections."""
        options = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c full_page_writes=off -c synchronous_commit=off")
        self._run("pg_ctl", "-D", str(self.root / "data"), "-l", str(self.root / "log"), "-o", options, "-w",
                  "-t", "60", "start")

    def halt(self) -> None:
        """Stop the server, keeping its data (``pg_ctl stop -m fast``: clients are disconnected)."""
        self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "fast", "-w", "stop")

    def _run(self, tool: str, *args: str) -> None:
        cmd = [str(self.bindir / tool), *args]
        if self.user:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            log = (self.root / "log").read_text() if (self.root / "log").exists() else ""
            raise RuntimeError(f"{tool} failed ({done.returncode}): {done.stdout}\n{done.stderr}\n{log}")

    def url(self, dbname: str = "postgres", user: str = READER) -> str:
        """Return the URL of a database on this server.

        Args:
            dbname: the database.
            user: the login (default: the read-only reader).

        Returns:
            A ``postgresql://`` URL.
        """
        return f"postgresql://{user}@127.0.0.1:{self.port}/{dbname}"

    def admin(self, sql: str, dbname: str = "postgres") -> None:
        """Run one statement as the superuser, in autocommit (CREATE DATABASE needs it).

        Args:
            sql: the statement.
            dbname: the database to run it in.
        """
        with psycopg.connect(self.url(dbname, user="postgres"), autocommit=True) as conn:
            conn.execute(sql)

    def stop(self) -> None:
        """Stop the server and delete its folder."""
        try:
            self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PgServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

