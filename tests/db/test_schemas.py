"""The databases users have: every schema the login may read, views and materialized views, comments.

On real servers (the suite's throw-away PostgreSQL and MariaDB) and files (DuckDB, SQLite): a database
of two schemas with mixed-case quoted names and views, where the value fixes ('Pending' -> 'pending',
'sales' -> 'Sales') and the name repair (``employees`` -> ``hr.employees``) are made; unqualified names
resolve along the search path; a view is a relation like a table; comments reach ``describe_schema``,
the question's linking and the model's prompt.
"""

from __future__ import annotations

import sqlite3
from urllib.parse import quote

import duckdb
import pytest

import sqlmend
from sqlmend import structure
from sqlmend.db import connect
from sqlmend.errors import ConfigError, QueryError
from sqlmend.mcpserver import tools
from sqlmend.refine.extract import schema_text

READER = "sqlmend_reader"

PG_SHOP = f"""
CREATE SCHEMA sales;
CREATE SCHEMA hr;
CREATE TABLE hr.employees (id int PRIMARY KEY, full_name text NOT NULL, dept text);
CREATE TABLE sales."Orders" ("OrderId" int PRIMARY KEY, "Status" text, amount numeric, placed date,
                             employee_id int REFERENCES hr.employees (id));
COMMENT ON TABLE sales."Orders" IS 'customer orders';
COMMENT ON COLUMN sales."Orders"."Status" IS 'order state: pending, shipped or cancelled';
COMMENT ON COLUMN hr.employees.dept IS 'department the employee works in';
INSERT INTO hr.employees VALUES (1, 'Ana Lima', 'Sales'), (2, 'Bo Chen', 'Sales'), (3, 'Cy Diaz', 'Finance');
INSERT INTO sales."Orders" VALUES (10, 'pending', 20, '2026-01-02', 1), (11, 'shipped', 35, '2026-01-03', 2),
  (12, 'pending', 5, '2026-01-04', 1), (13, 'cancelled', 7, '2026-01-05', 3);
CREATE VIEW sales.open_orders AS SELECT "OrderId", "Status", amount FROM sales."Orders" WHERE "Status" = 'pending';
CREATE MATERIALIZED VIEW hr.dept_sizes AS SELECT dept, count(*) AS staff FROM hr.employees GROUP BY dept;
CREATE TABLE public.secrets (id int);
GRANT USAGE ON SCHEMA sales, hr TO {READER};
GRANT SELECT ON ALL TABLES IN SCHEMA sales, hr TO {READER}
"""

#: (question, wrong SQL, the correction) on the PostgreSQL shop, whose search path is ``public``.
PG_CASES = [
    ("How many orders are pending?", 'SELECT count(*) FROM sales."Orders" WHERE "Status" = \'Pending\'',
     'SELECT COUNT(*) FROM sales."Orders" WHERE "Status" = \'pending\''),
    ("Who works in sales?", "SELECT full_name FROM hr.employees WHERE dept = 'sales'",
     "SELECT full_name FROM hr.employees WHERE dept = 'Sales'"),
    ("Who works in sales?", "SELECT full_name FROM employees WHERE dept = 'Sales'",
     "SELECT full_name FROM hr.employees WHERE dept = 'Sales'"),
    ("How many open orders are pending?", "SELECT count(*) FROM sales.open_orders WHERE \"Status\" = 'Pending'",
     "SELECT COUNT(*) FROM sales.open_orders WHERE \"Status\" = 'pending'"),
    ("How many people work in sales?", "SELECT staff FROM hr.dept_sizes WHERE dept = 'sales'",
     "SELECT staff FROM hr.dept_sizes WHERE dept = 'Sales'"),
    # PostgreSQL folds an unquoted name: the stored mixed-case spelling, quoted, is the repair
    ("What is the status of order 10?", 'SELECT Status FROM sales."Orders" WHERE "OrderId" = 10',
     'SELECT "Status" FROM sales."Orders" WHERE "OrderId" = 10'),
    ("How many orders are there?", "SELECT count(*) FROM sales.orders", 'SELECT COUNT(*) FROM sales."Orders"'),
    # the rules on keys across schemas the query names: the foreign key re-keys a join (TB02)
    ("Who placed the pending orders?",
     'SELECT e.full_name FROM hr.employees AS e JOIN sales."Orders" AS o ON e.id = o."OrderId" WHERE o."Status" = \'pending\'',
     'SELECT e.full_name FROM hr.employees AS e JOIN sales."Orders" AS o ON e.id = o.employee_id WHERE o."Status" = \'pending\''),
    # a repair joins no schema the query does not name: the table of sales that holds "Status" is not
    # joined to a query of hr alone (join_path's candidate is held back), the failing query is kept
    ("Names of employees with pending orders", "SELECT full_name FROM hr.employees WHERE \"Status\" = 'pending'",
     "SELECT full_name FROM hr.employees WHERE \"Status\" = 'pending'"),
    ("What did each employee sell that is pending?",
     'SELECT e.full_name, sum(o.amount) FROM sales."Orders" AS o JOIN hr.employees AS e ON o.employee_id = e.id '
     "WHERE o.\"Status\" = 'PENDING' GROUP BY e.full_name",
     'SELECT e.full_name, SUM(o.amount) FROM sales."Orders" AS o JOIN hr.employees AS e ON o.employee_id = e.id '
     "WHERE o.\"Status\" = 'pending' GROUP BY e.full_name"),
]


