"""``sqlmend mcp`` as an agent meets it: a real server subprocess driven by the official SDK's client,
over stdio and over streamable HTTP (with and without the bearer token), on copies of real Spider
databases. Each server starts once for the module; one session per transport makes every call and
the tests read its answers."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx
import pytest
from typer.testing import CliRunner

pytest.importorskip("mcp")

import httpx2  # noqa: E402  (the SDK's HTTP client)
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

import sqlmend  # noqa: E402
from sqlmend.api import Corrector  # noqa: E402
from sqlmend.cli import app  # noqa: E402
from sqlmend.errors import ConfigError  # noqa: E402
from sqlmend.mcpserver import config, tools  # noqa: E402
from sqlmend.service.runner import free_port  # noqa: E402

QUESTION = "How many singers are from France?"
FRANCE = "SELECT count(*) FROM singer WHERE country = 'france'"
FIXED = "SELECT COUNT(*) FROM singer WHERE country = 'France'"
DROP = "DROP TABLE singer"
# unbounded: only the time limit stops it
ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
STAGES = "static,memory,search,guard"  # no model stage: the same answers on any machine
TIMEOUT = 0.5
TOKEN = "test-token-7f3a"
TOOLS_ORDER = ("list_databases", "describe_schema", "find_schema", "check_sql", "correct_sql", "run_sql")
# a wide result: 4,079 rows of 20 columns, more than an answer's 64 KB
WIDE = "SELECT * FROM city JOIN country ON city.CountryCode = country.Code"
TOOLS = set(TOOLS_ORDER)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _command(db: Path, *extra: str) -> list[str]:
    return ["-c", "from sqlmend.cli import main; main()", "mcp", "--db", f"concert={db}",
            "--db", f"world={db.with_name('world_1.sqlite')}", "--stages", STAGES, "--timeout", str(TIMEOUT), *extra]


def _env(**extra: str) -> dict[str, str]:
    src = str(Path(sqlmend.__file__).resolve().parents[1])
    return {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra}


@pytest.fixture(scope="module")
def db(tmp_path_factory, spider_db) -> Path:
    """A copy of concert_singer (the DROP tests compare its bytes before and after), world_1's beside it."""
    path = tmp_path_factory.mktemp("mcp") / "concert_singer.sqlite"
    shutil.copyfile(spider_db("concert_singer"), path)
    shutil.copyfile(spider_db("world_1"), path.with_name("world_1.sqlite"))
    return path


async def _session(client: Client) -> dict:
    """Every call the tests look at, in one session; each answer as (is_error, structured, text)."""
    out: dict = {}

    async def call(key: str, tool: str, arguments: dict) -> None:
        start = time.perf_counter()
        r = await client.call_tool(tool, arguments)
        out[key] = (r.is_error, r.structured_content, r.content[0].text if r.content else "",
                    time.perf_counter() - start)

    out["tools"] = {t.name: t for t in (await client.list_tools()).tools}
    await call("databases", "list_databases", {})
    await call("tables", "list_databases", {"tables": True})
    await call("schema", "describe_schema", {"database": "concert"})
    await call("schema_page", "describe_schema", {"database": "concert", "budget": 1024})
    await call("schema_page2", "describe_schema", {"database": "concert", "budget": 1024, "cursor": "1"})
    await call("found", "find_schema", {"database": "concert", "question": QUESTION, "sql": FRANCE, "budget": 1024})
    await call("found_budget", "find_schema", {"database": "concert", "question": QUESTION, "budget": 12})
    await call("correct", "correct_sql", {"database": "concert", "question": QUESTION, "sql": FRANCE})
    await call("check", "check_sql", {"database": "concert", "question": QUESTION, "sql": FRANCE})
    await call("drop", "check_sql", {"database": "concert", "question": "q", "sql": DROP})
    await call("drop_correct", "correct_sql", {"database": "concert", "question": "q",
                                              "sql": "SELECT 1; DROP TABLE singer"})
    await call("unknown", "correct_sql", {"database": "nope", "question": "q", "sql": "SELECT 1"})
    await call("missing", "check_sql", {"database": "concert", "question": "q"})
    await call("wrong_type", "check_sql", {"database": "concert", "question": "q", "sql": 5})
    await call("endless", "check_sql", {"database": "concert", "question": "how many?", "sql": ENDLESS})
    await call("endless_correct", "correct_sql", {"database": "concert", "question": "how many?", "sql": ENDLESS})
    await call("after", "correct_sql", {"database": "concert", "question": QUESTION, "sql": FRANCE})
    await call("run", "run_sql", {"database": "concert", "question": QUESTION, "sql": FRANCE})
    await call("run_as_given", "run_sql", {"database": "concert", "sql": FRANCE, "correct": False})
    await call("run_wide", "run_sql", {"database": "world", "sql": WIDE, "max_rows": 1000})
    await call("run_rows", "run_sql", {"database": "world", "sql": "SELECT * FROM country"})
    await call("run_drop", "run_sql", {"database": "concert", "sql": DROP})
    await call("run_drop_as_given", "run_sql", {"database": "concert", "sql": DROP, "correct": False})
    await call("run_too_many", "run_sql", {"database": "concert", "sql": "SELECT 1", "max_rows": 100_000})
    return out


