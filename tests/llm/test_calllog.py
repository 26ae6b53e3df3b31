"""The SQLite call log and cache: migrations, rows, tags, cache on/off."""

from __future__ import annotations

import sqlite3

import pytest

from sqlmend.llm import CallLog, ChatOptions, ReplayBackend, tagged
from sqlmend.llm.calllog import MIGRATIONS

MSG = [{"role": "user", "content": "Which table holds singers?"}]


def test_migrations_apply_once_and_upgrade_old_files(tmp_path):
    path = tmp_path / "llm.sqlite"
    db = sqlite3.connect(path)
    db.executescript(MIGRATIONS[0] + "; PRAGMA user_version = 1;")
    db.close()
    log = CallLog(path)
    assert log.version == len(MIGRATIONS)
    cols = {r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(calls)")}
    assert {"stage", "prompt_hash", "tokens_in", "tokens_out", "latency", "cache_hit", "tag",
            "schema_valid", "attempt", "constrained"} <= cols
    log.close()
    assert CallLog(path).version == len(MIGRATIONS)  # reopening changes nothing


def test_every_call_logged_and_identical_calls_cached(tmp_path):
    log = CallLog(tmp_path / "llm.sqlite")
    backend = ReplayBackend.scripted(["users", "never used"], log=log)
    with tagged("q1"):
        a = backend.chat(MSG, stage="refiner")
        b = backend.chat(MSG, stage="refiner")
    assert not a.cached and b.cached and b.text == "users"
    assert len(backend.history) == 1  # the second call never reached the model
    rows = log.calls(tag="q1")
    assert [r["cache_hit"] for r in rows] == [0, 1]
    assert rows[0]["prompt_hash"] == rows[1]["prompt_hash"]
    assert (rows[0]["stage"], rows[0]["backend"], rows[0]["model"]) == ("refiner", "replay", "scripted")
    assert rows[0]["tokens_in"] == 4 and rows[0]["tokens_out"] == 1
    summary = log.summary(tag="q1")
    assert summary == [{"stage": "refiner", "calls": 2, "cache_hits": 1, "errors": 0,
                        "tokens_in": 8, "tokens_out": 2, "latency": pytest.approx(a.latency),
                        "structured": 0, "valid": 0, "retries": 0}]
    assert log.summary(tag="other") == []


def test_sampling_calls_are_not_cached(tmp_path):
    log = CallLog(tmp_path / "llm.sqlite")
    backend = ReplayBackend.scripted(["one", "two"], log=log)
    opts = ChatOptions(temperature=0.8)
    assert [backend.chat(MSG, opts).text for _ in range(2)] == ["one", "two"]


@pytest.mark.parametrize("how", ["argument", "env"])
def test_cache_off_still_logs(tmp_path, monkeypatch, how):
    if how == "env":
        monkeypatch.setenv("SQLMEND_LLM_CACHE", "0")
        log = CallLog(tmp_path / "llm.sqlite")
    else:
        log = CallLog(tmp_path / "llm.sqlite", cache=False)
    backend = ReplayBackend.scripted(["one", "two"], log=log)
    assert [backend.chat(MSG).text for _ in range(2)] == ["one", "two"]
    assert [r["cache_hit"] for r in log.calls()] == [0, 0]


def test_failed_calls_are_logged_with_their_error(tmp_path):
    log = CallLog(tmp_path / "llm.sqlite")
    backend = ReplayBackend.scripted([], log=log)
    with pytest.raises(Exception, match="no scripted answer"):
        backend.chat(MSG, stage="judge")
    (row,) = log.calls()
    assert row["stage"] == "judge" and "no scripted answer" in row["error"]
    assert log.summary()[0]["errors"] == 1


def test_clear_cache(tmp_path):
    log = CallLog(tmp_path / "llm.sqlite")
    backend = ReplayBackend.scripted(["a", "b"], log=log)
    backend.chat(MSG)
    assert log.clear_cache() == 1
    assert backend.chat(MSG).text == "b"


def test_structured_calls_record_validity_and_the_retry(tmp_path):
    """A garbage answer, then a valid one: two rows, attempt 1 invalid, attempt 2 valid."""
    log = CallLog(tmp_path / "llm.sqlite")
    schema = {"type": "object", "properties": {"table": {"type": "string"}}, "required": ["table"]}
    backend = ReplayBackend.scripted(["the singer table", '{"table": "singer"}', "singer"], log=log)
    res = backend.chat(MSG, schema=schema, stage="judge")
    assert res.parsed == {"table": "singer"} and res.attempts == 2
    rows = log.calls()
    assert [(r["schema_valid"], r["attempt"], r["constrained"]) for r in rows] == [(0, 1, None),
                                                                                  (1, 2, None)]
    backend.chat(MSG, stage="judge")  # no schema: validity unknown
    assert log.calls()[-1]["schema_valid"] is None
    (row,) = log.summary()
    assert (row["calls"], row["structured"], row["valid"], row["retries"]) == (3, 2, 1, 1)