@pytest.fixture(scope="module")
def pg_shop(pg_server):
    """The read-only URL of a PostgreSQL database of two schemas (``sales``, ``hr``), a view, a
    materialized view and comments; the reader may not read ``public.secrets``."""
    pg_server.admin("CREATE DATABASE schemas_shop")
    pg_server.admin(f"GRANT CONNECT ON DATABASE schemas_shop TO {READER}")
    for statement in PG_SHOP.strip().split(";\n"):
        pg_server.admin(statement, dbname="schemas_shop")
    return pg_server.url("schemas_shop")


def test_postgres_reads_every_schema_the_login_may_read(pg_shop):
    with connect(pg_shop) as db:
        schema = db.schema()
    assert schema.search_path == ["public"]
    assert [(t.name, t.schema, t.kind, t.row_count) for t in schema.tables] == [
        ("hr.dept_sizes", "hr", "materialized view", 2), ("hr.employees", "hr", "table", 3),
        ("sales.Orders", "sales", "table", 4), ("sales.open_orders", "sales", "view", 2)]
    orders = schema.table("sales.orders")  # names are found without case, as elsewhere
    assert orders.relname == "Orders" and orders.qualified and orders.comment == "customer orders"
    assert orders.column("status").comment == "order state: pending, shipped or cancelled"
    assert [c.type for c in orders.columns] == ["INTEGER", "TEXT", "NUMERIC", "DATE", "INTEGER"]
    assert orders.primary_key == ["OrderId"]
    [fk] = orders.foreign_keys  # a key across schemas, both ends named by their keys
    assert (fk.table, fk.columns, fk.ref_table, fk.ref_columns) == ("sales.Orders", ["employee_id"],
                                                                    "hr.employees", ["id"])
    assert schema.table("secrets") is None  # not granted: not read


@pytest.mark.parametrize(("question", "wrong", "right"), PG_CASES)
def test_postgres_value_fixes_and_the_name_repair(pg_shop, cache_root, question, wrong, right):
    with sqlmend.Corrector(pg_shop, stages="static,search,guard") as fixer:
        result = fixer.correct(question, wrong)
    assert result.sql == right, result.explain()
    assert result.error is None


def test_the_name_repair_is_the_table_of_another_schema(pg_shop, cache_root):
    """``employees`` is no relation of the search path; hr holds the only one of that name: TB01 proves it
    (the reason ``schema`` of :mod:`sqlmend.sql.names`) and reads the table from there, its alias kept."""
    wrong = "SELECT e.full_name FROM employees AS e WHERE e.dept = 'Sales'"
    with sqlmend.Corrector(pg_shop, stages="static,guard") as fixer:
        checked = fixer.check("Who works in sales?", wrong)
        result = fixer.correct("Who works in sales?", wrong)
    [tb01] = [f for f in checked.findings if f.code == "TB01"]
    assert tb01.severity == "strict" and tb01.evidence["reason"] == "schema"
    assert tb01.fixes == [{"op": "rename_table", "path": "from_.this", "expect": "employees AS e",
                           "name": "employees", "schema": "hr"}]
    assert result.sql == "SELECT e.full_name FROM hr.employees AS e WHERE e.dept = 'Sales'"


def test_postgres_unqualified_names_follow_the_search_path(pg_server, pg_shop, cache_root):
    """With ``hr`` on the search path, ``employees`` is that table's name and ``hr.employees`` its other
    spelling; ``sales`` stays outside."""
    url = f"{pg_shop}?options={quote('-csearch_path=hr,public')}"
    with connect(url) as db:
        schema = db.schema()
        assert schema.search_path == ["hr", "public"]
        assert [t.name for t in schema.tables] == ["dept_sizes", "employees", "sales.Orders", "sales.open_orders"]
        assert schema.table("hr.employees") is schema.table("employees")
    with sqlmend.Corrector(url, stages="static,guard") as fixer:
        for wrong in ("SELECT full_name FROM employees WHERE dept = 'sales'",
                      "SELECT full_name FROM hr.employees WHERE dept = 'sales'"):
            result = fixer.correct("Who works in sales?", wrong)
            assert result.sql == wrong.replace("'sales'", "'Sales'"), result.explain()