@pytest.fixture(scope="module")
def stdio(db):
    """The answers of one stdio session with `sqlmend mcp` (launched as an agent launches it)."""
    before = _sha256(db)
    params = StdioServerParameters(command=sys.executable, args=_command(db), env=_env())

    async def run() -> dict:
        async with Client(params) as client:
            return await _session(client)

    answers = anyio.run(run)
    answers["hash"] = (before, _sha256(db))
    return answers


@pytest.fixture(scope="module")
def http_server(db):
    """`sqlmend mcp --transport http` on a free loopback port, with a bearer token."""
    port = free_port()
    log = db.with_name("http-server.log")
    with log.open("wb") as err:  # a file, not a pipe nobody reads while the server runs
        proc = subprocess.Popen([sys.executable, *_command(db, "--transport", "http", "--port", str(port))],
                                env=_env(SQLMEND_TOKEN=TOKEN), stdout=subprocess.DEVNULL, stderr=err)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            pytest.fail(f"sqlmend mcp exited: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("sqlmend mcp --transport http did not start")
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def http(http_server, db):
    before = _sha256(db)

    async def run() -> dict:
        # the SDK's own timeouts (httpx2's default of 5 s is shorter than a correction on a loaded machine)
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"},
                                      timeout=httpx2.Timeout(30, read=300)) as http_client:
            transport = streamable_http_client(http_server + "/mcp", http_client=http_client)
            async with Client(transport) as client:
                return await _session(client)

    answers = anyio.run(run)
    answers["hash"] = (before, _sha256(db))
    return answers


def _api(db: Path):
    return Corrector(db, stages=STAGES, timeout=TIMEOUT)


TRANSPORTS = ["stdio", "http"]


@pytest.fixture(params=TRANSPORTS)
def answers(request):
    return request.getfixturevalue(request.param)


# --- over both transports ------------------------------------------------------------


def test_the_six_tools_are_listed_with_schemas_and_descriptions(answers):
    listed = answers["tools"]
    assert set(listed) == TOOLS
    for tool in listed.values():
        assert len(tool.description) > 80, tool.name
        assert tool.input_schema["type"] == "object" and tool.output_schema
        assert tool.annotations.read_only_hint and not tool.annotations.destructive_hint
    assert listed["correct_sql"].input_schema["required"] == ["database", "question", "sql"]
    assert "evidence" in listed["check_sql"].input_schema["properties"]
    assert listed["run_sql"].input_schema["required"] == ["database", "sql"]
    assert {"question", "correct", "max_rows"} <= set(listed["run_sql"].input_schema["properties"])
    assert listed["find_schema"].input_schema["required"] == ["database", "question"]
    assert {"sql", "budget"} <= set(listed["find_schema"].input_schema["properties"])


def test_find_schema_answers_what_the_api_answers(answers, db):
    is_error, body, text, _ = answers["found"]
    assert not is_error and text == body["text"] and len(text) <= 1024
    assert body["tables"][0] == "singer" and body["values"] == {"singer.Country": ["France"]}
    with _api(db) as fixer:
        assert body == tools.find_schema({"concert": fixer}, "concert", QUESTION, FRANCE, 1024)
    is_error, _, text, _ = answers["found_budget"]
    assert is_error and "budget" in text


