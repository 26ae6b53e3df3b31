"""One answer on every door: the same inputs (good, wrong, hostile, empty, unknown database,
pathological, with alternatives) through the command line, the Python API, the HTTP service, the MCP
server (``correct_sql``, ``check_sql``, ``run_sql``) and the framework integrations (LangChain's checker
tool, LlamaIndex's query engine, Vanna's SQL runner) give the same corrected SQL, the same findings, the same
error and the same vote of the alternatives, for a correction and for a check.

A door is one small adapter in :data:`DOORS`: ``door(ctx, item, check) -> Answer``, or None for an input it
cannot take (the integrations correct, they do not check; they take no alternatives or evidence; LlamaIndex's
engine hands on the SQL its parser took out of the model's text). To add one, write its adapter beside these
and append it to ``DOORS``; nothing else changes. Answers are compared less the server paths the service must
hide (the service's own scrubber is applied to every door's answer)."""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from sqlmend.api import Corrector
from sqlmend.cli import app as cli_app
from sqlmend.pipeline import PipelineConfig, error_text
from sqlmend.service import ServiceSettings, create_app
from sqlmend.service.scrub import Scrubber, server_roots

STAGES = ["static", "consensus", "search", "guard"]
TIMEOUT = 10.0  # `sqlmend check`'s default, given to every door
CONFIG = PipelineConfig(stages=STAGES, timeout=TIMEOUT)


@dataclass(frozen=True)
class Item:
    name: str
    sql: str
    question: str = "How many singers are there?"
    evidence: str = ""
    db: str = "concert_singer"  # a database of the test's root; "nope" is none
    alternatives: tuple[str, ...] = ()  # other answers to the question


ITEMS = [
    Item("good", "SELECT count(*) FROM singer"),
    Item("wrong value", "SELECT count(*) FROM singer WHERE Country = 'france'", "How many singers are from France?"),
    Item("unknown column", "SELECT nam FROM singer", "Names of the singers?"),
    Item("garbled", "SELEC Name FROM singer WHERE"),
    Item("write", "DELETE FROM singer"),
    Item("two statements", "SELECT Name FROM singer; DROP TABLE singer"),
    Item("file function", "SELECT readfile('/etc/passwd')"),
    Item("empty", ""),
    Item("blank", "  \n\t "),
    Item("unknown database", "SELECT count(*) FROM singer", db="nope"),
    Item("empty on an unknown database", "", db="nope"),
    Item("nested deep", "SELECT * FROM " + "(SELECT * FROM " * 3000 + "singer" + ")" * 3000),
    Item("long", "SELECT Name FROM singer WHERE " + " OR ".join(f"Singer_ID = {i}" for i in range(40))),
    Item("odd question", "SELECT Name FROM singer WHERE Age > 40", question="\x00 ☃ '; DROP TABLE singer; --",
         evidence="Age is in years \u202e"),
    Item("outvoted", "SELECT count(*) FROM singer WHERE Country = 'French'", "How many singers are from France?",
         alternatives=("SELECT count(*) FROM singer WHERE country = 'France'",
                       "SELECT COUNT(Singer_ID) FROM singer WHERE Country = 'France'")),
    Item("alternatives agree", "SELECT count(*) FROM singer",
         alternatives=("SELECT COUNT(Singer_ID) FROM singer", "SELECT count(*) FROM singer WHERE Age > 40")),
    Item("hostile alternatives", "SELECT count(*) FROM singer",
         alternatives=("DELETE FROM singer", "SELECT Name FROM singer; DROP TABLE singer",
                       "SELECT readfile('/etc/passwd')", "UPDATE singer SET Age = 0")),
    Item("alternatives on an unknown database", "SELECT count(*) FROM singer", db="nope",
         alternatives=("SELECT 1",)),
    # a model's raw answer: the SQL is taken out once, before anything parses it (Pipeline.correct)
    Item("fenced answer", "```sql\nSELECT count(*) FROM singer WHERE Country = 'France';\n```",
         "How many singers are from France?"),
    Item("answer in a sentence", "Here is the query: SELECT Name FROM singer WHERE Age > 40; it lists them.",
         "Names of the singers over 40?"),
    Item("fenced write", "```sql\nSELECT Name FROM singer;\nDELETE FROM singer;\n```"),
    # another dialect's SQL, written in the database's own
    Item("another dialect", "SELECT TOP 1 Name FROM singer ORDER BY Age DESC", "The oldest singer?"),
]