def test_the_schema_filter(pg_shop, cache_root):
    with sqlmend.Corrector(pg_shop, stages="static,guard", schemas=["hr"]) as fixer:
        assert [t.name for t in fixer.schema().tables] == ["hr.dept_sizes", "hr.employees"]
        assert fixer.db_id == "schemas_shop"
        result = fixer.correct("Who works in sales?", "SELECT full_name FROM hr.employees WHERE dept = 'sales'")
        assert "'Sales'" in result.sql
    with connect(f"{pg_shop}?schemas=sales") as db:
        assert [t.name for t in db.schema().tables] == ["sales.Orders", "sales.open_orders"]


def test_a_schema_filter_on_a_sqlite_file_is_refused(spider_db):
    with pytest.raises(ConfigError, match="one schema"):
        connect(spider_db("concert_singer"), schemas=["sales"])


def test_describe_schema_shows_schemas_views_and_comments(pg_shop, cache_root):
    with sqlmend.Corrector(pg_shop, stages="static,guard") as fixer:
        body = tools.describe_schema({"shop": fixer}, "shop")
    assert body["schemas"] == ["hr", "sales"] and body["search_path"] == ["public"]
    orders = next(t for t in body["tables"] if t["name"] == "sales.Orders")
    assert (orders["schema"], orders["kind"], orders["comment"]) == ("sales", "table", "customer orders")
    status = next(c for c in orders["columns"] if c["name"] == "Status")
    assert status["comment"] == "order state: pending, shipped or cancelled"
    assert status["values"] == ["pending", "shipped", "cancelled"] or sorted(status["values"]) == [
        "cancelled", "pending", "shipped"]
    kinds = {t["name"]: t["kind"] for t in body["tables"]}
    assert kinds["sales.open_orders"] == "view" and kinds["hr.dept_sizes"] == "materialized view"
    text = tools.schema_text(body)
    assert "schemas: hr, sales; search path: public" in text
    assert "sales.open_orders view (2 rows)" in text
    assert "Status TEXT [" in text and "-- order state: pending, shipped or cancelled" in text


def test_comments_reach_the_linking_and_the_prompt(pg_shop):
    with connect(pg_shop) as db:
        schema = db.schema()
    qss = structure.build("Which department sold the most?", schema)
    assert ("department", "hr.employees.dept", "comment") in {(x.phrase, x.target, x.kind) for x in qss.links}
    assert "dept text ~'department the employee works in'" in structure.serialize_qss(qss)
    text = schema_text(schema, ["sales.Orders"])
    assert text.startswith('sales.Orders(-- customer orders\n  OrderId INTEGER PK,\n  Status TEXT -- order state')


# --- DuckDB --------------------------------------------------------------------------------------------

DUCK_SHOP = """
CREATE SCHEMA hr;
CREATE SCHEMA sales;
CREATE TABLE hr.employees (id INTEGER PRIMARY KEY, full_name VARCHAR NOT NULL, dept VARCHAR);
CREATE TABLE hr.badges (badge VARCHAR PRIMARY KEY, employee_id INTEGER REFERENCES hr.employees (id));
CREATE TABLE sales.orders (order_id INTEGER PRIMARY KEY, status VARCHAR, amount DOUBLE, employee_id INTEGER);
CREATE TABLE regions (id INTEGER PRIMARY KEY, name VARCHAR);
COMMENT ON TABLE sales.orders IS 'customer orders';
COMMENT ON COLUMN sales.orders.status IS 'order state: pending, shipped or cancelled';
INSERT INTO hr.employees VALUES (1, 'Ana Lima', 'Sales'), (2, 'Bo Chen', 'Sales'), (3, 'Cy Diaz', 'Finance');
INSERT INTO hr.badges VALUES ('B1', 1);
INSERT INTO sales.orders VALUES (10, 'pending', 20, 1), (11, 'shipped', 35, 2), (12, 'pending', 5, 1);
INSERT INTO regions VALUES (1, 'North'), (2, 'South');
CREATE VIEW sales.open_orders AS SELECT order_id, status, amount FROM sales.orders WHERE status = 'pending';
"""


