"""Write the read-only function lists, src/sqlmend/sql/function_lists/<dialect>.toml, from the engines'
own catalogues.

Usage (from the repository root, with the package importable)::

    python scripts/function_lists.py            # all four
    python scripts/function_lists.py sqlite duckdb

Each file holds ``[read]``: the engine's functions that read and compute (aggregates, arithmetic,
string, date and time, conditional, casts, JSON readers, window functions ...), by family; and
``[refused]``: the engine's functions that are left off the list, by family (files, locks, statistics,
replication, notifications, sequences, settings, signals, extensions, sleeping, ...), which the tests
call on real servers. A query may call only what ``[read]`` names (``sqlmend.sql.functions``).

How each list is made:

* **sqlite**: ``pragma function_list`` of the SQLite that Python links (every function it has), less the
  ones that load code, touch files or write; plus core functions of later SQLite releases (from the
  SQLite documentation) and the table-valued functions.
* **postgres**: ``pg_proc`` of a throw-away PostgreSQL server (:mod:`sqlmend.testing.pgserver`): the
  functions of ``pg_catalog`` a query can call (no ``internal``, trigger or handler types, no type I/O or
  operator implementations), kept when ``provolatile`` is immutable or stable, or when a volatile one
  only computes (``random``, the clock), and not in a refused family (names below); plus functions of
  later releases (from the PostgreSQL documentation).
* **duckdb**: ``duckdb_functions()`` of the installed DuckDB: scalar, aggregate, window functions and
  macros without ``has_side_effects`` (random and uuid aside), the table functions that generate rows,
  less the refused families.
* **mysql**: MariaDB's own help tables (``mysql.help_topic``: the built-in functions each release
  documents) of a throw-away server (:mod:`sqlmend.testing.mysqlserver`), plus the documented built-ins
  those tables leave out (JSON, window, encryption and hash functions, dynamic columns; MySQL 8's too),
  less the refused families.

Every list also names ``syntax``: the grammar that sqlglot writes like a call (``CAST(``, ``EXTRACT(``).
"""

from __future__ import annotations

import datetime
import re
import sys
from collections import defaultdict
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "src" / "sqlmend" / "sql" / "function_lists"
TODAY = datetime.date.today().isoformat()

#: Grammar that sqlglot writes as NAME(...), per dialect: not functions of the engine's catalogue.
SYNTAX = {
    "sqlite": ["cast", "exists"],
    "postgres": ["all", "any", "array", "cast", "coalesce", "exists", "extract", "greatest", "grouping",
                 "least", "nullif", "overlay", "position", "row", "some", "substring", "treat", "trim",
                 "xmlattributes", "xmlelement", "xmlexists", "xmlforest", "xmlparse", "xmlpi", "xmlroot",
                 "xmlserialize"],
    "duckdb": ["cast", "columns", "exists", "extract", "grouping", "grouping_id", "position", "row",
               "struct", "substring", "trim", "try_cast", "unpack"],
    "mysql": ["cast", "convert", "exists", "extract", "grouping", "interval", "match", "position", "row",
              "substring", "trim"],
}


def write(dialect: str, engine: str, how: list[str], read: dict[str, set[str]], refused: dict[str, set[str]]) -> Path:
    """Write one list as TOML (names sorted, families sorted)."""
    allowed = set().union(*read.values())
    lines = [f"# The functions a query may call on {engine.split()[0]}: those that read and compute.",
             f"# Made by `python scripts/function_lists.py {dialect}` on {TODAY} from {engine}:"]
    lines += [f"#   {line}" for line in how]
    lines += ["# A query that calls a function the [read] families do not name is refused (finding EX03),",
              "# unless the engine has no such function (then the engine reports the error). [refused] names",
              "# the engine's functions left off, by family. Your own pure functions: --allow-function NAME",
              "# (docs/pipeline.md, \"Read-only, whatever the login\"). Rerun the script, do not edit by hand.",
              "", f'dialect = "{dialect}"', f'engine = "{engine}"', "", "[read]"]
    for family in sorted(read):
        lines += _array(family, read[family])
    lines += ["", "[refused]"]
    for family in sorted(refused):
        names = refused[family] - allowed
        if names:
            lines += _array(family, names)
    path = OUT / f"{dialect}.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{path}: {len(allowed)} read, {len(set().union(*refused.values()) - allowed)} refused")
    return path