@dataclass(frozen=True)
class Answer:
    """What a door says about one item: the SQL to use, the findings' codes, the error."""

    sql: str | None
    findings: tuple[str, ...]
    error: str | None
    vote: str | None = None  # the consensus stage's note: the alternatives' vote and its decision


def _vote(stages) -> str | None:
    return next(((s["note"] if isinstance(s, dict) else s.note) for s in stages
                 if (s["stage"] if isinstance(s, dict) else s.stage) == "consensus"), None)


class Doors:
    """What the doors share in one test module: the database root and the service."""

    def __init__(self, root: Path):
        self.root = root
        self.client = TestClient(create_app(CONFIG, resolve=lambda stage: None,
                                            settings=ServiceSettings(allow_paths=True)))
        self.scrub = Scrubber(server_roots([root]))
        self.mcp: dict | None = None  # the MCP server's answers, asked once for every item
        self._fixer: Corrector | None = None

    def path(self, item: Item) -> str:
        return str(self.root / item.db / f"{item.db}.sqlite")

    def fixer(self) -> Corrector:
        """The one Corrector the integrations share (an application's)."""
        if self._fixer is None:
            self._fixer = Corrector(self.path(ITEMS[0]), config=CONFIG, models=lambda stage: None)
        return self._fixer

    def close(self) -> None:
        if self._fixer is not None:
            self._fixer.close()


def _codes(findings) -> tuple[str, ...]:
    return tuple(f["code"] if isinstance(f, dict) else f.code for f in findings)


# --- the doors -------------------------------------------------------------------------------


def python_api(doors: Doors, item: Item, check: bool) -> Answer:
    try:
        fixer = Corrector(doors.path(item), config=CONFIG, models=lambda stage: None)
    except Exception as exc:  # a Corrector of a missing database raises at construction
        return Answer(None if check else item.sql, (), error_text(exc))
    with fixer:
        result = (fixer.check if check else fixer.correct)(item.question, item.sql, item.evidence,
                                                           alternatives=list(item.alternatives))
    return Answer(None if check else result.sql, _codes(result.findings), result.error, _vote(result.stages))


def command_line(doors: Doors, item: Item, check: bool) -> Answer:
    runner = CliRunner()
    alts = [arg for a in item.alternatives for arg in ("--alternative", a)]
    if check:
        r = runner.invoke(cli_app, ["check", "--db", doors.path(item), "--question", item.question,
                                    "--sql", item.sql, "--timeout", str(TIMEOUT), "--json", *alts])
        if r.exit_code == 2:
            return Answer(None, (), r.stderr.strip().removeprefix("error: "))
        assert r.exit_code == 0, r.output
        body = json.loads(r.stdout)
        return Answer(None, _codes(body["findings"]), body["error"], _vote(body["stages"]))
    r = runner.invoke(cli_app, ["correct", "--db", doors.path(item), "--question", item.question, "--sql", item.sql,
                                "--evidence", item.evidence, "--stages", ",".join(STAGES), "--timeout",
                                str(TIMEOUT), "--json", *alts])
    assert r.exit_code in (0, 1), r.output
    body = json.loads(r.stdout)
    assert (r.exit_code == 1) == bool(body["error"])
    return Answer(body["sql"], _codes(f for s in body["stages"] for f in s["findings"]), body["error"],
                  _vote(body["stages"]))