@pytest.fixture(scope="module")
def duck_shop(tmp_path_factory):
    path = tmp_path_factory.mktemp("schemas") / "shop.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.execute(DUCK_SHOP)
    return path


def test_duckdb_reads_every_schema(duck_shop):
    with connect(duck_shop) as db:
        schema = db.schema()
    assert schema.search_path == ["main"]
    assert [(t.name, t.kind) for t in schema.tables] == [
        ("hr.badges", "table"), ("hr.employees", "table"), ("regions", "table"),
        ("sales.open_orders", "view"), ("sales.orders", "table")]
    assert schema.table("sales.orders").comment == "customer orders"
    assert schema.table("sales.orders").column("status").comment.startswith("order state")
    assert [(fk.table, fk.ref_table) for fk in schema.table("hr.badges").foreign_keys] == [("hr.badges", "hr.employees")]
    assert schema.table("main.regions") is schema.table("regions")


@pytest.mark.parametrize(("wrong", "right"), [
    ("SELECT count(*) FROM sales.orders WHERE status = 'Pending'",
     "SELECT COUNT(*) FROM sales.orders WHERE status = 'pending'"),
    ("SELECT full_name FROM hr.employees WHERE dept = 'sales'", "SELECT full_name FROM hr.employees WHERE dept = 'Sales'"),
    ("SELECT full_name FROM employees WHERE dept = 'Sales'", "SELECT full_name FROM hr.employees WHERE dept = 'Sales'"),
    ("SELECT count(*) FROM sales.open_orders WHERE status = 'Pending'",
     "SELECT COUNT(*) FROM sales.open_orders WHERE status = 'pending'"),
    ("SELECT id FROM main.regions WHERE name = 'north'", "SELECT id FROM main.regions WHERE name = 'North'"),
])
def test_duckdb_value_fixes_and_the_name_repair(duck_shop, cache_root, wrong, right):
    with sqlmend.Corrector(duck_shop, stages="static,search,guard") as fixer:
        result = fixer.correct("Which ones?", wrong)
    assert result.sql == right, result.explain()


def test_duckdb_schema_filter_is_part_of_the_cache_key(duck_shop, cache_root):
    with connect(f"duckdb://{duck_shop}?schemas=hr") as db:
        assert [t.name for t in db.schema().tables] == ["hr.badges", "hr.employees"]
        assert db.value_index().columns() == [("hr.badges", "badge"), ("hr.employees", "full_name"),
                                              ("hr.employees", "dept")]
    with connect(duck_shop) as db:  # the whole file: its own schema and value index
        assert ("sales.orders", "status") in db.value_index().columns()


#: Queries on qualified, quoted, mixed-case names and views for every rule and generator to read.
PG_QUERIES = [sql for _, sql, _ in PG_CASES] + [
    'SELECT o."Status", count(*) FROM sales."Orders" AS o GROUP BY o."Status" ORDER BY count(*) DESC LIMIT 1',
    "SELECT full_name FROM hr.employees WHERE id IN (SELECT employee_id FROM sales.\"Orders\" WHERE amount > 10)",
    'SELECT dept, staff FROM hr.dept_sizes WHERE staff >= 2 UNION SELECT "Status", 1 FROM sales.open_orders',
]
DUCK_QUERIES = [
    "SELECT badge FROM hr.badges WHERE full_name = 'Ana Lima'",
    "SELECT e.dept, count(*) FROM hr.employees AS e JOIN hr.badges AS b ON e.id = b.employee_id GROUP BY e.dept",
    "SELECT status, sum(amount) FROM sales.open_orders WHERE status = 'Pending' GROUP BY status",
    "SELECT name FROM regions WHERE id = (SELECT max(id) FROM main.regions)",
]


@pytest.mark.parametrize("engine", ["postgres", "duckdb"])
def test_every_rule_and_generator_reads_qualified_names(engine, request, cache_root):
    """No rule or generator trips on schema-qualified, quoted names and views (the search would skip a
    generator that raised, silently): each runs on every query, and each candidate renders and reaches
    the engine. On DuckDB the join_path generator joins hr.employees along hr.badges' key."""
    from sqlmend import rules, search, sql

    target, queries = ((request.getfixturevalue("pg_shop"), PG_QUERIES) if engine == "postgres"
                       else (request.getfixturevalue("duck_shop"), DUCK_QUERIES))
    made: dict[str, set[str]] = {}
    with connect(target) as db:
        inp = search.SearchInput("Which ones?", db.schema(), db.value_index())
        for text in queries:
            rules.check(db, text, "Which ones?")
            tree = sql.parse(text, dialect=db.dialect)
            for gen in search.generators.all_generators():
                for candidate, _label in gen(tree, inp):
                    rendered = sql.render(candidate, dialect=db.dialect)
                    sql.parse(rendered, dialect=db.dialect)
                    made.setdefault(gen.name, set()).add(rendered)
        runs = 0
        for rendered in sorted(made.get("join_path", ())) + sorted(made.get("stored_name", ())):
            try:
                db.execute(rendered, timeout=5)
                runs += 1
            except QueryError:
                pass
    assert runs and len(made) >= 8, sorted(made)
    if engine == "duckdb":
        assert ("SELECT badge FROM hr.badges JOIN hr.employees ON badges.employee_id = employees.id "
                "WHERE full_name = 'Ana Lima'") in made["join_path"]


