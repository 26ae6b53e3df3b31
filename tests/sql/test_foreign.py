"""Another dialect's SQL read as that dialect and written in the target's (sql.foreign), the fix ops
that use it (transpile, is_null, cast), and a model's raw answer taken apart (sql.answer)."""

from __future__ import annotations

from contextlib import nullcontext

import pytest

from sqlmend.errors import FixError, SqlParseError
from sqlmend.sql import parse
from sqlmend.sql.answer import extract
from sqlmend.sql.fixes import apply
from sqlmend.sql.foreign import clause_counts, keeps_text, readings, transpiled

# (written, its first reading on SQLite, on PostgreSQL)
SPELLINGS = [
    ("SELECT TOP 3 Name FROM country ORDER BY Population DESC",
     "SELECT Name FROM country ORDER BY Population DESC LIMIT 3",
     "SELECT Name FROM country ORDER BY Population DESC LIMIT 3"),
    ("SELECT Name FROM country ORDER BY Population DESC FETCH FIRST 5 ROWS ONLY",
     "SELECT Name FROM country ORDER BY Population DESC LIMIT 5", None),
    ("SELECT UCASE(Name) FROM country WHERE Continent = 'Europe'",
     "SELECT UPPER(Name) FROM country WHERE Continent = 'Europe'",
     "SELECT UPPER(Name) FROM country WHERE Continent = 'Europe'"),
    ("SELECT Name FROM country WHERE LEN(Name) > 20", "SELECT Name FROM country WHERE LENGTH(Name) > 20",
     "SELECT Name FROM country WHERE LENGTH(Name) > 20"),
    ("SELECT Name FROM country WHERE CONTAINS(Name, 'land')", "SELECT Name FROM country WHERE Name LIKE '%land%'",
     "SELECT Name FROM country WHERE Name LIKE '%land%'"),
    ("SELECT CONCAT(Name, ' ', Continent) FROM country", "SELECT Name || ' ' || Continent FROM country", None),
    ("SELECT count(*) FROM o WHERE YEAR(placed) = 2024",
     "SELECT COUNT(*) FROM o WHERE CAST(STRFTIME('%Y', placed) AS INTEGER) = 2024",
     "SELECT COUNT(*) FROM o WHERE EXTRACT(YEAR FROM placed) = 2024"),
]


@pytest.mark.parametrize(("text", "on_sqlite", "on_postgres"), SPELLINGS, ids=[s[0][:30] for s in SPELLINGS])
def test_a_foreign_spelling_reads_as_the_target_writes_it(text, on_sqlite, on_postgres):
    assert readings(text, "sqlite")[0].sql == on_sqlite
    if on_postgres is not None:
        assert readings(text, "postgres")[0].sql == on_postgres


def test_the_reading_is_the_fix_the_transpile_op_writes():
    text = "SELECT TOP 3 Name FROM country ORDER BY Population DESC"
    first = readings(text, "sqlite")[0]
    assert first.dialect == "tsql"
    fix = {"op": "transpile", "path": "", "expect": text, "read": first.dialect}
    assert apply(text, [fix]) == first.sql == transpiled(text, "tsql", "sqlite")
    with pytest.raises(FixError):  # the whole query: applied alone, on the text it was planned on
        apply(text, [fix, {"op": "set_distinct", "path": ""}])
    with pytest.raises(FixError):
        apply(text + " ", [fix])


def test_the_target_keeps_its_own_place_for_nulls():
    # PostgreSQL puts NULLs first in DESC, SQLite last: a text that says nothing means the database's own
    assert "NULLS" not in readings("SELECT a FROM t ORDER BY b DESC FETCH FIRST 2 ROWS ONLY", "sqlite")[0].sql
    kept = readings("SELECT TOP 2 a FROM t ORDER BY b DESC NULLS FIRST", "sqlite")
    assert kept and "NULLS FIRST" in kept[0].sql


def test_a_reading_never_drops_a_name_a_value_or_a_clause():
    text = "SELECT nme FROM singer WHERE Age > 40"
    tree = parse("SELECT name FROM singer WHERE Age > 40")
    assert not keeps_text(text, "sqlite", tree)  # a name lost
    assert not keeps_text(text, "sqlite", parse("SELECT nme FROM singer WHERE Age > 41"))  # a value lost
    assert not keeps_text(text, "sqlite", parse("SELECT nme FROM singer"))  # the WHERE lost
    assert keeps_text(text, "sqlite", parse(text))
    # MySQL reads "nme" as a string; PostgreSQL (the target) as a column: no reading hides the unknown column
    assert readings('SELECT "nme" FROM singer', "postgres") == []
    assert readings("SELECT nam FROM singer", "sqlite") == []
    assert clause_counts(parse("SELECT a FROM t WHERE b IN (SELECT c FROM u) ORDER BY a LIMIT 1")) == {
        "select": 2, "where": 1, "order": 1, "limit": 1}