def http_service(doors: Doors, item: Item, check: bool) -> Answer:
    r = doors.client.post("/check" if check else "/correct",
                          json={"db": doors.path(item), "question": item.question, "sql": item.sql,
                                "evidence": item.evidence, "alternatives": list(item.alternatives)})
    assert r.status_code == 200, r.text
    body = r.json()
    findings = body["findings"] if check else [f for s in body["stages"] for f in s["findings"]]
    return Answer(None if check else body["sql"], _codes(findings), body["error"], _vote(body["stages"]))


def _mcp_answers(root: Path) -> dict[tuple[str, bool], tuple[bool, dict | None, str]]:
    """Every item, corrected and checked, through one stdio session with a real `sqlmend mcp`."""
    import os
    import sys

    import anyio
    from mcp import Client, StdioServerParameters

    import sqlmend

    src = str(Path(sqlmend.__file__).resolve().parents[1])
    params = StdioServerParameters(
        command=sys.executable, env={**os.environ, "PYTHONPATH": src},
        args=["-c", "from sqlmend.cli import main; main()", "mcp", "--db",
              f"concert_singer={root / 'concert_singer' / 'concert_singer.sqlite'}",
              "--stages", ",".join(STAGES), "--timeout", str(TIMEOUT)])

    async def run() -> dict:
        out = {}
        async with Client(params) as client:
            for ask in SCHEMA_ASKS:
                r = await client.call_tool("find_schema", {"database": ask.db, "question": ask.question,
                                                           "sql": ask.sql, "budget": ask.budget})
                out[(ask.name, "schema")] = (r.is_error, r.structured_content, r.content[0].text if r.content else "")
            for item in ITEMS:
                for check in (False, True):
                    r = await client.call_tool("check_sql" if check else "correct_sql",
                                               {"database": item.db, "question": item.question, "sql": item.sql,
                                                "evidence": item.evidence, "alternatives": list(item.alternatives)})
                    out[(item.name, check)] = (r.is_error, r.structured_content,
                                               r.content[0].text if r.content else "")
                if _plain(item):
                    r = await client.call_tool("run_sql", {"database": item.db, "question": item.question,
                                                           "sql": item.sql})
                    out[(item.name, "run")] = (r.is_error, r.structured_content, r.content[0].text if r.content else "")
        return out

    return anyio.run(run)


def mcp_server(doors: Doors, item: Item, check: bool) -> Answer:
    if doors.mcp is None:
        doors.mcp = _mcp_answers(doors.root)
    is_error, body, text = doors.mcp[(item.name, check)]
    if item.db != "concert_singer":  # not served: the agent gets a tool error, not another database
        assert is_error and "unknown database 'nope'" in text and "concert_singer" in text, text
        return python_api(doors, item, check)
    assert not is_error, text
    return _answer(body, check)


def _answer(body: dict, check: bool = False) -> Answer:
    """The Answer of a door that gives a correction's (or a check's) dict (mcpserver.tools')."""
    vote = next((line.split(" ", 1)[1].split(": ", 1)[1].rsplit("  (", 1)[0]
                 for line in body["explanation"].splitlines() if line.startswith("consensus ")), None)
    return Answer(None if check else body["sql"], _codes(body["findings"]), body["error"], vote)


#: Inputs the integrations and run_sql leave to the other doors: their correction is Corrector.correct's, in
#: process or over the MCP transport that correct_sql already carries it on, and it costs seconds of search.
COSTLY = {"long"}


def _plain(item: Item) -> bool:
    """An input an integration takes as it is: a correction of a question and a SQL (no alternatives, no evidence)."""
    return not item.alternatives and not item.evidence and item.name not in COSTLY


def mcp_run_sql(doors: Doors, item: Item, check: bool) -> Answer | None:
    if check or not _plain(item):
        return None
    if doors.mcp is None:
        doors.mcp = _mcp_answers(doors.root)
    is_error, body, text = doors.mcp[(item.name, "run")]
    if item.db != "concert_singer":
        assert is_error and "unknown database 'nope'" in text, text
        return python_api(doors, item, check)
    assert not is_error and (body["ran"] or body["refused"] or body["error"] or body["run_error"]), text
    return _answer(body)


