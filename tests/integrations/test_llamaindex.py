"""sqlmend in LlamaIndex: the NL-to-SQL query engine (``NLSQLTableQueryEngine``) runs on
:class:`SqlmendSQLDatabase`, on real Spider databases, its model a LlamaIndex LLM scripted with wrong queries
real systems wrote; the engine's SQL passes through sqlmend before it runs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.embeddings import MockEmbedding  # noqa: E402
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata  # noqa: E402
from llama_index.core.llms.callbacks import llm_completion_callback  # noqa: E402
from llama_index.core.query_engine import NLSQLTableQueryEngine  # noqa: E402

from sqlmend.errors import ConfigError, QueryError, ReadOnlyViolation  # noqa: E402
from sqlmend.integrations.llamaindex import QUESTION, SqlmendSQLDatabase  # noqa: E402

CASES = ["value in another case", "name not in the schema", "failing join"]


class ScriptedLLM(CustomLLM):
    """A LlamaIndex LLM answering each prompt with the next scripted text (the engine's text-to-SQL call, then
    its answer from the rows), keeping the prompts it was given."""

    answers: list[str] = []
    prompts: list[str] = []

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata()

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        return CompletionResponse(text=self.answers.pop(0))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError


class Watched(SqlmendSQLDatabase):
    """The database as the engine gets it, noting the question each query ran under."""

    questions: list[str | None]

    def run_sql(self, command: str):
        self.questions.append(QUESTION.get())
        return super().run_sql(command)


def _engine(db: SqlmendSQLDatabase, llm: ScriptedLLM, **kwargs: Any) -> NLSQLTableQueryEngine:
    return NLSQLTableQueryEngine(sql_database=db, llm=llm, embed_model=MockEmbedding(embed_dim=8), **kwargs)


@pytest.mark.parametrize("name", CASES)
def test_the_engine_answers_from_sqlmends_corrected_rows(name, cases, correctors):
    case, fixer = cases[name], correctors[cases[name].db_id]
    answers: list[dict] = []
    db = Watched(fixer, on_answer=answers.append)
    db.questions = []
    llm = ScriptedLLM(answers=[f"SQLQuery: {case.sql}", "the answer"], prompts=[])
    response = _engine(db, llm).query(case.question)
    fixed = fixer.correct(case.question, case.sql)
    assert fixed.changed and str(response) == "the answer"
    assert response.metadata["sql_query"] == fixed.sql  # the SQL that ran, not the model's
    assert case.rows_are_gold(response.metadata["result"])
    assert answers[0]["original_sql"] == case.sql.strip() and answers[0]["findings"]
    assert db.questions == [case.question]  # the engine's question is sqlmend's evidence
    assert f"Table '{db.get_usable_table_names()[0]}' has columns: " in llm.prompts[0]
    assert str(fixed.sql) in llm.prompts[1]  # the answer is written from the corrected SQL and its rows


def test_the_async_engine_and_a_refused_write(cases, copied):
    """``aquery`` takes the same path; a DROP comes back as the engine's error, never run."""
    case = cases["value in another case"]
    copy = copied(case.db_id)
    db = Watched(str(copy.path))
    db.questions = []
    llm = ScriptedLLM(answers=[case.sql, "DROP TABLE airlines"], prompts=[])
    engine = _engine(db, llm, synthesize_response=False)
    response = asyncio.run(engine.aquery(case.question))
    assert case.rows_are_gold(response.metadata["result"]) and db.questions == [case.question]
    refused = engine.query("Remove the airlines")
    assert str(refused).startswith("Error: refused: not one read-only query (not a query: DROP statement refused)")
    with pytest.raises(ReadOnlyViolation) as raised:
        db.run_sql("DELETE FROM airlines")
    assert raised.value.answer["refused"] and raised.value.answer["findings"][0]["code"] == "EX03"
    with pytest.raises(ReadOnlyViolation):
        db.insert_into_table("airlines", {"uid": 99})
    assert copy.unchanged()


def test_bad_input_gets_a_clear_answer(correctors, cases):
    fixer = correctors[cases["value in another case"].db_id]
    with pytest.raises(ConfigError, match="tables not in the database: nope"):
        SqlmendSQLDatabase(fixer, include_tables=["nope"])
    db = SqlmendSQLDatabase(fixer, include_tables=["airlines"], max_rows=2)
    assert db.get_usable_table_names() == ["airlines"] and db.dialect == "sqlite"
    with pytest.raises(ConfigError, match="unknown table 'flights'"):
        db.get_single_table_info("flights")
    with pytest.raises(QueryError, match="no such column"):
        db.run_sql("SELECT nope FROM airlines WHERE uid = 1")
    text, meta = db.run_sql("SELECT Airline FROM airlines ORDER BY uid")
    assert len(meta["result"]) == 2 and text.endswith("(the first 2 rows: the result has more)")
    with pytest.raises(ConfigError, match="no SQLAlchemy engine"):
        db.engine  # noqa: B018