def _array(key: str, names: set[str]) -> list[str]:
    out, line = [f"{key} = ["], "  "
    for name in sorted(names):
        item = f'"{name}", '
        if len(line) + len(item) > 100:
            out.append(line.rstrip())
            line = "  "
        line += item
    out.append(line.rstrip().rstrip(","))
    out.append("]")
    return out


def _family(name: str, families: list[tuple[str, str]]) -> str | None:
    for family, pattern in families:
        if re.fullmatch(pattern, name):
            return family
    return None


# --- SQLite ------------------------------------------------------------------

SQLITE_REFUSED = {
    "extensions": {"load_extension"},
    "files": {"readfile", "writefile", "edit", "fsdir", "lsdir", "zipfile", "sqlar_compress", "sqlar_uncompress"},
    "internals": {"fts3_tokenizer", "fts5", "optimize", "sqlite_log", "sqlite_dbpage", "sqlite_drop_column",
                  "sqlite_rename_column", "sqlite_rename_table", "sqlite_rename_test"},
}
#: Core functions of SQLite releases after the one Python links here (sqlite.org/lang_corefunc.html,
#: lang_mathfunc.html, json1.html, lang_aggfunc.html), and the table-valued functions.
SQLITE_LATER = {
    "scalar": {"concat", "concat_ws", "format", "if", "octet_length", "timediff", "unhex", "unistr",
               "unistr_quote", "json_error_position", "json_pretty", "jsonb", "jsonb_array", "jsonb_extract",
               "jsonb_insert", "jsonb_object", "jsonb_patch", "jsonb_remove", "jsonb_replace", "jsonb_set",
               "sqlite_offset"},
    "aggregate": {"string_agg", "jsonb_group_array", "jsonb_group_object", "median", "percentile",
                  "percentile_cont", "percentile_disc"},
    "table": {"json_each", "json_tree", "jsonb_each", "jsonb_tree", "generate_series"},
}


def sqlite_list() -> Path:
    import sqlite3

    conn = sqlite3.connect(":memory:")
    kinds = {"s": "scalar", "a": "aggregate", "w": "aggregate_or_window"}
    read: dict[str, set[str]] = defaultdict(set)
    denied = set().union(*SQLITE_REFUSED.values())
    for name, kind in conn.execute("SELECT name, type FROM pragma_function_list"):
        if name not in denied and re.fullmatch(r"[a-z_][a-z0-9_]*", name):
            read[kinds.get(kind, "scalar")].add(name)
    for family, names in SQLITE_LATER.items():
        read[family] |= names - denied
    read["syntax"] = set(SYNTAX["sqlite"])
    return write("sqlite", f"SQLite {sqlite3.sqlite_version} (pragma function_list)",
                 ["`SELECT name, type FROM pragma_function_list` less the refused families, plus core",
                  "functions of later releases (sqlite.org/lang_corefunc.html, json1.html) and the",
                  "table-valued functions."],
                 read, SQLITE_REFUSED)


# --- PostgreSQL ----------------------------------------------------------------

