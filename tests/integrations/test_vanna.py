"""sqlmend in Vanna 2.0: a real ``Agent`` with Vanna's ``RunSqlTool`` on :class:`SqlmendRunner`, on real Spider
databases, its model a Vanna ``LlmService`` scripted with wrong queries real systems wrote (the pattern of
Vanna's own mock services)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("vanna")

from vanna import Agent, AgentConfig, ToolRegistry, User  # noqa: E402
from vanna.core.llm import LlmResponse, LlmService, LlmStreamChunk  # noqa: E402
from vanna.core.tool import ToolCall  # noqa: E402
from vanna.core.user import RequestContext, UserResolver  # noqa: E402
from vanna.integrations.local import LocalFileSystem, MemoryConversationStore  # noqa: E402
from vanna.integrations.local.agent_memory import DemoAgentMemory  # noqa: E402
from vanna.tools import RunSqlTool  # noqa: E402

from sqlmend.errors import ConfigError  # noqa: E402
from sqlmend.integrations.vanna import ConversationQuestion, SqlmendRunner  # noqa: E402

CASES = ["value in another case", "name not in the schema", "failing join"]


class ScriptedLlm(LlmService):
    """Calls ``run_sql`` with each scripted SQL in turn, then answers with the last tool result."""

    def __init__(self, *sql: str):
        self.sql = list(sql)
        self.tool_results: list[str] = []

    async def send_request(self, request):
        last = request.messages[-1]
        if last.role == "tool":
            self.tool_results.append(last.content)
        if self.sql:
            call = ToolCall(id=f"call{len(self.sql)}", name="run_sql", arguments={"sql": self.sql.pop(0)})
            return LlmResponse(content="", tool_calls=[call], finish_reason="tool_calls")
        return LlmResponse(content=f"Answer: {self.tool_results[-1]}", finish_reason="stop")

    async def stream_request(self, request):
        r = await self.send_request(request)
        yield LlmStreamChunk(content=r.content, tool_calls=r.tool_calls, finish_reason=r.finish_reason)

    async def validate_tools(self, tools):
        return []


class Anyone(UserResolver):
    async def resolve_user(self, request_context):
        return User(id="u1")


class Watched(SqlmendRunner):
    """The runner as the agent gets it, noting the question each query ran under."""

    def answer(self, sql, question=None):
        self.questions = [*getattr(self, "questions", []), question]
        return super().answer(sql, question)


def _ask(runner: SqlmendRunner, llm: ScriptedLlm, question: str, folder) -> None:
    tools = ToolRegistry()
    tools.register_local_tool(RunSqlTool(sql_runner=runner, file_system=LocalFileSystem(str(folder))),
                              access_groups=[])
    store = MemoryConversationStore()
    agent = Agent(llm_service=llm, tool_registry=tools, user_resolver=Anyone(), agent_memory=DemoAgentMemory(),
                  conversation_store=store, context_enrichers=[ConversationQuestion(store)],
                  config=AgentConfig(stream_responses=False))

    async def talk() -> None:
        async for _ in agent.send_message(RequestContext(), question):
            pass

    asyncio.run(talk())


@pytest.mark.parametrize("name", CASES)
def test_the_agent_gets_sqlmends_corrected_rows(name, cases, correctors, tmp_path):
    case, fixer = cases[name], correctors[cases[name].db_id]
    answers: list[dict] = []
    runner = Watched(fixer, on_answer=answers.append)
    llm = ScriptedLlm(case.sql)
    _ask(runner, llm, case.question, tmp_path)
    fixed = fixer.correct(case.question, case.sql)
    assert fixed.changed and runner.questions == [case.question]  # the conversation's question is the evidence
    assert answers[0]["sql"] == fixed.sql and answers[0]["findings"]
    assert case.rows_are_gold(answers[0]["rows"])
    saved = next(tmp_path.rglob("query_results_*.csv")).read_text()  # what the application keeps
    assert len(saved.splitlines()) == len(case.gold) + 1
    assert llm.tool_results[0].startswith(saved.splitlines()[0])  # the model reads the corrected rows


def test_a_write_is_refused_and_the_file_unchanged(cases, copied, tmp_path):
    case = cases["value in another case"]
    copy = copied(case.db_id)
    answers: list[dict] = []
    llm = ScriptedLlm("DROP TABLE airlines", "UPDATE airlines SET Country = 'x'", case.sql)
    _ask(SqlmendRunner(str(copy.path), on_answer=answers.append), llm, case.question, tmp_path)
    assert [a["refused"] for a in answers] == [True, True, False]
    assert all("refused: not one read-only query" in r for r in llm.tool_results[:2]), llm.tool_results
    assert case.rows_are_gold(answers[2]["rows"])
    assert copy.unchanged()


def test_a_result_past_max_rows_is_an_error_not_its_first_rows(correctors, cases, tmp_path):
    fixer = correctors[cases["value in another case"].db_id]
    llm = ScriptedLlm("SELECT * FROM flights")
    _ask(SqlmendRunner(fixer, max_rows=50), llm, "All flights?", tmp_path)
    assert "the result has more rows than the runner returns (50 rows)" in llm.tool_results[0]
    with pytest.raises(ConfigError, match="a sqlmend.Corrector, a path or a URL"):
        SqlmendRunner(42)
