"""The refinement baselines on a real database, with recorded model answers."""

from __future__ import annotations

from sqlmend.llm import ReplayBackend
from sqlmend.refine.baselines import DinSqlStage, MacSqlStage, SelfCorrectionStage, SelfDebugStage

Q = "What is the name of the oldest singer?"
WRONG = "SELECT Name FROM singer ORDER BY Age ASC LIMIT 1"
RIGHT = "SELECT Name FROM singer ORDER BY Age DESC LIMIT 1"


def test_self_correction_always_calls_and_can_corrupt(make_ctx):
    # a correct query, "improved" into a wrong one: the guard cannot know, it only checks it runs
    model = ReplayBackend.scripted([f"```sql\n{WRONG}\n```"])
    ctx = make_ctx(Q, RIGHT, backends={"baseline": model})
    trace = SelfCorrectionStage().run(ctx)
    msgs = model.history[0]["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    assert msgs[2]["content"] == RIGHT and "Review your previous answer" in msgs[3]["content"]
    assert trace.calls == 1 and trace.verdict.accepted and trace.candidate == WRONG


def test_din_sql_answer_continues_the_select(make_ctx):
    model = ReplayBackend.scripted(["Name FROM singer ORDER BY Age DESC LIMIT 1"])
    trace = DinSqlStage().run(make_ctx(Q, WRONG, backends={"baseline": model}))
    assert "Use DESC and DISTINCT when needed" in model.history[0]["messages"][-1]["content"]
    assert trace.candidate == RIGHT and trace.verdict.accepted


def test_mac_sql_only_acts_on_failure_or_empty_result(make_ctx):
    model = ReplayBackend.scripted([])
    trace = MacSqlStage().run(make_ctx(Q, WRONG, backends={"baseline": model}))
    assert trace.status == "skipped" and model.history == []
    model = ReplayBackend.scripted(["```sql\nSELECT Name FROM singer WHERE Age > 40\n```"])
    trace = MacSqlStage().run(make_ctx("Singers older than 40?", "SELECT Nme FROM singer WHERE Age > 40",
                                       backends={"baseline": model}))
    assert "no such column" in trace.detail["trigger"]
    assert "no such column" in model.history[0]["messages"][-1]["content"]
    assert trace.verdict.accepted and trace.calls == 1


def test_mac_sql_repeats_while_the_new_sql_fails(make_ctx):
    model = ReplayBackend.scripted(["```sql\nSELECT Nam FROM singer\n```",
                                    "```sql\nSELECT Name FROM singer\n```"])
    trace = MacSqlStage().run(make_ctx("Singer names?", "SELECT Nme FROM singer",
                                       backends={"baseline": model}))
    assert trace.calls == 2 and "no such column: Nam" in model.history[1]["messages"][-1]["content"]
    assert trace.candidate == "SELECT Name FROM singer" and trace.verdict.accepted


def test_self_debug_sees_the_result_and_stops_when_correct(make_ctx):
    model = ReplayBackend.scripted([f"It sorts ascending, so it finds the youngest.\n```sql\n{RIGHT}\n```",
                                    "The result is the oldest singer. The SQL is correct."])
    trace = SelfDebugStage().run(make_ctx(Q, WRONG, backends={"baseline": model}))
    assert "Tribal King" in model.history[0]["messages"][-1]["content"]  # execution feedback
    assert trace.calls == 2 and trace.candidate == RIGHT and trace.verdict.accepted


def test_baselines_skip_without_a_model(make_ctx):
    for stage in (SelfCorrectionStage(), DinSqlStage(), SelfDebugStage()):
        trace = stage.run(make_ctx(Q, WRONG))
        assert trace.status == "skipped" and "no model configured" in trace.note