#: Families of pg_catalog functions that are refused whatever their volatility (first match wins).
PG_FAMILIES = [
    ("files", r"pg_read_file\w*|pg_read_binary_file|pg_stat_file|pg_ls_\w+|pg_file_\w+|pg_current_logfile"),
    ("large_objects", r"lo_\w+|loread|lowrite"),
    ("locks", r"pg_(try_)?advisory_\w+|pg_lock_status|pg_blocking_pids|pg_safe_snapshot_blocking_pids|"
              r"pg_isolation_test_session_is_blocked"),
    ("statistics", r"pg_stat_\w+|pg_stat"),
    ("replication", r"pg_replication_\w+|pg_\w*replication_slot\w*|pg_logical_\w+|pg_get_replication_slots|"
                    r"pg_show_replication_origin_status|pg_get_publication_tables|pg_relation_is_publishable"),
    ("wal_backup_recovery", r"pg_(backup|switch|promote|create_restore_point|wal_\w+|current_wal\w*|last_wal\w*|"
                            r"walfile\w*|is_in_recovery|is_wal_replay_paused|get_wal\w*|last_xact_replay\w*|"
                            r"control_\w+|export_snapshot|backup_\w+)\w*"),
    ("notifications", r"pg_notify|pg_listening_channels|pg_notification_queue_usage"),
    ("sequences", r"nextval|setval|currval|lastval|pg_sequence_\w+|pg_get_serial_sequence"),
    ("settings", r"set_config|current_setting|pg_show_all_settings|pg_show_all_file_settings|pg_settings_get_flags|"
                 r"pg_reload_conf|pg_conf_load_time|pg_config|pg_hba_file_rules|pg_ident_file_mappings|setseed"),
    ("signals", r"pg_(cancel|terminate)_backend|pg_log_backend_memory_contexts|pg_rotate_logfile\w*|"
                r"pg_reload_conf|pg_backend_pid"),
    ("extensions", r"pg_\w*extension\w*|pg_available_extension\w*"),
    ("sleep", r"pg_sleep\w*"),
    ("transactions", r"txid_\w+|pg_current_xact_id\w*|pg_xact_\w+|pg_current_snapshot|pg_snapshot_\w+|"
                     r"pg_visible_in_snapshot|pg_prepared_xact|pg_last_committed_xact|pg_get_multixact_members"),
    ("dynamic_sql", r"query_to_xml\w*|cursor_to_xml\w*|table_to_xml\w*|schema_to_xml\w*|database_to_xml\w*|"
                    r"ts_stat|ts_rewrite|pg_cursor|pg_prepared_statement"),
    ("maintenance", r"brin_\w+|gin_clean_pending_list|binary_upgrade_\w+|pg_import_system_collations|"
                    r"pg_stop_making_pinned_objects|pg_nextoid|amvalidate|\w+_validator|pg_partition_\w+"),
    ("privileges_and_server", r"has_\w+_privilege|pg_has_role|row_security_active|inet_(client|server)_\w+|"
                              r"current_query|pg_postmaster_start_time|pg_trigger_depth|pg_jit_available|"
                              r"pg_get_shmem_allocations|pg_get_backend_memory_contexts|pg_tablespace_\w+|"
                              r"pg_relation_file\w*|pg_filenode_relation|pg_\w*_size|pg_event_trigger_\w+"),
    ("catalog", r"pg_\w+|acl\w+|makeaclitem|hash_aclitem\w*"),
]
#: Helpers of pg_catalog that only compute, kept although they start with pg_.
PG_KEEP = {"pg_typeof", "pg_column_size", "pg_size_pretty", "pg_size_bytes", "pg_client_encoding"}
#: Volatile functions that only compute (random numbers, the clock).
PG_VOLATILE_READ = {"random", "clock_timestamp", "timeofday", "gen_random_uuid"}
#: Functions of PostgreSQL releases after 15 that only compute (postgresql.org/docs/release/).
PG_LATER = {"any_value", "array_reverse", "array_sample", "array_shuffle", "array_sort", "casefold", "crc32",
            "crc32c", "date_add", "date_subtract", "erf", "erfc", "gamma", "json_exists", "json_query",
            "json_scalar", "json_serialize", "json_table", "json_value", "lgamma", "random_normal", "reverse",
            "system_user", "to_bin", "to_oct", "uuid_extract_timestamp", "uuid_extract_version", "uuidv4",
            "uuidv7"}
_PG_INTERNAL_TYPES = {"internal", "trigger", "event_trigger", "language_handler", "fdw_handler", "index_am_handler",
                      "tsm_handler", "table_am_handler", "cstring"}