# --- MariaDB ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def maria_shop(mysql_server):
    """Two MariaDB databases: ``shop`` (a table with comments and a view) and ``people`` (read when named)."""
    from mysql_server import READER as MYSQL_READER

    statements = [
        "CREATE DATABASE shop", "CREATE DATABASE people",
        "CREATE TABLE people.employees (id INT PRIMARY KEY, dept VARCHAR(20) COLLATE utf8mb4_bin) COMMENT 'staff'",
        "CREATE TABLE shop.orders (order_id INT PRIMARY KEY, "
        "status VARCHAR(20) COLLATE utf8mb4_bin COMMENT 'order state: pending or shipped', employee_id INT, "
        "FOREIGN KEY (employee_id) REFERENCES people.employees (id)) COMMENT 'customer orders'",
        "INSERT INTO people.employees VALUES (1, 'Sales'), (2, 'Finance')",
        "INSERT INTO shop.orders VALUES (10, 'pending', 1), (11, 'shipped', 2), (12, 'pending', 1)",
        "CREATE VIEW shop.open_orders AS SELECT order_id, status FROM shop.orders WHERE status = 'pending'",
        f"GRANT SELECT ON shop.* TO '{MYSQL_READER}'@'%'", f"GRANT SELECT ON people.* TO '{MYSQL_READER}'@'%'",
    ]
    for statement in statements:
        mysql_server.admin(statement)
    return mysql_server.url("shop")


def test_mariadb_views_comments_and_a_second_database(maria_shop, cache_root):
    with connect(maria_shop) as db:
        schema = db.schema()
    assert [(t.name, t.kind, t.comment) for t in schema.tables] == [
        ("open_orders", "view", ""), ("orders", "table", "customer orders")]
    assert schema.table("orders").column("status").comment == "order state: pending or shipped"
    assert schema.table("orders").foreign_keys[0].ref_table == "people.employees"  # not read: named whole
    with connect(maria_shop, schemas=["shop", "people"]) as db:
        schema = db.schema()
    assert [t.name for t in schema.tables] == ["people.employees", "open_orders", "orders"]
    assert schema.table("orders").foreign_keys[0].ref_table == "people.employees"
    assert schema.table("people.employees").comment == "staff"
    with sqlmend.Corrector(maria_shop, stages="static,guard", schemas=["shop", "people"]) as fixer:
        for wrong in ("SELECT count(*) FROM open_orders WHERE status = 'Pending'",
                      "SELECT count(*) FROM people.employees WHERE dept = 'sales'"):
            result = fixer.correct("How many?", wrong)
            assert result.changed and [f.code for f in result.findings] == ["VL01"], result.explain()


# --- SQLite ---------------------------------------------------------------------------------------------


def test_sqlite_views_are_relations(sqlite_copy, cache_root):
    path = sqlite_copy("concert_singer")
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE VIEW french_singers AS SELECT Name, Age FROM singer WHERE Country = 'France'")
    with connect(path) as db:
        schema = db.schema()
        view = schema.table("french_singers")
        assert (view.kind, view.schema, [c.name for c in view.columns], view.row_count) == (
            "view", "main", ["Name", "Age"], 4)
        assert ("french_singers", "Name") in db.value_index().columns()
    with sqlmend.Corrector(path, stages="static,guard") as fixer:
        result = fixer.correct("How old is Rose White?", "SELECT Age FROM french_singers WHERE Name = 'rose white'")
        assert result.sql == "SELECT Age FROM french_singers WHERE Name = 'Rose White'", result.explain()
        assert result.findings[0].evidence["views"] == {"french_singers": "view"}  # the trace tells a view
        unknown = fixer.check("Names?", "SELECT Name FROM french_singers WHERE nationality = 'x'")
        assert [f.code for f in unknown.findings][:1] == ["AT01"]
