"""sqlmend in LangChain: the prebuilt ReAct agents (langchain's ``create_agent``, langgraph's
``create_react_agent``) run end to end with :class:`SqlmendToolkit`'s tools, on real Spider databases, their
model LangChain's own fake chat model scripted with wrong queries real systems wrote."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain")
pytest.importorskip("langgraph")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage  # noqa: E402

from sqlmend.errors import ConfigError, DatabaseNotFoundError  # noqa: E402
from sqlmend.integrations.langchain import SqlmendToolkit  # noqa: E402

CASES = ["value in another case", "name not in the schema", "failing join"]


class ScriptedModel(FakeMessagesListChatModel):
    """LangChain's fake chat model, its scripted answers calling tools: an agent binds tools to it."""

    def bind_tools(self, tools, **kwargs):
        return self


def _call(name: str, args: dict, n: int) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call{n}"}])


def _tool_messages(state) -> dict[str, list[ToolMessage]]:
    out: dict[str, list[ToolMessage]] = {}
    for m in state["messages"]:
        if isinstance(m, ToolMessage):
            out.setdefault(m.name, []).append(m)
    return out


@pytest.mark.parametrize("name", CASES)
def test_the_agent_gets_sqlmends_corrected_rows(name, cases, correctors):
    """list tables -> schema -> check -> run, as the SQL agent's prompt asks; the model runs its own wrong
    query and the application gets the rows of sqlmend's correction."""
    case, fixer = cases[name], correctors[cases[name].db_id]
    toolkit = SqlmendToolkit(db=fixer)
    tables = toolkit.get_context()["table_names"]
    script = [_call("sql_db_list_tables", {"tool_input": ""}, 1),
              _call("sql_db_schema", {"table_names": tables}, 2),
              _call("sql_db_query_checker", {"query": case.sql, "question": case.question}, 3),
              _call("sql_db_query", {"query": case.sql, "question": case.question}, 4),
              AIMessage("done")]
    agent = create_agent(ScriptedModel(responses=script), toolkit.get_tools(), system_prompt="You are a SQL agent.")
    state = agent.invoke({"messages": [HumanMessage(case.question)]})
    said = _tool_messages(state)
    fixed = fixer.correct(case.question, case.sql)
    assert fixed.changed
    assert said["sql_db_list_tables"][0].content == tables
    checked = said["sql_db_query_checker"][0]
    assert checked.content.splitlines()[0] == fixed.sql  # the SQL to run first, the findings as comments
    assert checked.content.splitlines()[1].startswith("-- sqlmend corrected the query")
    assert checked.artifact["sql"] == fixed.sql and checked.artifact["findings"]
    ran = said["sql_db_query"][0]
    assert ran.artifact["sql"] == fixed.sql and ran.artifact["ran"] and ran.artifact["original_sql"] == case.sql
    assert case.rows_are_gold(ran.artifact["rows"]), ran.content
    assert ran.content.startswith(f"corrected: {fixed.sql}")
    assert state["messages"][-1].content == "done"


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_langgraphs_react_agent_runs_the_checked_query_and_a_write_is_refused(cases, copied):
    """langgraph's prebuilt ReAct agent: a DROP is refused (the file is byte for byte what it was), then the
    checker's whole answer, comments and all, runs as the corrected query."""
    from langgraph.prebuilt import create_react_agent

    case = cases["value in another case"]
    copy = copied(case.db_id)
    toolkit = SqlmendToolkit(db=str(copy.path))
    checked = toolkit.get_tools()[3].invoke({"query": case.sql, "question": case.question})
    script = [_call("sql_db_query", {"query": "DROP TABLE airlines"}, 1),
              _call("sql_db_query", {"query": f"SELECT 1; DELETE FROM {'airlines'}"}, 2),
              _call("sql_db_query", {"query": checked, "question": case.question}, 3),
              AIMessage("done")]
    agent = create_react_agent(ScriptedModel(responses=script), toolkit.get_tools())
    ran = _tool_messages(agent.invoke({"messages": [HumanMessage(case.question)]}))["sql_db_query"]
    for refused in ran[:2]:
        assert refused.artifact["refused"] and not refused.artifact["ran"]
        assert "not run: the text is not one read-only query" in refused.content
    assert case.rows_are_gold(ran[2].artifact["rows"])
    assert copy.unchanged()


def test_the_tools_stand_in_for_the_sql_toolkits(spider_db):
    """Same names, same order, and every input LangChain's tools take (the query tools add the optional
    question)."""
    community = pytest.importorskip("langchain_community.agent_toolkits.sql.toolkit")
    from langchain_community.utilities.sql_database import SQLDatabase

    db = spider_db("concert_singer")
    original = community.SQLDatabaseToolkit(db=SQLDatabase.from_uri(f"sqlite:///file:{db}?mode=ro&uri=true"),
                                            llm=ScriptedModel(responses=[AIMessage("x")])).get_tools()
    ours = SqlmendToolkit(db=str(db)).get_tools()
    assert [t.name for t in ours] == [t.name for t in original]
    for mine, theirs in zip(ours, original, strict=True):
        fields, their_fields = mine.args_schema.model_fields, theirs.args_schema.model_fields
        assert set(their_fields) <= set(fields), mine.name
        assert {k for k, f in fields.items() if f.is_required()} == \
            {k for k, f in their_fields.items() if f.is_required()}, mine.name
    checker = ours[3]
    assert checker.invoke("SELECT count(*) FROM singer") == \
        "SELECT count(*) FROM singer\n-- sqlmend: no mistake found; the query is unchanged"  # a plain string input


def test_bad_input_gets_a_clear_answer(spider_db, tmp_path):
    toolkit = SqlmendToolkit(db=str(spider_db("concert_singer")))
    schema = toolkit.get_tools()[1]
    assert schema.invoke({"table_names": "singer, nope"}).startswith("Error: table_names ['nope'] not found")
    assert schema.invoke({"table_names": "Singer"}).splitlines()[1].startswith("singer (6 rows)")
    with pytest.raises(DatabaseNotFoundError):
        SqlmendToolkit(db=str(tmp_path / "gone.sqlite"))
    with pytest.raises(ConfigError, match="a sqlmend.Corrector, a path or a URL"):
        SqlmendToolkit(db=42)
    empty = toolkit.get_tools()[0].invoke({"query": ""})
    assert empty == "query: \nnot run: empty SQL"