def postgres_list() -> Path:
    import psycopg

    from sqlmend.testing.pgserver import PgServer

    with PgServer.start() as server, psycopg.connect(server.url("postgres", user="postgres")) as conn:
        version = conn.execute("SHOW server_version").fetchone()[0].split()[0]
        rows = conn.execute("""
            SELECT p.proname, p.provolatile, p.prokind, p.proretset, p.prorettype::regtype::text,
                   ARRAY(SELECT t::regtype::text FROM unnest(p.proargtypes) t), obj_description(p.oid, 'pg_proc')
            FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = 'pg_catalog'""").fetchall()
    read: dict[str, set[str]] = defaultdict(set)
    refused: dict[str, set[str]] = defaultdict(set)
    for name, volatile, kind, retset, returns, args, description in rows:
        if returns in _PG_INTERNAL_TYPES or set(args) & _PG_INTERNAL_TYPES:
            continue
        if description and description.startswith(("implementation of", "I/O")):
            continue
        family = None if name in PG_KEEP else _family(name, PG_FAMILIES)
        if family is None and volatile == "v" and name not in PG_VOLATILE_READ:
            family = "other_volatile"
        if family:
            refused[family].add(name)
            continue
        group = {"a": "aggregate", "w": "window"}.get(kind) or ("set_returning" if retset else "scalar")
        read[group].add(name)
    read["later_releases"] = PG_LATER - set().union(*read.values())
    read["syntax"] = set(SYNTAX["postgres"])
    for names in refused.values():  # a name with a read-only overload and a refused one is refused
        for group in read.values():
            group -= names
    return write("postgres", f"PostgreSQL {version} (pg_proc)",
                 ["pg_catalog's functions with no internal, trigger or handler types and no type I/O or",
                  "operator implementation, kept when provolatile is immutable or stable (or a volatile one",
                  "that only computes: random, the clock) and not in a refused family; plus functions of",
                  "later releases (postgresql.org/docs)."],
                 read, refused)


# --- DuckDB ------------------------------------------------------------------

DUCKDB_FAMILIES = [
    ("files", r"read_\w+|glob|parquet_\w+|sniff_csv|\w+_scan|arrow_scan\w*|python_\w+|iceberg_\w+|delta_\w+|"
              r"sqlite_\w+|postgres_\w+|mysql_\w+|copy_database|import_database|parse_filename|read_duckdb"),
    ("settings", r"current_setting|getvariable|duckdb_settings|duckdb_secrets?|which_secret|duckdb_secret_\w+|"
                 r"setseed|enable_\w+|disable_\w+|verify_parallelism|add_parquet_key"),
    ("sequences", r"nextval|currval|setval|duckdb_sequences"),
    ("logs_and_profiling", r"write_log|\w*duckdb_log\w*|truncate_duckdb_logs|duckdb_profiling_settings|"
                           r"parse_duckdb_log_message|stats|vector_type"),
    ("sleep", r"sleep_ms|pg_sleep"),
    ("dynamic_sql", r"query|query_table|json_execute_serialized_sql|summary"),
    ("storage_and_server", r"checkpoint|force_checkpoint|duckdb_\w+|pragma_\w+|get_block_size|database_size|"
                           r"storage_info|metadata_info|\w*_external_resource\w*|\w+_grammar_extension|"
                           r"current_query\w*|current_connection_id|current_transaction_id|txid_current|"
                           r"test_\w+|seq_scan|icu_calendar_names|pg_timezone_names|platform|user_agent|"
                           r"version|extension_versions|collations|functions|show\w*|table_info|database_list"),
    ("privileges_and_server", r"has_\w+_privilege|pg_has_role|inet_(client|server)_\w+|pg_\w+"),
    ("errors", r"error"),
]
DUCKDB_KEEP = {"pg_typeof", "pg_size_pretty"}
#: Functions flagged with side effects that only compute values (random numbers, uuids).
DUCKDB_VOLATILE_READ = {"random", "uuid", "gen_random_uuid", "uuidv4", "uuidv7"}
#: Table functions that generate rows from their arguments.
DUCKDB_TABLE_READ = {"range", "generate_series", "unnest", "repeat", "repeat_row", "json_each", "json_tree"}


def duckdb_list() -> Path:
    import duckdb

    conn = duckdb.connect()
    rows = conn.execute("SELECT function_name, function_type, has_side_effects FROM duckdb_functions()").fetchall()
    read: dict[str, set[str]] = defaultdict(set)
    refused: dict[str, set[str]] = defaultdict(set)
    for name, kind, side_effects in rows:
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
            continue  # operators
        family = None if name in DUCKDB_KEEP else _family(name, DUCKDB_FAMILIES)
        if family is None and kind in ("table", "table_macro", "pragma") and name not in DUCKDB_TABLE_READ:
            family = "other_table_functions"
        if family is None and side_effects and name not in DUCKDB_VOLATILE_READ:
            family = "other_side_effects"
        if family:
            refused[family].add(name)
        else:
            read[{"table_macro": "table", "macro": "scalar"}.get(kind, kind)].add(name)
    read["syntax"] = set(SYNTAX["duckdb"])
    for names in refused.values():
        for group in read.values():
            group -= names
    return write("duckdb", f"DuckDB {duckdb.__version__} (duckdb_functions())",
                 ["scalar, aggregate and window functions and macros of duckdb_functions() without",
                  "has_side_effects (random and uuid aside), the table functions that generate rows,",
                  "less the refused families."],
                 read, refused)


