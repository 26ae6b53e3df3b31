"""Recorded answers of the real SmolLM2 (``cassettes/smollm2.jsonl``), replayed strictly.

The cassette was recorded by ``python tests/refine/cassette_cases.py`` through the
embedded SmolLM2-135M; replaying it runs the whole pipeline offline and
deterministically. A 135M model writes poor SQL: what matters is that every
answer, whatever it is, reaches the output only through the guard.
"""

from __future__ import annotations

from cassette_cases import CASES, CASSETTE, run

from sqlmend import guard
from sqlmend.db import connect


def test_cassette_replays_every_call(spider_db):
    assert CASSETTE.is_file()
    results = run("strict")  # a call missing from the cassette raises CassetteMiss: a failed stage
    for (strategy, task), c in zip(CASES, results):
        model_stages = [s for s in c.stages if s.calls]
        assert model_stages, (strategy, [(s.stage, s.note) for s in c.stages])
        assert all(s.status == "ran" for s in model_stages), [s.note for s in model_stages]
        if c.changed:  # only a guarded rewrite can come out
            with connect(spider_db(task.db_id)) as db:
                assert guard.validate(db, task.sql, c.sql).accepted
            assert c.stages[-1].verdict.accepted
        else:
            assert c.sql == task.sql
    again = run("strict")
    assert [c.sql for c in again] == [c.sql for c in results]


def test_what_smollm2_said_is_handled_as_recorded():
    world, empty = run("strict")
    refine = next(s for s in world.stages if s.stage == "refine")
    # LocLLM skipped (static finding); RefLLM answered prose, then JSON without a SQL: kept
    assert refine.calls == 2 and refine.candidate is None and not world.changed
    assert "proposed no SQL" in refine.note
    assert "countrylanguage.IsOfficial" in refine.detail["prompts"][0]["messages"][-1]["content"]
    mac = empty.stages[0]
    assert mac.stage == "mac-sql" and mac.detail["trigger"] == "empty result"
    # its answer was CREATE TABLE statements: no SELECT in it, nothing to guard
    assert mac.calls == 1 and mac.candidate is None and not empty.changed
