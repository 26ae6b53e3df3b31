"""The read-only function lists (sqlmend.sql.functions): complete for real queries, closed to the rest.

Every Spider-train and Spider-dev gold and every query of the five shared prediction files passes the
check on SQLite as written, and on PostgreSQL, MariaDB and DuckDB transpiled as ``sqlmend bench engines``
does (sqlmend.sql.transpile with the schema): no query is refused for a function it calls, and none
calls a function the lists do not know. Parse and check only, no execution.
"""

from __future__ import annotations

import json

import pytest

from sqlmend import sql
from sqlmend.data.predictions import shared_prediction_files
from sqlmend.db import connect
from sqlmend.errors import ReadOnlyViolation, SqlmendError
from sqlmend.sql import functions
from sqlmend.sql.safety import check_read_only, check_read_only_tree, is_read_only

ENGINES = ("postgres", "mysql", "duckdb")


@pytest.fixture(scope="module")
def spider_queries(data_dir):
    """(source, db_id, SQL) of every train and dev gold and every query of the five shared files."""
    out = []
    for split, name in (("train", "train_spider.json"), ("dev", "dev.json")):
        out += [(f"{split} gold", x["db_id"], x["query"])
                for x in json.loads((data_dir / "spider" / name).read_text())]
    dev = json.loads((data_dir / "spider" / "dev.json").read_text())
    files = shared_prediction_files(data_root=data_dir)
    assert len(files) == 5
    for path in files:
        out += [(path.stem, x["db_id"], line) for x, line in zip(dev, path.read_text().splitlines())]
    return out


def _function_refusal(text: str, dialect: str) -> str | None:
    """Why the check refuses ``text`` for a function it calls, or names a function the list does not know."""
    try:
        unknown = check_read_only(text, dialect)
    except ReadOnlyViolation as e:
        return str(e) if str(e).startswith("function ") else None  # a write, two statements: not the lists'
    return f"calls {', '.join(unknown)}, which the list of {dialect} does not know" if unknown else None


def _shape(text: str) -> str:
    """A query with its literals and names blotted out (a name followed by ``(`` kept: it is a function):
    queries of one shape call the same functions, as written and transpiled."""
    from sqlglot.tokens import Tokenizer, TokenType

    try:
        tokens = Tokenizer().tokenize(text)
    except Exception:  # noqa: BLE001 - the tokenizer's own errors: the query is its own shape
        return text
    out = []
    for i, t in enumerate(tokens):
        called = i + 1 < len(tokens) and tokens[i + 1].token_type == TokenType.L_PAREN
        if t.token_type in (TokenType.STRING, TokenType.NUMBER):
            out.append("?")
        elif t.token_type in (TokenType.VAR, TokenType.IDENTIFIER) and not called:
            out.append("x")
        else:
            out.append(t.text.lower())
    return " ".join(out)


@pytest.mark.slow  # the whole of Spider and the five files: 8,241 distinct queries in 2,780 shapes
def test_no_spider_gold_nor_shared_prediction_is_refused_for_its_functions(spider_queries, spider_dir):
    """One query of each shape is checked, as written and transpiled three ways (the functions the
    transpiled queries of all 8,241 call are those of the 2,780: checked on 12-07, docs/history.md)."""
    schemas: dict[str, object] = {}
    refused = []
    seen = set()
    for source, db_id, text in spider_queries:
        if (shape := _shape(text)) in seen:  # a gold the systems wrote as it is, a query of a shape checked
            continue
        seen.add(shape)
        if (why := _function_refusal(text, "sqlite")) is not None:
            refused.append((source, "sqlite", text, why))
        if db_id not in schemas:
            path = spider_dir / "database" / db_id / f"{db_id}.sqlite"
            schemas[db_id] = None
            if path.is_file():  # bench engines copies the databases there are
                with connect(path) as db:
                    schemas[db_id] = db.schema()
        for engine in ENGINES if schemas[db_id] is not None else ():
            try:
                carried = sql.transpile(text, read="sqlite", write=engine, schema=schemas[db_id])
            except SqlmendError:
                continue  # bench engines runs it as written: the engine reports what it makes of it
            if (why := _function_refusal(carried, engine)) is not None:
                refused.append((source, engine, carried, why))
    assert len(spider_queries) == 7000 + 1034 + 5 * 1034 and len(seen) > 2500
    assert refused == []


@pytest.mark.parametrize("dialect", functions.DIALECTS)
def test_each_list_reads_and_names_its_refused_families(dialect):
    found = functions.function_list(dialect)
    assert found.engine and found.read and found.refused
    assert found.names.isdisjoint(found.refused_names)
    assert {"count", "sum", "avg", "max", "min", "cast"} <= found.names
    for name in found.refused_names:  # each refused name, called, is refused whatever its arguments
        with pytest.raises(ReadOnlyViolation, match=rf"function {name}\(\) is not on the read-only list of {dialect}"):
            check_read_only(f"SELECT {name}(1, 'x')", dialect)