# --- MariaDB / MySQL -------------------------------------------------------------

#: Help topics whose name is not the function's.
MYSQL_TOPICS = {"IF Function": "if", "REPEAT Function": "repeat", "REPLACE Function": "replace",
                "CHAR Function": "char", "INSERT Function": "insert", "DATE FUNCTION": "date"}
#: Help categories of functions (the rest of the help tables: statements, types, operators).
MYSQL_CATEGORIES = {"String Functions": "string", "Numeric Functions": "numeric",
                    "Date and Time Functions": "date_time", "Control flow functions": "control_flow",
                    "Functions and Modifiers for Use with GROUP BY": "aggregate", "Bit Functions": "bit",
                    "Geographic Features": "geographic", "Information Functions": "information",
                    "Miscellaneous Functions": "miscellaneous", "Functions": "comparison"}
#: Documented built-ins of MariaDB and MySQL 8 that the help tables leave out
#: (mariadb.com/kb/en/built-in-functions/, dev.mysql.com/doc/refman/8.0/en/built-in-function-reference.html).
MYSQL_DOCUMENTED = {
    "json": {"json_array", "json_arrayagg", "json_array_append", "json_array_insert", "json_array_intersect",
             "json_compact", "json_contains", "json_contains_path", "json_depth", "json_detailed", "json_equals",
             "json_exists", "json_extract", "json_insert", "json_keys", "json_key_value", "json_length",
             "json_loose", "json_merge", "json_merge_patch", "json_merge_preserve", "json_normalize",
             "json_object", "json_objectagg", "json_object_filter_keys", "json_object_to_array", "json_overlaps",
             "json_pretty", "json_query", "json_quote", "json_remove", "json_replace", "json_schema_valid",
             "json_schema_validation_report", "json_search", "json_set", "json_storage_free",
             "json_storage_size", "json_table", "json_type", "json_unquote", "json_valid", "json_value"},
    "window": {"row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead",
               "first_value", "last_value", "nth_value", "median", "percentile_cont", "percentile_disc"},
    "aggregate": {"any_value", "std", "stddev", "stddev_pop", "stddev_samp", "variance", "var_pop", "var_samp",
                  "bit_and", "bit_or", "bit_xor", "count", "group_concat", "max", "min", "sum", "avg"},
    "hash_and_encryption": {"md5", "sha", "sha1", "sha2", "aes_encrypt", "aes_decrypt", "compress", "uncompress",
                            "uncompressed_length", "des_encrypt", "des_decrypt", "encode", "decode", "encrypt",
                            "password", "old_password", "random_bytes", "kdf", "statement_digest",
                            "statement_digest_text", "validate_password_strength"},
    "string": {"regexp_like", "char_length", "lower", "upper", "to_char", "lengthb", "sformat",
               "natural_sort_key", "chr", "oct", "ord", "soundex", "bin", "hex", "unhex", "to_base64",
               "from_base64", "weight_string"},
    "date_time": {"time", "timestamp", "date", "utc_date", "utc_time", "utc_timestamp", "localtime",
                  "localtimestamp", "convert_tz", "from_unixtime", "unix_timestamp", "format_pico_time"},
    "dynamic_columns": {"column_add", "column_check", "column_create", "column_delete", "column_exists",
                        "column_get", "column_json", "column_list"},
    "uuid_and_network": {"uuid", "uuid_short", "uuid_v4", "uuid_v7", "sys_guid", "uuid_to_bin", "bin_to_uuid",
                         "is_uuid", "inet_aton", "inet_ntoa", "inet6_aton", "inet6_ntoa", "is_ipv4",
                         "is_ipv4_compat", "is_ipv4_mapped", "is_ipv6"},
    "information": {"charset", "coercibility", "collation", "connection_id", "current_role", "current_user",
                    "database", "schema", "session_user", "system_user", "user", "version", "found_rows",
                    "row_count", "icu_version", "rownum", "decode_histogram", "last_value", "default",
                    "format_bytes", "gtid_subset", "gtid_subtract"},
}
#: Built-ins with effects beyond reading, by family (the help tables' and MySQL 8's).
MYSQL_REFUSED = {
    "files": {"load_file"},
    "locks": {"get_lock", "release_lock", "release_all_locks", "is_free_lock", "is_used_lock"},
    "replication": {"master_pos_wait", "master_gtid_wait", "source_pos_wait", "binlog_gtid_pos",
                    "wait_for_executed_gtid_set", "wait_until_sql_thread_after_gtids", "wsrep_last_seen_gtid",
                    "wsrep_last_written_gtid", "wsrep_sync_wait_upto_gtid"},
    "sleep": {"sleep", "benchmark"},
    "sequences": {"nextval", "lastval", "setval", "last_insert_id"},
    "remote": {"spider_direct_sql", "spider_bg_direct_sql", "spider_copy_tables", "spider_flush_table_mon_cache"},
    "statements": {"values", "value", "old_value", "name_const"},
    "server_internals": {"roles_graphml", "internal_auto_increment", "internal_avg_row_length",
                         "internal_check_time", "internal_checksum", "internal_data_free", "internal_data_length",
                         "internal_dd_char_length", "internal_get_comment_or_error", "internal_get_enabled_role_json",
                         "internal_get_hostname", "internal_get_username", "internal_get_view_warning_or_error",
                         "internal_index_column_cardinality", "internal_index_length", "internal_is_enabled_role",
                         "internal_is_mandatory_role", "internal_keys_disabled", "internal_max_data_length",
                         "internal_table_rows", "internal_update_time", "can_access_column", "can_access_database",
                         "can_access_table", "can_access_view", "get_dd_column_privileges",
                         "get_dd_create_options", "get_dd_index_sub_part_length"},
}


