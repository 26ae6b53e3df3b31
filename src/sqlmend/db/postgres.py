"""PostgreSQL, read-only: every query runs in a READ ONLY transaction with a statement_timeout.

Queries go through a server-side cursor (``DECLARE``), so only ``max_rows + 1``
rows ever cross the wire, fetched in chunks that stop past the result's size cap
(:func:`~sqlmend.db.base.fetch_capped`); the cursor's query stops at a row over
:data:`~sqlmend.db.base.MAX_VALUE_BYTES` on the server, before it is sent (:func:`row_capped`), and PostgreSQL itself refuses anything a cursor cannot
hold (no second statement, no DML). Each query's transaction is rolled back.
Connect as a role without write privileges for a third lock.
"""

from __future__ import annotations

import itertools

import psycopg
from psycopg import errors as pg_errors

from sqlmend.db.base import MAX_VALUE_BYTES, Database, fetch_capped, split_qualified, sql_string
from sqlmend.db.schema import assemble_listing, assemble_schema, relation_filter, schema_filter
from sqlmend.errors import (DatabaseError, DatabaseNotFoundError, MemoryLimitExceeded, QueryError, QueryTimeout,
                            ReadOnlyViolation)
from sqlmend.types import Schema, Table

#: The schemas no user relation lives in (PostgreSQL's catalogs, TOAST and temporary schemas).
_SYSTEM_SCHEMAS = "n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'"

#: The relations a query can read: tables, partitioned tables, views, materialized views, foreign tables.
_RELKINDS = "cl.relkind IN ('r', 'p', 'v', 'm', 'f')"

#: Every column of every relation the login may read, with the type as ``information_schema`` words it
#: (``format_type`` for a materialized view's, which ``information_schema`` does not show) and its comment.
_COLUMNS = """
SELECT n.nspname, cl.relname, a.attname,
       COALESCE(ic.data_type, format_type(a.atttypid, NULL)),
       COALESCE(ic.is_nullable, CASE WHEN a.attnotnull THEN 'NO' ELSE 'YES' END),
       col_description(cl.oid, a.attnum)
FROM pg_class cl
JOIN pg_namespace n ON n.oid = cl.relnamespace
JOIN pg_attribute a ON a.attrelid = cl.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN information_schema.columns ic
  ON ic.table_schema = n.nspname AND ic.table_name = cl.relname AND ic.column_name = a.attname
WHERE {relkinds} AND {schemas}
  AND has_schema_privilege(n.oid, 'USAGE') AND has_table_privilege(cl.oid, 'SELECT')
ORDER BY n.nspname, cl.relname, a.attnum
"""

_RELATIONS = """
SELECT n.nspname, cl.relname,
       CASE cl.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' ELSE 'table' END,
       obj_description(cl.oid, 'pg_class')
FROM pg_class cl
JOIN pg_namespace n ON n.oid = cl.relnamespace
WHERE {relkinds} AND {schemas}
"""

_KEYS = """
SELECT CASE con.contype WHEN 'p' THEN 'primary' ELSE 'foreign' END, n.nspname, cl.relname,
  ARRAY(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY AS k(n, i)
        JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.n ORDER BY k.i),
  rn.nspname, rcl.relname,
  ARRAY(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY AS k(n, i)
        JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.n ORDER BY k.i)
FROM pg_constraint con
JOIN pg_class cl ON cl.oid = con.conrelid
JOIN pg_namespace n ON n.oid = cl.relnamespace
LEFT JOIN pg_class rcl ON rcl.oid = con.confrelid
LEFT JOIN pg_namespace rn ON rn.oid = rcl.relnamespace
WHERE {schemas} AND con.contype IN ('p', 'f')
ORDER BY n.nspname, cl.relname, con.conname
"""

_cursor_ids = itertools.count()