def _integration(doors: Doors, item: Item, check: bool, build: Callable[[Any], Any],
                 ask: Callable[[Any], dict]) -> Answer | None:
    """An integration's answer: ``build(db)`` makes it on the item's database (the shared Corrector; a path
    for the unknown one, whose error is the Corrector's), ``ask(made)`` gives sqlmend's answer it got."""
    if check or not _plain(item):
        return None
    if item.db != "concert_singer":
        try:
            build(doors.path(item))
        except Exception as exc:
            return Answer(item.sql, (), error_text(exc))
        raise AssertionError("an integration opened a database that does not exist")
    return _answer(ask(build(doors.fixer())))


def langchain_checker(doors: Doors, item: Item, check: bool) -> Answer | None:
    """LangChain's ``sql_db_query_checker`` of sqlmend's toolkit: its message's artifact."""
    pytest.importorskip("langchain_core")
    from sqlmend.integrations.langchain import SqlmendToolkit

    def ask(toolkit: Any) -> dict:
        call = {"type": "tool_call", "id": "1", "name": "sql_db_query_checker",
                "args": {"query": item.sql, "question": item.question}}
        return toolkit.get_tools()[3].invoke(call).artifact

    return _integration(doors, item, check, lambda db: SqlmendToolkit(db=db), ask)


def llamaindex_engine(doors: Doors, item: Item, check: bool) -> Answer | None:
    """LlamaIndex's ``NLSQLTableQueryEngine`` on sqlmend's database, its model answering the item's SQL."""
    pytest.importorskip("llama_index.core")
    from llama_index.core import QueryBundle
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.indices.struct_store.sql_retriever import DefaultSQLParser
    from llama_index.core.llms.mock import MockLLM
    from llama_index.core.query_engine import NLSQLTableQueryEngine

    from sqlmend.integrations.llamaindex import SqlmendSQLDatabase

    if DefaultSQLParser().parse_response_to_sql(item.sql, QueryBundle(item.question)) != item.sql:
        return None  # the engine hands sqlmend what its parser took out, not the item's SQL
    answers: list[dict] = []

    class Answering(MockLLM):  # LlamaIndex's mock LLM, its text-to-SQL answer the item's SQL
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            return super().complete(item.sql, formatted=formatted, **kwargs)

    def ask(db: Any) -> dict:
        engine = NLSQLTableQueryEngine(sql_database=db, llm=Answering(), synthesize_response=False,
                                       embed_model=MockEmbedding(embed_dim=8))
        engine.query(item.question)
        return answers[-1]

    return _integration(doors, item, check, lambda db: SqlmendSQLDatabase(db, on_answer=answers.append), ask)


def vanna_runner(doors: Doors, item: Item, check: bool) -> Answer | None:
    """Vanna's ``SqlRunner`` of sqlmend, the item's question in the tool context."""
    pytest.importorskip("vanna")
    import anyio
    from vanna import User
    from vanna.capabilities.sql_runner import RunSqlToolArgs
    from vanna.core.tool import ToolContext
    from vanna.integrations.local.agent_memory import DemoAgentMemory

    from sqlmend.integrations.vanna import SqlmendRunner

    answers: list[dict] = []
    context = ToolContext(user=User(id="u"), conversation_id="c", request_id="r", agent_memory=DemoAgentMemory(),
                          metadata={"question": item.question})

    def ask(runner: Any) -> dict:
        try:
            anyio.run(runner.run_sql, RunSqlToolArgs(sql=item.sql), context)
        except Exception:  # a refusal, a failing query: the runner raises, its answer was told first
            pass
        return answers[-1]

    return _integration(doors, item, check, lambda db: SqlmendRunner(db, on_answer=answers.append), ask)


#: Inputs LlamaIndex's engine hands on as they are (its parser strips a text and takes the SQL out of a fence).
LLAMAINDEX_TAKES = {"good", "wrong value", "unknown column", "garbled", "write", "two statements", "file function",
                    "empty", "unknown database", "nested deep", "answer in a sentence", "another dialect"}

