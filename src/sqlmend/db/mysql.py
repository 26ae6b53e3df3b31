"""MySQL and MariaDB, read-only: every query runs in a READ ONLY transaction of a READ ONLY session,
under the server's own statement time limit.

The server, not only sqlmend's parser, refuses writes: the session's transactions are
``READ ONLY`` and each query is wrapped in ``START TRANSACTION READ ONLY`` ... ``ROLLBACK``
(connect as a user granted only ``SELECT`` for a third lock). The driver sends one statement
per call (PyMySQL's multi-statements flag stays off). The time limit is the server's:
``max_statement_time`` (seconds) on MariaDB, ``max_execution_time`` (milliseconds, SELECT only) on
MySQL, the flavour read from ``VERSION()``. Rows are streamed (an unbuffered cursor) and the
server stops after ``max_rows + 1`` of them (``sql_select_limit``; a query's own LIMIT wins).

Names: MySQL quotes identifiers with backticks (``"x"`` is a string there), so sqlmend's own
queries quote through :meth:`Database.quote`.
"""

from __future__ import annotations

from urllib.parse import parse_qs, unquote, urlparse

import pymysql
import pymysql.cursors

from sqlmend.db.base import Database, mask_password, split_qualified, sql_string
from sqlmend.db.schema import assemble_schema, schema_filter
from sqlmend.errors import DatabaseError, DatabaseNotFoundError, QueryError, QueryTimeout, ReadOnlyViolation
from sqlmend.types import Schema

_COLUMNS = """
SELECT c.table_schema, c.table_name, c.column_name, c.data_type, c.is_nullable, c.column_comment
FROM information_schema.columns c
JOIN information_schema.tables t
  ON t.table_schema = c.table_schema AND t.table_name = c.table_name
WHERE {schemas} AND t.table_type IN ('BASE TABLE', 'VIEW', 'SYSTEM VERSIONED')
ORDER BY c.table_schema, c.table_name, c.ordinal_position
"""

_RELATIONS = """
SELECT t.table_schema, t.table_name, CASE t.table_type WHEN 'VIEW' THEN 'view' ELSE 'table' END,
       CASE t.table_type WHEN 'VIEW' THEN NULL ELSE t.table_comment END
FROM information_schema.tables t
WHERE {schemas}
"""

_KEYS = """
SELECT k.constraint_name, k.table_schema, k.table_name, k.column_name, k.referenced_table_schema,
       k.referenced_table_name, k.referenced_column_name
FROM information_schema.key_column_usage k
WHERE {schemas} AND (k.constraint_name = 'PRIMARY' OR k.referenced_table_name IS NOT NULL)
ORDER BY k.table_schema, k.table_name, k.constraint_name, k.ordinal_position
"""

#: Server error codes: the statement time limit (MariaDB 1969, MySQL 3024) or an interrupted query.
_TIMEOUT_CODES = {1969, 3024, 1317, 1028}
#: A write the server refused: read-only transaction (1792), privileges (1044, 1142, 1143, 1227, 1370),
#: a read-only server or table (1290, 1036).
_READ_ONLY_CODES = {1792, 1044, 1142, 1143, 1227, 1370, 1290, 1036}
#: The connection is gone (server restarted, session killed, network).
_LOST_CODES = {2006, 2013, 2014, 2055, 4031, 1927}


def parse_url(url: str) -> dict:
    """PyMySQL's connection arguments from ``mysql://user:pass@host:port/db?unix_socket=PATH``.

    >>> sorted(parse_url("mysql://me:p%40ss@db.local:3307/shop").items())
    [('database', 'shop'), ('host', 'db.local'), ('password', 'p@ss'), ('port', 3307), ('user', 'me')]

    Raises:
        DatabaseError: the URL names no database.
    """
    u = urlparse(url)
    database = unquote(u.path.lstrip("/"))
    if not database:
        raise DatabaseError(f"a MySQL URL names its database: mysql://user:pass@host:port/DB (got {u.scheme}://...)")
    args: dict = {"database": database, "host": u.hostname or "127.0.0.1", "port": u.port or 3306,
                  "user": unquote(u.username) if u.username else "root"}
    if u.password is not None:
        args["password"] = unquote(u.password)
    socket = parse_qs(u.query).get("unix_socket")
    if socket:
        args["unix_socket"] = socket[0]
    return args


def _code(e: pymysql.err.MySQLError) -> int:
    return int(e.args[0]) if e.args and isinstance(e.args[0], int) else 0