def test_correct_sql_fixes_the_france_query_as_the_api_does(answers, db):
    is_error, body, text, _ = answers["correct"]
    assert not is_error
    assert body["sql"] == FIXED and body["changed"] and body["original_sql"] == FRANCE
    assert [f["code"] for f in body["findings"]] == ["VL01"]
    assert "France" in json.dumps(body["findings"][0]["evidence"])
    assert text == body["explanation"] and text.endswith(f"corrected: {FIXED}")
    with _api(db) as fixer:
        assert body == tools.correct_sql({"concert": fixer}, "concert", QUESTION, FRANCE)
        result = fixer.correct(QUESTION, FRANCE)
    assert (body["sql"], body["error"]) == (result.sql, result.error)
    assert body["findings"] == [f.to_dict() for f in result.findings]


def test_check_sql_reports_the_finding_with_its_evidence(answers, db):
    is_error, body, _, _ = answers["check"]
    assert not is_error and body["wrong"] and body["sql"] == FRANCE
    with _api(db) as fixer:
        assert body == tools.check_sql({"concert": fixer}, "concert", QUESTION, FRANCE)


def test_a_drop_is_reported_never_run(answers):
    is_error, body, _, _ = answers["drop"]
    assert not is_error and body["refused"] and body["wrong"]
    assert [f["code"] for f in body["findings"]] == ["EX03"]
    is_error, body, _, _ = answers["drop_correct"]
    assert not is_error and body["refused"] and not body["changed"]
    before, after = answers["hash"]
    assert before == after  # the database file is byte for byte what it was


def test_an_unknown_database_is_a_tool_error_naming_the_known_ones(answers):
    is_error, body, text, _ = answers["unknown"]
    assert is_error and body is None
    assert "unknown database 'nope'" in text and "concert" in text


def test_bad_arguments_are_tool_errors_and_the_server_keeps_serving(answers):
    is_error, _, text, _ = answers["missing"]
    assert is_error and "sql" in text and "required" in text.lower()
    is_error, _, text, _ = answers["wrong_type"]
    assert is_error and "sql" in text
    is_error, body, _, _ = answers["after"]
    assert not is_error and body["sql"] == FIXED


def test_a_query_past_the_time_limit_comes_back_with_the_reason(answers):
    """The item's one budget (docs/pipeline.md, "One budget per item"): an input that never ends runs under
    it and ends the item with the reason, the query kept."""
    is_error, body, _, seconds = answers["endless"]
    assert not is_error and body["error"].startswith("ItemLimitExceeded"), body
    assert "used up its budget" in body["error"] and seconds < 30
    is_error, body, _, seconds = answers["endless_correct"]
    assert not is_error and not body["changed"] and body["sql"] == ENDLESS
    assert "used up its budget" in body["error"] and seconds < 60


def test_list_databases_and_describe_schema(answers):
    _, body, text, _ = answers["databases"]  # compact: counts by schema, names on request
    assert body["databases"] == [{"name": "concert", "dialect": "sqlite", "relations": 4,
                                  "schemas": [{"name": "main", "relations": 4}]},
                                 {"name": "world", "dialect": "sqlite", "relations": 3,
                                  "schemas": [{"name": "main", "relations": 3}]}]
    assert str(Path("/")) not in json.dumps(body)  # no server path
    assert text.startswith("concert (sqlite): 4 relations")
    assert "world (sqlite): 3 relations" in text
    _, body, text, _ = answers["tables"]
    assert [d["tables"] for d in body["databases"]] == [["stadium", "singer", "concert", "singer_in_concert"],
                                                         ["city", "country", "countrylanguage"]]
    _, body, text, _ = answers["schema"]
    assert body["relations"] == 4 and body["next_cursor"] is None
    singer = next(t for t in body["tables"] if t["name"] == "singer")
    country = next(c for c in singer["columns"] if c["name"] == "Country")
    assert "France" in country["values"] and singer["primary_key"] == ["Singer_ID"]
    assert {"columns": ["Singer_ID"], "ref_table": "singer", "ref_columns": ["Singer_ID"]} in \
        next(t for t in body["tables"] if t["name"] == "singer_in_concert")["foreign_keys"]
    assert "'France'" in text