def mysql_list() -> Path:
    from sqlmend.testing.mysqlserver import MySQLServer

    with MySQLServer.start() as server:
        conn = server.connection()
        try:
            with conn.cursor() as cursor:
                cursor.execute("SELECT VERSION()")
                version = cursor.fetchone()[0]
                cursor.execute("""SELECT t.name, c.name FROM mysql.help_topic t
                                  JOIN mysql.help_category c ON c.help_category_id = t.help_category_id""")
                topics = cursor.fetchall()
        finally:
            conn.close()
    denied = set().union(*MYSQL_REFUSED.values())
    read: dict[str, set[str]] = defaultdict(set)
    for topic, category in topics:
        family = MYSQL_CATEGORIES.get(category)
        name = MYSQL_TOPICS.get(topic, topic.replace("\\_", "_")).lower()
        if family and re.fullmatch(r"[a-z_][a-z0-9_]*", name) and name not in denied:
            read[family].add(name)
    for family, names in MYSQL_DOCUMENTED.items():
        read[family] |= names - denied
    read["comparison"] -= {"in", "is", "xor", "interval"}
    read["bit"] -= {"parentheses"}
    read["syntax"] = set(SYNTAX["mysql"])
    return write("mysql", f"MariaDB {version.split('-')[0]} (mysql.help_topic) and the MySQL 8 reference",
                 ["the function topics of MariaDB's help tables (mysql.help_topic) and the documented",
                  "built-ins they leave out (JSON, window, hash and encryption, dynamic columns, MySQL 8's),",
                  "less the refused families."],
                 read, MYSQL_REFUSED)


MAKERS = {"sqlite": sqlite_list, "postgres": postgres_list, "duckdb": duckdb_list, "mysql": mysql_list}

if __name__ == "__main__":
    wanted = sys.argv[1:] or list(MAKERS)
    unknown = [w for w in wanted if w not in MAKERS]
    if unknown:
        sys.exit(f"unknown dialect(s) {unknown}; known: {', '.join(MAKERS)}")
    OUT.mkdir(parents=True, exist_ok=True)
    for dialect in wanted:
        MAKERS[dialect]()