#: The functions the issue named, and each family's other members, by engine: refused by the check alone.
NAMED = {
    "mysql": ["LOAD_FILE('/etc/passwd')", "GET_LOCK('x', 100)", "RELEASE_LOCK('x')", "RELEASE_ALL_LOCKS()",
              "IS_FREE_LOCK('x')", "SLEEP(100)", "BENCHMARK(1000000000, md5('x'))", "MASTER_POS_WAIT('f', 4)",
              "NEXTVAL(s)", "SETVAL(s, 9)", "LASTVAL(s)", "LAST_INSERT_ID(5)"],
    "postgres": ["pg_stat_reset()", "pg_stat_reset_shared('bgwriter')", "pg_advisory_lock_shared(42)",
                 "pg_advisory_unlock_all()", "pg_log_backend_memory_contexts(pg_backend_pid())",
                 "pg_replication_origin_create('o1')", "pg_read_file('/etc/passwd')", "nextval('s')",
                 "set_config('work_mem', '1MB', false)", "pg_sleep(100)", "pg_notify('c', 'x')",
                 "pg_terminate_backend(1)", "pg_create_physical_replication_slot('s1')", "txid_current()",
                 "query_to_xml('DELETE FROM t', true, true, '')", "pg_catalog.pg_sleep(1)", "lo_import('/etc/passwd')"],
    "duckdb": ["read_csv('/etc/passwd')", "glob('/*')", "nextval('s')", "current_setting('threads')", "sleep_ms(10)",
               "write_log('x')", "query('SELECT 1')", "setseed(0.5)", "duckdb_secrets()"],
    "sqlite": ["load_extension('x.so')", "readfile('/etc/passwd')", "writefile('x', 'y')", "fts3_tokenizer('x')",
               "sqlite_log(1, 'x')"],
}


@pytest.mark.parametrize("dialect,call", [(d, c) for d, calls in NAMED.items() for c in calls])
def test_side_effect_functions_are_refused_naming_the_function(dialect, call):
    name = call.split("(")[0].split(".")[-1].lower()
    for text in (f"SELECT {call}", f"SELECT * FROM t WHERE a IN (SELECT {call})", f"SELECT * FROM {call} AS x"):
        with pytest.raises(ReadOnlyViolation, match=rf"function {name}\(\)"):
            check_read_only(text, dialect)


@pytest.mark.parametrize("text", ["SELECT NEXT VALUE FOR s", "SELECT a, PREVIOUS VALUE FOR s FROM t",
                                  "SELECT next  value\nfor s"])
def test_next_value_for_is_a_sequence_call(text):
    for dialect in functions.DIALECTS:
        with pytest.raises(ReadOnlyViolation, match=r"(next|previous) value for"):
            check_read_only(text, dialect)
    with pytest.raises(ReadOnlyViolation, match=r"next value for"):
        check_read_only_tree(sql.parse("SELECT NEXT VALUE FOR s", "tsql"), "mysql")


def test_a_name_the_lists_do_not_know_is_left_to_the_engine():
    assert check_read_only("SELECT my_fn(a) FROM t", "postgres") == ("my_fn",)
    assert not is_read_only("SELECT my_fn(a) FROM t", "postgres")  # no engine to ask: not proven read-only
    assert check_read_only("SELECT my_fn(a) FROM t", "postgres", frozenset({"my_fn"})) == ()
    # a call qualified by another schema than the engine's is that schema's function, not the built-in
    assert check_read_only("SELECT shop.lower(a) FROM t", "postgres") == ("shop.lower",)
    assert check_read_only("SELECT pg_catalog.lower(a) FROM t", "postgres") == ()
    # a quoted name keeps its case on PostgreSQL: "PG_SLEEP" is not pg_sleep(), the engine says whether it has one
    assert check_read_only('SELECT "PG_SLEEP"(1)', "postgres") == ("PG_SLEEP",)
    with pytest.raises(ReadOnlyViolation):
        check_read_only('SELECT "pg_sleep"(1)', "postgres")


def test_a_text_sqlglot_cannot_parse_is_judged_by_its_calls():
    with pytest.raises(ReadOnlyViolation, match=r"pg_sleep"):
        check_read_only("SELECT pg_sleep(100) FROM t WHERE", "postgres")
    assert check_read_only("SELECT my_fn(a) FROM t WHERE", "postgres") == ("my_fn",)
    assert check_read_only("SELECT count( FROM singer", "sqlite") == ()


def test_typed_nodes_are_named_as_the_dialect_writes_them():
    tree = sql.parse("SELECT instr(a, 'x'), substr(a, 1, 2), iif(a, 1, 2), a -> '$.k' FROM t", "sqlite")
    assert [n for n, _ in functions.calls(tree, "sqlite")] == ["instr", "substring", "iif"]
    tree = sql.parse("SELECT LOCATE('x', a), IF(a, 1, 2), DATE_FORMAT(d, '%Y') FROM t", "mysql")
    assert [n for n, _ in functions.calls(tree, "mysql")][:3] == ["locate", "if", "date_format"]


def test_allowed_function_names_are_checked():
    assert functions.normalize_names([" Shop.Net_Price "]) == frozenset({"shop.net_price"})
    with pytest.raises(SqlmendError):
        functions.normalize_names(["drop table x; --"])