def test_null_comparison_and_cast_ops():
    text = "SELECT a FROM t WHERE x = NULL AND y <> NULL"
    fixes = [{"op": "is_null", "path": "where.this.this", "expect": "x = NULL"},
             {"op": "is_null", "path": "where.this.expression", "expect": "y <> NULL"}]
    assert apply(text, fixes) == "SELECT a FROM t WHERE x IS NULL AND NOT y IS NULL"
    cast = {"op": "cast", "path": "where.this.this", "expect": "STRFTIME('%Y', d)", "type": "INTEGER"}
    assert apply("SELECT a FROM t WHERE strftime('%Y', d) = 2024", [cast]) == \
        "SELECT a FROM t WHERE CAST(STRFTIME('%Y', d) AS INTEGER) = 2024"
    with pytest.raises(FixError):
        apply("SELECT a FROM t WHERE x = 1", [{"op": "is_null", "path": "where.this", "expect": None}])


# --- a model's raw answer ---------------------------------------------------------------------

RAW = [
    ("```sql\nSELECT Name FROM country WHERE Continent = 'Asia';\n```",
     "SELECT Name FROM country WHERE Continent = 'Asia'", "fence", True),
    ("Here is the query: SELECT count(*) FROM city WHERE District = 'California';",
     "SELECT count(*) FROM city WHERE District = 'California'", "prose", True),
    ("Here is the query:\n\n```sql\nSELECT count(*) FROM city\n```\n\nThis counts the cities.",
     "SELECT count(*) FROM city", "fence", False),
    ("SELECT name FROM singer;\n\nThis query lists the names.", "SELECT name FROM singer", "prose", True),
    ("SELECT name FROM singer. It lists the names.", "SELECT name FROM singer", "prose", False),
    ("To select all singers use: SELECT name FROM singer ORDER BY age",
     "SELECT name FROM singer ORDER BY age", "prose", False),
    ("The answer is:\n```\nSELECT T1.name FROM singer AS T1 WHERE T1.age > 3.5\n```",
     "SELECT T1.name FROM singer AS T1 WHERE T1.age > 3.5", "fence", False),
    ("```sql\nSELECT TOP 3 Name FROM country\n", "SELECT TOP 3 Name FROM country", "fence", False),
]


@pytest.mark.parametrize(("raw", "sql", "how", "semicolon"), RAW, ids=[r[0][:30] for r in RAW])
def test_the_sql_of_a_raw_answer(raw, sql, how, semicolon):
    found = extract(raw)
    assert (found.sql, found.how, found.semicolon, found.statements) == (sql, how, semicolon, 1)
    parse(found.sql, "tsql" if "TOP" in sql else "sqlite")


@pytest.mark.parametrize("text", [
    "SELECT name FROM singer", "SELECT name FROM singer;", "SELECT 1; DROP TABLE singer",
    "SELECT a FROM t WHERE (SELECT b FROM c", "SELECT TOP 3 Name FROM country", "I cannot answer this.", ""])
def test_plain_sql_and_no_sql_are_no_raw_answer(text):
    assert extract(text) is None


@pytest.mark.parametrize(("raw", "sql"), [
    ("Here: SELECT 1; DROP TABLE singer;", "SELECT 1;\nDROP TABLE singer"),
    ("```sql\nSELECT 1;\nDELETE FROM singer;\n```", "SELECT 1;\nDELETE FROM singer"),
    ("Here is the query: DELETE FROM singer WHERE x IN (SELECT y FROM t)",
     "DELETE FROM singer WHERE x IN (SELECT y FROM t)"),
])
def test_every_statement_found_is_kept_so_a_write_stays_a_write(raw, sql):
    found = extract(raw)
    assert found.sql == sql
    with pytest.raises(SqlParseError) if ";" in sql else nullcontext():
        parse(found.sql)


def test_a_long_text_is_read_in_its_own_dialect_only():
    from sqlmend.sql.foreign import MAX_READ_CHARS

    long = "SELECT TOP 1 a FROM t WHERE " + " AND ".join(f"x{i} = {i}" for i in range(MAX_READ_CHARS // 8))
    assert len(long) > MAX_READ_CHARS and readings(long, "sqlite") == []
    assert extract("SELECT a FROM t WHERE " + "x = 1 AND " * 3000 + " garbage") is None