def test_describe_schema_pages_within_its_budget(answers):
    """A budget that holds one relation: each page answers what fits (at least one), the cursor the next."""
    _, first, text, _ = answers["schema_page"]
    assert [t["name"] for t in first["tables"]] == ["stadium"] and first["next_cursor"] == "1"
    assert "cursor='1'" in text
    _, second, _, _ = answers["schema_page2"]
    assert second["tables"][0]["name"] == "singer" and second["relations"] == 4


def test_run_sql_runs_the_corrected_query_and_answers_its_rows(answers, db):
    is_error, body, text, _ = answers["run"]
    assert not is_error and body["ran"] and body["sql"] == FIXED and body["changed"]
    assert [f["code"] for f in body["findings"]] == ["VL01"]
    assert body["columns"] == ["COUNT(*)"] and body["rows"] == [[4]] and not body["truncated"]
    assert text.startswith(f"corrected: {FIXED}") and text.endswith("COUNT(*)\n4\n1 row")
    with _api(db) as fixer:  # the correction is the API's, the run is one read-only query
        same = tools.run_sql({"concert": fixer}, "concert", FRANCE, QUESTION)
        assert {k: v for k, v in same.items() if k != "seconds"} == {k: v for k, v in body.items() if k != "seconds"}
        assert same["sql"] == fixer.correct(QUESTION, FRANCE).sql
    is_error, body, _, _ = answers["run_as_given"]  # correct=false: the query as given, its (wrong) rows
    assert not is_error and body["ran"] and body["sql"] == FRANCE and body["rows"] == [[0]] and not body["findings"]


def test_run_sql_bounds_a_wide_answer_in_rows_and_bytes(answers):
    is_error, body, text, _ = answers["run_wide"]
    assert not is_error and body["ran"] and len(body["columns"]) == 20
    assert body["truncated"] and body["truncated_by"] == "max_bytes" and 0 < body["row_count"] < 1000
    assert len(json.dumps(body["rows"])) < 2 * 64 * 1024
    assert text.endswith("rows shown; the result has more (the answer's size limit): aggregate, filter or add a LIMIT")
    is_error, body, _, _ = answers["run_rows"]
    assert not is_error and body["row_count"] == 100 and body["truncated_by"] == "max_rows"
    is_error, _, text, _ = answers["run_too_many"]
    assert is_error and "max_rows" in text


def test_run_sql_refuses_a_drop_and_the_file_is_unchanged(answers):
    for key in ("run_drop", "run_drop_as_given"):
        is_error, body, text, _ = answers[key]
        assert not is_error and body["refused"] and not body["ran"] and body["rows"] == []
        assert [f["code"] for f in body["findings"]] == ["EX03"], key
        assert "not run: the text is not one read-only query" in text
    before, after = answers["hash"]
    assert before == after


# --- one transport each ---------------------------------------------------------------


def test_http_without_the_token_is_401_and_health_is_open(http_server):
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"accept": "application/json, text/event-stream"}
    r = httpx.post(http_server + "/mcp", json=init, headers=headers, timeout=10)
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
    r = httpx.post(http_server + "/mcp", json=init, headers={**headers, "authorization": "Bearer wrong"},
                   timeout=10)
    assert r.status_code == 401
    assert httpx.get(http_server + "/health", timeout=10).json()["status"] == "ok"

    async def without_token() -> None:
        async with Client(http_server + "/mcp") as client:
            await client.list_tools()

    with pytest.raises(BaseException) as refused:  # noqa: B017  (an MCPError inside task groups)
        anyio.run(without_token)
    assert any(isinstance(e, MCPError) for e in _leaves(refused.value)), refused.value


def _leaves(error: BaseException) -> list[BaseException]:
    inner = getattr(error, "exceptions", None)
    return [leaf for e in inner for leaf in _leaves(e)] if inner else [error]