#: The last DDL stamp this process took of each server database (``host:port/dbname``), with the server's
#: snapshot when it was taken (:meth:`PostgresDatabase.keys`).
_STAMPS: dict[str, tuple[str, str]] = {}


def _literal(text: str) -> str:
    """A string literal for PostgreSQL (quotes doubled; standard_conforming_strings)."""
    return "'" + text.replace("'", "''") + "'"

#: How the server words a row that :func:`row_capped` stopped (in an integer cast's error).
_ROW_OVER = "sqlmend: a row over the memory limit"


def row_capped(sql: str, limit: int = MAX_VALUE_BYTES) -> str:
    """``sql`` as a subquery whose rows stop the query past ``limit`` bytes (``pg_column_size`` of the
    row), so that no row larger than it reaches the client. Its columns, names and order are the
    query's own (the server runs a filter over the subquery's rows as they come).

    >>> row_capped("SELECT 1;", 100).splitlines()[1]
    'SELECT 1'
    """
    body = sql.strip().rstrip(";").rstrip()
    return (f"SELECT * FROM (\n{body}\n) AS sqlmend_q WHERE CASE WHEN pg_column_size(sqlmend_q) > {limit} "
            f"THEN CAST('{_ROW_OVER}: ' || pg_column_size(sqlmend_q) AS int) = 0 ELSE true END")