#: Every door a correction can come through.
DOORS: list[Callable[[Doors, Item, bool], Answer | None]] = [
    python_api, command_line, http_service, mcp_server, mcp_run_sql, langchain_checker, llamaindex_engine,
    vanna_runner]


# --- find_schema: the schema a question needs, on every door --------------------------------------


@dataclass(frozen=True)
class SchemaAsk:
    name: str
    question: str
    sql: str | None = None
    budget: int = 4096
    db: str = "concert_singer"


SCHEMA_ASKS = [
    SchemaAsk("question", "Which singers are from France?"),
    SchemaAsk("a failing draft", "Names of the stadiums and themes of the concerts held there",
              "SELECT nme, theme FROM stadiums JOIN concerts ON id = stadium", budget=512),
    SchemaAsk("a tight budget", "How many concerts were held in each stadium?", budget=256),
    SchemaAsk("hostile draft", "How many singers?", "DROP TABLE singer; SELECT readfile('/etc/passwd')"),
    SchemaAsk("budget out of range", "How many singers?", budget=10_000_000),
    SchemaAsk("unknown database", "How many singers?", db="nope"),
]


def _schema_body(body: dict) -> dict:
    """What every door must agree on: the answer less the database's name (a door names it its own way)."""
    return {k: v for k, v in body.items() if k != "database"}


def schema_answers(doors: Doors, ask: SchemaAsk) -> dict[str, Any]:
    """``find_schema``'s answer (or error) through the Python API, the MCP server, the HTTP service and the CLI."""
    out: dict[str, Any] = {}
    try:
        with Corrector(doors.path(ask), config=CONFIG, models=lambda stage: None) as fixer:
            out["python_api"] = {"dialect": fixer.dialect, **fixer.schema_for(ask.question, ask.sql, ask.budget).to_dict()}
    except Exception as exc:
        out["python_api"] = {"error": str(exc)}
    if doors.mcp is None:
        doors.mcp = _mcp_answers(doors.root)
    is_error, body, text = doors.mcp[(ask.name, "schema")]
    if ask.db != "concert_singer":  # not served: a tool error naming the served ones
        assert is_error and "unknown database 'nope'" in text, text
    elif ask.budget > 1 << 20:  # refused by the tool's own argument schema
        assert is_error and "budget" in text, text
    else:
        out["mcp_server"] = {"error": text} if is_error else _schema_body(body)
    r = doors.client.post("/schema", json={"db": doors.path(ask), "question": ask.question, "sql": ask.sql,
                                           "budget": ask.budget})
    out["http_service"] = _schema_body(r.json()) if r.status_code == 200 else {"error": r.json()["detail"]}
    assert r.status_code in (200, 400, 404), r.text
    args = ["schema", "--db", doors.path(ask), "--question", ask.question, "--budget", str(ask.budget), "--json"]
    cli = CliRunner().invoke(cli_app, args + (["--sql", ask.sql] if ask.sql is not None else []))
    out["command_line"] = _schema_body(json.loads(cli.stdout)) if cli.exit_code == 0 else \
        {"error": cli.stderr.strip().removeprefix("error: ")}
    return {door: doors.scrub.value(answer) for door, answer in out.items()}


@pytest.mark.parametrize("ask", SCHEMA_ASKS, ids=[a.name for a in SCHEMA_ASKS])
def test_find_schema_gives_one_answer_on_every_door(doors, ask):
    answers = schema_answers(doors, ask)
    assert len(answers) >= 3
    first = next(iter(answers.values()))
    assert all(a == first for a in answers.values()), json.dumps(answers, indent=1, ensure_ascii=False)
    if "error" not in first:
        assert len(first["text"]) <= ask.budget and first["tables"]