def test_stdio_stdout_carries_the_protocol_only(db):
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    done = subprocess.run([sys.executable, *_command(db)], input=json.dumps(init) + "\n", env=_env(),
                          capture_output=True, text=True, timeout=60)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert lines, done.stderr[-2000:]
    answers = [json.loads(line) for line in lines]  # every line is a JSON-RPC message
    assert answers[0]["id"] == 1 and answers[0]["result"]["serverInfo"]["name"] == "sqlmend"


# --- configuration --------------------------------------------------------------------


def test_databases_come_from_db_flags_and_a_toml_file(tmp_path):
    assert config.parse_db("concert=x/concert_singer.sqlite") == ("concert", "x/concert_singer.sqlite")
    assert config.parse_db("x/concert_singer.sqlite") == ("concert_singer", "x/concert_singer.sqlite")
    assert config.parse_db("postgresql://h/shop?sslmode=require")[0] == "shop"
    toml = tmp_path / "mcp.toml"
    toml.write_text('[databases]\nconcert = "dbs/concert_singer.sqlite"\nshop = "postgresql://h/shop"\n')
    assert config.databases(["pets=/d/pets_1.sqlite"], toml) == {
        "concert": str(tmp_path / "dbs" / "concert_singer.sqlite"), "shop": "postgresql://h/shop",
        "pets": "/d/pets_1.sqlite"}
    for bad in ([], ["concert=a.sqlite", "concert=b.sqlite"], ["bad name=a.sqlite"], ["x="]):
        with pytest.raises(ConfigError):
            config.databases(bad)
    toml.write_text('[databases]\nconcert = "a.sqlite"\n[server]\nport = 1\n')
    with pytest.raises(ConfigError, match="unknown keys: server"):
        config.databases(config=toml)


def test_the_command_refuses_a_missing_database_and_a_bad_transport(tmp_path):
    runner = CliRunner()
    r = runner.invoke(app, ["mcp", "--db", f"gone={tmp_path / 'gone.sqlite'}"])
    assert r.exit_code == 2 and "database 'gone'" in r.output
    r = runner.invoke(app, ["mcp", "--db", "x=y.sqlite", "--transport", "sse"])
    assert r.exit_code == 2 and "stdio or http" in r.output
    r = runner.invoke(app, ["mcp"])
    assert r.exit_code == 2 and "no database configured" in r.output


def test_the_documented_client_lists_the_tools_and_corrects_the_query(data_dir):
    page = (Path(__file__).resolve().parents[1] / "docs" / "mcp.md").read_text(encoding="utf-8")
    section = page.split("## A client in a few lines", 1)[1]
    script = section.split("```python\n", 1)[1].split("```", 1)[0]
    # the server's environment is the SDK's safe default: point it at this tree's code
    here = f"env={{'PYTHONPATH': {_env()['PYTHONPATH']!r}}}, args=["
    script = script.replace("StdioServerParameters(command=sys.executable, args=[",
                            f"StdioServerParameters(command=sys.executable, {here}")
    assert "env=" in script
    done = subprocess.run([sys.executable, "-c", script], cwd=data_dir, env=_env(), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [str(list(TOOLS_ORDER)), FIXED]



def test_a_call_past_the_servers_deadline_is_a_tool_error_and_its_work_stops(spider_db):
    """The correcting tools' deadline (``mcpserver.server.DEADLINE``): the call is abandoned with a tool
    error, and the correction it started is told to stop, so its thread is free again."""
    from mcp.server.mcpserver.exceptions import ToolError

    from sqlmend.mcpserver import tools
    from sqlmend.mcpserver.server import _answer

    endless = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
    finished: list[dict] = []

    def correct(*args, **kwargs):
        finished.append(tools.correct_sql(*args, **kwargs))
        return finished[-1]

    with Corrector(spider_db("world_1"), db_id="world_1") as fixer:
        fixer.correct("warm", "SELECT 1")

        async def call() -> None:
            await _answer(correct, lambda body: "", {"world": fixer}, "world", "How many?", endless, None,
                          deadline=0.5)

        with pytest.raises(ToolError, match="deadline of 0.5 s"):
            anyio.run(call)
        waited = time.monotonic()
        while not finished and time.monotonic() - waited < 20:
            time.sleep(0.05)
    assert finished and finished[0]["error"].startswith("ItemCancelled: cancelled")
    assert finished[0]["sql"] == endless and not finished[0]["changed"]