class PostgresDatabase(Database):
    """A PostgreSQL database, read through READ ONLY transactions.

    Every schema the login may read is read (``schemas``: only those), tables, views and
    materialized views with their comments; a relation outside the search path is named
    ``schema.name`` (:func:`sqlmend.db.schema.assign_keys`).

    Args:
        url: a libpq URL or conninfo string (``postgresql://user@host:port/db``).
        connect_timeout: seconds to wait for the server.
        schemas: the schemas to read (None: every one the login may read).

    Raises:
        DatabaseNotFoundError: the server answers but the database does not exist.
        DatabaseError: the server cannot be reached or refuses the login.
    """

    dialect = "postgres"

    def __init__(self, url: str, connect_timeout: float = 10.0, schemas: list[str] | None = None) -> None:
        super().__init__(url)
        self.schemas = schemas
        try:
            self._conn = psycopg.connect(url, autocommit=False, connect_timeout=int(connect_timeout))
        except psycopg.OperationalError as e:
            if "does not exist" in str(e):
                raise DatabaseNotFoundError(f"PostgreSQL database not found: {e}") from e
            raise DatabaseError(f"cannot connect to PostgreSQL: {e}") from e
        self._conn.read_only = True

    def _run(self, sql: str, timeout: float, max_rows: int) -> tuple[list[str], list[tuple], bool]:
        conn = self._conn
        if conn is None:
            raise DatabaseError("connection is closed")
        try:
            with conn.cursor() as setup:
                setup.execute(f"SET LOCAL statement_timeout = {max(1, int(timeout * 1000))}")
            with conn.cursor(name=f"sqlmend_{next(_cursor_ids)}") as cursor:
                cursor.execute(row_capped(sql))
                columns = [d.name for d in cursor.description or ()]
                rows = fetch_capped(cursor.fetchmany, len(columns), max_rows, value_bytes=None)
        except pg_errors.QueryCanceled as e:
            raise QueryTimeout(f"query interrupted after its time limit of {timeout:g}s",
                               timeout=timeout) from e
        except (pg_errors.OutOfMemory, pg_errors.ProgramLimitExceeded) as e:
            raise MemoryLimitExceeded(f"query stopped at PostgreSQL's memory limit: {str(e).strip()}",
                                      timeout=timeout) from e
        except (pg_errors.ReadOnlySqlTransaction, pg_errors.InsufficientPrivilege) as e:
            raise ReadOnlyViolation(f"PostgreSQL refused: {e}") from e
        except psycopg.OperationalError as e:
            raise DatabaseError(f"PostgreSQL connection failed: {e}") from e
        except psycopg.Error as e:
            message = str(e).strip()
            if isinstance(e, pg_errors.InvalidTextRepresentation) and _ROW_OVER in message:
                raise MemoryLimitExceeded(f"query stopped at its memory limit: a row over "
                                          f"{MAX_VALUE_BYTES / 2**20:g} MB", timeout=timeout) from e
            raise QueryError(f"PostgreSQL: {message}", engine_message=message) from e
        finally:
            if not conn.closed:
                conn.rollback()
        return columns, rows[:max_rows], len(rows) > max_rows

    def alive(self) -> bool:
        """Whether the server still answers on this connection (one round trip; false after a
        restart of the server or the end of this session)."""
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            return False
        try:
            conn.execute("SELECT 1")
            conn.rollback()
        except psycopg.Error:
            return False
        return True

    def has_function(self, name: str) -> bool:
        """Whether the server has a function ``name`` (``schema.name``) in any schema (``pg_proc``, asked
        now: one round trip, only for a name the read-only list does not know)."""
        schema, bare = split_qualified(name)
        where = f"p.proname = {sql_string(bare)}" + (f" AND n.nspname = {sql_string(schema)}" if schema else "")
        return bool(self._query("SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n "
                                f"ON n.oid = p.pronamespace WHERE {where})")[0][0])

    def _introspect(self) -> Schema:
        schemas = schema_filter("n.nspname", self.schemas, _SYSTEM_SCHEMAS)
        path = list(self._query("SELECT current_schemas(false)")[0][0] or [])
        return assemble_schema(self.dialect, self._query(_COLUMNS.format(relkinds=_RELKINDS, schemas=schemas)),
                               self._query(_KEYS.format(schemas=schemas)), path,
                               self._query(_RELATIONS.format(relkinds=_RELKINDS, schemas=schemas)))

    def _list(self) -> Schema:
        """Every relation the login may read by name, kind and comment, and the foreign keys between them:
        three queries whatever the catalogue's size (columns are read per relation, :meth:`_define`)."""
        schemas = schema_filter("n.nspname", self.schemas, _SYSTEM_SCHEMAS)
        path = list(self._query("SELECT current_schemas(false)")[0][0] or [])
        relations = self._query(_RELATIONS.format(relkinds=_RELKINDS, schemas=schemas) +
                                " AND has_schema_privilege(n.oid, 'USAGE') AND has_table_privilege(cl.oid, 'SELECT')"
                                " ORDER BY n.nspname, cl.relname")
        links = [(s, t, rs, rt) for kind, s, t, _, rs, rt, _ in self._query(_KEYS.format(schemas=schemas))
                 if kind == "foreign"]
        return assemble_listing(self.dialect, relations, links, path)

    def _define(self, tables: list[Table]) -> list[Table]:
        """The columns, keys and comments of some relations of the listing (three queries, whatever their
        number), named by their keys there."""
        pairs = [(t.schema, t.relname) for t in tables]
        only = (schema_filter("n.nspname", self.schemas, _SYSTEM_SCHEMAS) + " AND " +
                relation_filter(pairs, "n.nspname", "cl.relname"))
        listing = self.listing()
        schema = assemble_schema(self.dialect, self._query(_COLUMNS.format(relkinds=_RELKINDS, schemas=only)),
                                 self._query(_KEYS.format(schemas=only)), listing.search_path,
                                 self._query(_RELATIONS.format(relkinds=_RELKINDS, schemas=only)), listing=listing)
        return schema.tables

    def cache_key(self) -> str | None:
        """The database's identity and a stamp of its writes and its DDL (:meth:`keys`' second), as this
        connection last read them: :meth:`refresh` reads them again at each item, so an item pays the round
        trip once (at 10,000 tables the stamp's catalogue scans cost about 0.1 s)."""
        return self._version()[1]

    def keys(self) -> tuple[str | None, str | None]:
        """``(catalogue_key, cache_key)`` in one round trip (None, None when the server does not say).

        The catalogue key: the server's address and database (its oid); what decides which relations are
        read and how they are named (the login, its search path, the schema filter); and a stamp of the
        catalogue's DDL: the rows of ``pg_namespace``, ``pg_class``, ``pg_attribute``, ``pg_constraint`` and
        ``pg_description`` and their newest transaction (a table added, a column renamed, a schema dropped,
        a comment changed each write one of them). The cache key adds the rows inserted, updated and deleted
        in the database so far (``pg_stat_database``: one row, where ``pg_stat_user_tables`` sums one per table,
        0.1 s a call at 10,000 tables), so that a written table gives a new one.

        The stamp's catalogue scans (about 50 ms at 10,000 tables) run only when a transaction that wrote
        has ended since this process last took it: the server's snapshot (``pg_current_snapshot()``: the
        transactions in progress and the next one) is the same text exactly when none has, and a DDL change
        is a write; with the server's start time, so that another server on the same address, or this one
        restarted, takes it afresh. On a server written to all the time they run at every call.
        """
        stamp = " || ':' || ".join(
            f"(SELECT count(*) || '.' || coalesce(max(xmin::text::bigint), 0) FROM pg_catalog.{c})"
            for c in ("pg_namespace", "pg_class", "pg_attribute", "pg_constraint", "pg_description"))
        info = self._conn.info if self._conn is not None else None
        where = f"{info.host}:{info.port}/{info.dbname}" if info is not None else self.target
        # the snapshot, and the server's start (another server on the same address, or this one restarted,
        # may show the same snapshot text)
        snapshot = ("pg_current_snapshot()" if info is None or info.server_version >= 130000
                    else "txid_current_snapshot()") + "::text || '@' || pg_postmaster_start_time()::text"
        filtered = f":schemas={','.join(self.schemas)}" if self.schemas else ""
        seen = _STAMPS.get(where)
        try:
            (oid, writes, login, path, snap, ddl), = self._query(
                "SELECT (SELECT oid FROM pg_database WHERE datname = current_database()), "
                "(SELECT tup_inserted + tup_updated + tup_deleted FROM pg_stat_database "
                "WHERE datname = current_database()), "
                f"current_user, array_to_string(current_schemas(false), ','), s.snap, "
                f"CASE WHEN s.snap = {_literal(seen[0]) if seen else 'NULL'} THEN NULL ELSE {stamp} END "
                f"FROM (SELECT {snapshot} AS snap) AS s", timeout=5.0)
        except DatabaseError:
            return None, None
        if ddl is None and seen is not None:  # nothing written since the stamp was taken
            ddl = seen[1]
        elif ddl is not None:
            _STAMPS[where] = (snap, ddl)
        catalogue = f"postgres:{where}:{oid}:{login}:{path}{filtered}:{ddl}"
        return catalogue, f"{catalogue}:{writes}"

    def column_sample(self, table: str, column: str, rows: int, timeout: float = 30.0) -> list:
        """The server's statistics of a big column (``pg_stats``: its most common values, then its
        histogram's bounds), read without touching the table; the first ``rows`` rows' values where the
        table was never analyzed."""
        t = self.schema().table(table)  # a table of another schema: its own name, in its schema
        where = "current_schema()" if t is None or not t.schema else _literal(t.schema)
        found = self._query(
            "SELECT most_common_vals::text::text[], histogram_bounds::text::text[] FROM pg_stats "
            "WHERE schemaname = %s AND tablename = %s AND attname = %s" % (
                where, _literal(t.relname if t is not None else table), _literal(column)), timeout=timeout)
        if found and (found[0][0] or found[0][1]):
            seen: dict = {}
            for v in [*(found[0][0] or []), *(found[0][1] or [])]:
                seen.setdefault(v, None)
            return list(seen)
        return super().column_sample(table, column, rows, timeout)
