"""A throw-away MariaDB (or MySQL) server for tests and benchmarks: ``mariadb-install-db`` into a temp
folder, ``mariadbd`` on a free loopback port with its socket in that folder (``tests/mysql_server.py``
re-exports it for the test fixtures).

The server runs as the current user (``--user=root`` when that is root, as CI is). Table names are
stored lower-case and compared without case (``lower_case_table_names=1``), as on Windows and macOS
servers: Spider's gold queries spell one table in several cases. With no server binaries on the
machine, :func:`find_bin` returns None and the fixtures skip with that reason (``scripts/setup.sh``
installs them)::

    with MySQLServer.start() as server:
        server.admin("CREATE DATABASE x")
        url = server.url("x")                   # the read-only reader (SELECT only)
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pymysql

#: The login of read-only test clients (granted SELECT only, per database).
READER = "sqlmend_reader"
READER_PASSWORD = "reader"

_SERVERS = ("mariadbd", "mysqld")
_INSTALLERS = ("mariadb-install-db", "mysql_install_db")


def _which(names: tuple[str, ...]) -> str | None:
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/bin", "/usr/local/sbin"])
    return next((found for name in names if (found := shutil.which(name, path=path))), None)


def find_bin() -> tuple[str, str] | None:
    """Return the server and installer binaries (``mariadbd``, ``mariadb-install-db``), or None."""
    server, installer = _which(_SERVERS), _which(_INSTALLERS)
    return (server, installer) if server and installer else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MySQLServer:
    """A running MariaDB server owned by the tests (``root`` without a password on its socket)."""

    def __init__(self, server: str, root: Path, port: int) -> None:
        self.server = server
        self.root = root
        self.port = port
        self.socket = root / "mysqld.sock"
        self._process: subprocess.Popen | None = None

    @classmethod
    def start(cls, binaries: tuple[str, str] | None = None) -> MySQLServer:
        """Create a data folder in a temp folder and start the server on it.

        Args:
            binaries: the server and installer (default: :func:`find_bin`).

        Returns:
            The running server, with the :data:`READER` login created.

        Raises:
            RuntimeError: no binaries, or the installer / server failed (their output included).
        """
        binaries = binaries or find_bin()
        if binaries is None:
            raise RuntimeError("MariaDB server binaries (mariadbd, mariadb-install-db) not found")
        server_bin, installer = binaries
        root = Path(tempfile.mkdtemp(prefix="sqlmend-mysql-"))
        server = cls(server_bin, root, _free_port())
        done = subprocess.run([installer, "--no-defaults", f"--datadir={root / 'data'}", f"--user={getpass.getuser()}",
                               "--auth-root-authentication-method=normal", "--skip-test-db",
                               "--lower-case-table-names=1"], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            shutil.rmtree(root, ignore_errors=True)
            raise RuntimeError(f"{installer} failed ({done.returncode}): {done.stdout}\n{done.stderr}")
        try:
            server.resume()
            server.admin(f"CREATE USER '{READER}'@'%' IDENTIFIED BY '{READER_PASSWORD}'")
        except BaseException:
            server.stop()
            raise
        return server

    def resume(self, wait: float = 60.0) -> None:
        """Start the server on its port and data folder; return once it accepts connections."""
        log = self.root / "error.log"
        self._process = subprocess.Popen(
            [self.server, "--no-defaults", f"--datadir={self.root / 'data'}", f"--socket={self.socket}",
             f"--port={self.port}", "--bind-address=127.0.0.1", f"--user={getpass.getuser()}",
             f"--pid-file={self.root / 'mysqld.pid'}", f"--log-error={log}", "--skip-name-resolve",
             "--skip-log-bin", "--lower-case-table-names=1", "--character-set-server=utf8mb4",
             "--innodb-buffer-pool-size=128M", "--innodb-flush-log-at-trx-commit=0", "--innodb-doublewrite=0",
             "--max-connections=200"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"mariadbd exited ({self._process.returncode}):\n"
                                   + (log.read_text()[-3000:] if log.exists() else ""))
            try:
                self._connect().close()
                return
            except pymysql.err.MySQLError:
                time.sleep(0.2)
        raise RuntimeError(f"mariadbd did not accept connections within {wait:g}s")

    def _connect(self, database: str | None = None) -> pymysql.connections.Connection:
        return pymysql.connect(unix_socket=str(self.socket), user="root", database=database,
                               charset="utf8mb4", autocommit=True, local_infile=False)

    def url(self, dbname: str, user: str = READER, password: str = READER_PASSWORD) -> str:
        """Return the URL of a database on this server.

        Args:
            dbname: the database.
            user: the login (default: the read-only reader).
            password: its password.

        Returns:
            A ``mysql://`` URL over TCP on the loopback address.
        """
        auth = f"{user}:{password}" if password else user
        return f"mysql://{auth}@127.0.0.1:{self.port}/{dbname}"

    def admin(self, sql: str, dbname: str | None = None) -> None:
        """Run one statement as root, in autocommit.

        Args:
            sql: the statement.
            dbname: the database to run it in.
        """
        conn = self._connect(dbname)
        try:
            with conn.cursor() as cursor:
                cursor.execute(sql)
        finally:
            conn.close()

    def connection(self, dbname: str | None = None) -> pymysql.connections.Connection:
        """A root connection in autocommit (to load data); the caller closes it."""
        return self._connect(dbname)

    def stop(self) -> None:
        """Stop the server and delete its folder."""
        try:
            if self._process is not None and self._process.poll() is None:
                self._process.terminate()
                try:
                    self._process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait(timeout=10)
        finally:
            self._process = None
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> MySQLServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