class MySQLDatabase(Database):
    """A MySQL or MariaDB database, read through READ ONLY transactions.

    Args:
        url: ``mysql://user:pass@host:port/db`` (``mariadb://`` too; ``?unix_socket=PATH`` for a
            local socket).
        connect_timeout: seconds to wait for the server.
        schemas: the databases (MySQL's schemas) to read, the URL's among them or not (None: the URL's
            database alone); a table of another one is named ``db.table``.

    Raises:
        DatabaseNotFoundError: the server answers but the database does not exist.
        DatabaseError: the server cannot be reached or refuses the login.
    """

    dialect = "mysql"

    def __init__(self, url: str, connect_timeout: float = 10.0, schemas: list[str] | None = None) -> None:
        super().__init__(mask_password(url))  # the target shows in messages and reprs: never the password
        self.schemas = schemas
        self._args = parse_url(url)
        self._broken = False
        self.database = self._args["database"]
        try:
            self._conn = pymysql.connect(**self._args, charset="utf8mb4", autocommit=False,
                                         connect_timeout=max(1, int(connect_timeout)))
        except pymysql.err.MySQLError as e:
            if _code(e) == 1049:
                raise DatabaseNotFoundError(f"MySQL database not found: {e}") from e
            raise DatabaseError(f"cannot connect to MySQL: {e}") from e
        with self._conn.cursor() as cursor:
            cursor.execute("SELECT VERSION()")
            self.version = str(cursor.fetchone()[0])
            cursor.execute("SET SESSION TRANSACTION READ ONLY")
        #: MariaDB (``max_statement_time``, seconds) or MySQL (``max_execution_time``, milliseconds).
        self.mariadb = "mariadb" in self.version.lower()
        self._limits: tuple[float, int] | None = None

    def _set_limits(self, cursor: pymysql.cursors.Cursor, timeout: float, max_rows: int) -> None:
        """Set the session's time limit and row limit (one statement, only when they change)."""
        if self._limits == (timeout, max_rows):
            return
        limit = (f"max_statement_time = {timeout:.3f}" if self.mariadb
                 else f"max_execution_time = {max(1, int(timeout * 1000))}")
        cursor.execute(f"SET SESSION {limit}, sql_select_limit = {int(max_rows) + 1}")
        self._limits = (timeout, max_rows)

    def _run(self, sql: str, timeout: float, max_rows: int) -> tuple[list[str], list[tuple], bool]:
        conn = self._conn
        if conn is None:
            raise DatabaseError("connection is closed")
        try:
            with conn.cursor() as setup:
                self._set_limits(setup, timeout, max_rows)
                setup.execute("START TRANSACTION READ ONLY")
            cursor = conn.cursor(pymysql.cursors.SSCursor)
            try:
                cursor.execute(sql)
                columns = [d[0] for d in cursor.description or ()]
                rows = list(cursor.fetchmany(max_rows + 1)) if cursor.description else []
            finally:
                try:
                    cursor.close()  # reads what the server still sends (at most a query's own LIMIT)
                except pymysql.err.MySQLError:
                    self._broken = True  # out of step with the server: the pool opens another
        except pymysql.err.MySQLError as e:
            code, message = _code(e), (e.args[1] if len(e.args) > 1 else str(e))
            if code in _TIMEOUT_CODES:
                raise QueryTimeout(f"query interrupted after its time limit of {timeout:g}s",
                                   timeout=timeout) from e
            if code in _READ_ONLY_CODES:
                raise ReadOnlyViolation(f"MySQL refused: {message}") from e
            if code in _LOST_CODES or code >= 2000 or isinstance(e, pymysql.err.InterfaceError):
                self._broken = True
                raise DatabaseError(f"MySQL connection failed: {e}") from e
            raise QueryError(f"MySQL: {message}", engine_message=str(message)) from e
        finally:
            if not self._broken:
                try:
                    conn.rollback()
                except pymysql.err.MySQLError:
                    self._broken = True
        return columns, rows[:max_rows], len(rows) > max_rows

    def alive(self) -> bool:
        """Whether a ping on this connection is answered (false once the server dropped it)."""
        if self._conn is None or self._broken:
            return False
        try:
            self._conn.ping(reconnect=False)
        except pymysql.err.MySQLError:
            return False
        return True

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except pymysql.err.Error:  # already gone: nothing to close
                pass

    def has_function(self, name: str) -> bool:
        """Whether the server may have a function ``name`` (``db.name``), asked only for a name the read-only
        list does not know: a built-in its help tables document (``HELP``), a stored function
        (``information_schema.ROUTINES``) or a loadable one (``mysql.func``). True unless all three show
        that it has none: an account that may not read ``mysql.func`` cannot rule a loadable function out."""
        schema, bare = split_qualified(name)
        try:
            if any(str(row[0]).replace("\\_", "_").lower() == bare.lower()
                   for row in self._query(f"HELP {sql_string(bare)}")):
                return True
            where = f"ROUTINE_TYPE = 'FUNCTION' AND ROUTINE_NAME = {sql_string(bare)}"
            if schema:
                where += f" AND ROUTINE_SCHEMA = {sql_string(schema)}"
            if self._query(f"SELECT COUNT(*) FROM information_schema.ROUTINES WHERE {where}")[0][0]:
                return True
            return bool(self._query(f"SELECT COUNT(*) FROM mysql.func WHERE name = {sql_string(bare)}")[0][0])
        except (QueryError, ReadOnlyViolation):  # no help tables, or mysql.func not readable: cannot rule it out
            return True

    def _introspect(self) -> Schema:
        def schemas(column: str) -> str:
            return schema_filter(column, self.schemas, f"{column} = DATABASE()")

        keys: dict[tuple[str, str, str], list] = {}
        for name, schema, table, column, ref_schema, ref_table, ref_column in self._query(
                _KEYS.format(schemas=schemas("k.table_schema"))):
            key = keys.setdefault((schema, table, name), ["primary" if name == "PRIMARY" else "foreign", schema, table,
                                                          [], ref_schema, ref_table, []])
            key[3].append(column)
            if ref_column is not None:
                key[6].append(ref_column)
        return assemble_schema(self.dialect, self._query(_COLUMNS.format(schemas=schemas("c.table_schema"))),
                               keys.values(), [self.database],
                               self._query(_RELATIONS.format(schemas=schemas("t.table_schema"))))

    def cache_key(self) -> str | None:
        """None: a server database has no cheap change stamp, so its value index stays in memory."""
        return None