def test_find_schema_answers_are_the_expected_ones(doors):
    by_name = {a.name: a for a in SCHEMA_ASKS}
    first = schema_answers(doors, by_name["question"])["python_api"]
    assert first["tables"][0] == "singer" and first["values"] == {"singer.Country": ["France"]}
    draft = schema_answers(doors, by_name["a failing draft"])["python_api"]
    assert set(draft["tables"][:2]) == {"stadium", "concert"}, draft["tables"]  # nme, stadiums, concerts: invented
    assert {"left": "concert.Stadium_ID", "right": "stadium.Stadium_ID", "how": "foreign key"} in draft["joins"]
    assert "budget is a number of characters" in schema_answers(doors, by_name["budget out of range"])["python_api"]["error"]
    assert schema_answers(doors, by_name["unknown database"])["python_api"]["error"].startswith("no SQLite database at")


# --- the test ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def doors(tmp_path_factory, spider_db):
    root = tmp_path_factory.mktemp("doors")
    (root / "concert_singer").mkdir()
    db = root / "concert_singer" / "concert_singer.sqlite"
    shutil.copyfile(spider_db("concert_singer"), db)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    d = Doors(root)
    with d.client:
        yield d
    d.close()
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


@pytest.mark.parametrize("check", [False, True], ids=["correct", "check"])
@pytest.mark.parametrize("item", ITEMS, ids=[i.name for i in ITEMS])
def test_every_door_gives_one_answer(doors, item, check):
    answers = {door.__name__: doors.scrub.value(answer.__dict__) for door in DOORS
               if (answer := door(doors, item, check)) is not None}
    # a door skips only an input it cannot take (see the module's docstring)
    takes = {"mcp_run_sql", "langchain_checker", "vanna_runner"} if not check and _plain(item) else set()
    assert {"python_api", "command_line", "http_service", "mcp_server"} | takes <= set(answers), sorted(answers)
    if not check and item.name in LLAMAINDEX_TAKES:
        assert "llamaindex_engine" in answers
    first = next(iter(answers.values()))
    assert all(a == first for a in answers.values()), json.dumps(answers, indent=1, ensure_ascii=False)


def test_the_answers_are_the_expected_ones(doors):
    """The shared answer is the right one, not only the same one."""
    def answer(name, check=False):
        return python_api(doors, next(i for i in ITEMS if i.name == name), check)

    assert answer("wrong value").sql == "SELECT COUNT(*) FROM singer WHERE Country = 'France'"
    assert answer("write").findings == ("EX03",) and answer("two statements").findings == ("EX03",)
    assert answer("empty").error == "empty SQL" and answer("blank").error == "empty SQL"
    assert answer("unknown database").error.startswith("DatabaseNotFoundError")
    assert answer("empty on an unknown database").error == answer("unknown database").error
    assert answer("fenced answer").sql == "SELECT count(*) FROM singer WHERE Country = 'France'"
    assert answer("fenced answer").findings[0] == "EX05"
    assert answer("answer in a sentence").sql == "SELECT Name FROM singer WHERE Age > 40"
    assert set(answer("fenced write").findings) == {"EX05", "EX03"}
    assert answer("fenced write", check=True).findings == answer("fenced write").findings
    assert answer("another dialect").sql == "SELECT Name FROM singer ORDER BY Age DESC LIMIT 1"
    nested = next(i for i in ITEMS if i.name == "nested deep")
    assert answer("nested deep").sql == nested.sql and answer("nested deep").error is None
    # two alternatives agree against a query sqlmend suspects: their answer replaces it
    assert answer("outvoted").sql == "SELECT count(*) FROM singer WHERE country = 'France'"
    assert "consensus" in answer("outvoted").findings and "2 agree on others" in answer("outvoted").vote
    assert "replaced by the strict rule" in answer("outvoted").vote
    assert "the strict rule would replace it" in answer("outvoted", check=True).vote  # a check replaces nothing
    assert answer("alternatives agree").sql == "SELECT count(*) FROM singer"
    assert answer("alternatives agree").vote.startswith("1 of 2 alternatives return these rows")
    hostile = answer("hostile alternatives")  # reported, never run (the fixture checks the file is unchanged)
    assert hostile.sql == "SELECT count(*) FROM singer" and "(4 refused)" in hostile.vote
    assert answer("alternatives on an unknown database").error.startswith("DatabaseNotFoundError")
