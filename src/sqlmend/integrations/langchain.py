"""sqlmend in LangChain's SQL agents: the SQL toolkit's four tools, with sqlmend's evidence inside.

LangChain's ``SQLDatabaseToolkit`` gives an agent ``sql_db_query``, ``sql_db_schema``, ``sql_db_list_tables``
and ``sql_db_query_checker``, whose checker asks the model to "double check the query for common mistakes"
with no evidence from the database. :class:`SqlmendToolkit` gives the same four tools, by the same names and
inputs, with sqlmend behind them::

    from langchain.agents import create_agent
    from sqlmend.integrations.langchain import SqlmendToolkit

    toolkit = SqlmendToolkit(db="chinook.sqlite")       # or db=sqlmend.Corrector(...), shared
    agent = create_agent(model, toolkit.get_tools(), system_prompt="...")   # or langgraph's create_react_agent

* ``sql_db_query_checker`` (:class:`SqlmendCheckerTool`) answers with sqlmend's corrected SQL (the query
  itself when nothing is proven wrong), its findings below it as SQL comments, so the answer can be run
  as it is;
* ``sql_db_query`` (:class:`SqlmendQueryTool`) corrects the query, then runs it read-only, and answers
  with the rows (bounded: :mod:`sqlmend.mcpserver.rows`), what was corrected and why;
* ``sql_db_schema`` and ``sql_db_list_tables`` describe the database as sqlmend's rules see it, stored
  values of text columns included.

Each tool takes ``query`` (``table_names``, ``tool_input``) as LangChain's does, and the query tools an
optional ``question``, the user's question, which sqlmend uses as evidence. A tool's message carries its
whole answer as the artifact (``ToolMessage.artifact``: :func:`sqlmend.mcpserver.tools.run_query`'s or
:func:`~sqlmend.mcpserver.tools.correction_answer`'s dict). A text that is not one read-only query is
refused and never run, as at every door of sqlmend.
"""

from __future__ import annotations

from typing import Any

from langchain_core.tools import BaseTool, BaseToolkit
from pydantic import BaseModel, ConfigDict, Field, model_validator

from sqlmend.api import Corrector
from sqlmend.integrations.base import open_corrector
from sqlmend.mcpserver import tools
from sqlmend.mcpserver.rows import MAX_RUN_ROWS, RUN_ROWS

_QUESTION = ("optional: the user's question this query answers, in their words (sqlmend checks the query "
             "against it and the database)")


class QueryInput(BaseModel):
    """``sql_db_query``'s input: LangChain's, and the optional question."""

    query: str = Field(..., description="A detailed and correct SQL query.")
    question: str | None = Field(None, description=_QUESTION)


class CheckerInput(BaseModel):
    """``sql_db_query_checker``'s input: LangChain's, and the optional question."""

    query: str = Field(..., description="A detailed and SQL query to be checked.")
    question: str | None = Field(None, description=_QUESTION)


class SchemaInput(BaseModel):
    """``sql_db_schema``'s input, as LangChain's."""

    table_names: str = Field(..., description="A comma-separated list of the table names for which to return "
                                              "the schema. Example input: 'table1, table2, table3'")


class ListInput(BaseModel):
    """``sql_db_list_tables``'s input, as LangChain's."""

    tool_input: str = Field("", description="An empty string")


class _SqlmendTool(BaseTool):
    """A tool on one database's :class:`sqlmend.Corrector` (``db``)."""

    db: Corrector = Field(exclude=True)
    model_config = ConfigDict(arbitrary_types_allowed=True)

    def _names(self) -> list[str]:
        return [t.name for t in self.db.schema().tables]


def checked_text(body: dict[str, Any]) -> str:
    """The checker's answer for the model: the SQL to run, then what sqlmend found as ``--`` comment lines
    (so that the whole answer still runs as one query)."""
    if body["refused"]:
        head = "sqlmend: refused: the text is not one read-only query; it will not run"
    elif body["error"]:
        head = f"sqlmend: {body['error']}; the query is unchanged"
    elif body["changed"]:
        head = "sqlmend corrected the query: the database proves the one given wrong"
    elif body["findings"]:
        head = "sqlmend: the query is unchanged; what it found proves no change"
    else:
        head = "sqlmend: no mistake found; the query is unchanged"
    notes = [head] + [f"{f['code']} {f['error_type']}: {f['message']}" for f in body["findings"]]
    return "\n".join([body["sql"], *("-- " + " ".join(n.split()) for n in notes)])


class SqlmendCheckerTool(_SqlmendTool):
    """``sql_db_query_checker`` with sqlmend: the corrected query and its findings, no model call."""

    name: str = "sql_db_query_checker"
    description: str = ("Use this tool to double check if your query is correct before executing it. Always use "
                        "this tool before executing a query with sql_db_query! It checks the query against the "
                        "database's schema and stored values and answers with the query to run (corrected when the "
                        "database proves it wrong), what it found below it as SQL comments.")
    args_schema: type[BaseModel] = CheckerInput
    response_format: str = "content_and_artifact"

    def _run(self, query: str, question: str | None = None, run_manager: Any = None) -> tuple[str, dict[str, Any]]:
        body = tools.correction_answer(self.db.correct(question or "", query))
        return checked_text(body), body


class SqlmendQueryTool(_SqlmendTool):
    """``sql_db_query`` with sqlmend: the query corrected, then run read-only; the rows and what changed."""

    name: str = "sql_db_query"
    description: str = ("Input to this tool is a detailed and correct SQL query, output is a result from the "
                        "database. sqlmend corrects the query first when the database proves it wrong and says so; "
                        "if the query fails, rewrite it, check it with sql_db_query_checker and try again. Use "
                        "sql_db_schema to see the tables' columns and stored values.")
    args_schema: type[BaseModel] = QueryInput
    response_format: str = "content_and_artifact"
    #: rows an answer holds at most
    max_rows: int = Field(RUN_ROWS, ge=1, le=MAX_RUN_ROWS)
    #: correct before running (False: run the query as given, still read-only)
    correct: bool = True

    def _run(self, query: str, question: str | None = None, run_manager: Any = None) -> tuple[str, dict[str, Any]]:
        body = tools.run_query(self.db, query, question, correct=self.correct, max_rows=self.max_rows)
        return tools.run_text(body), body


class SqlmendSchemaTool(_SqlmendTool):
    """``sql_db_schema``: tables, columns, keys and stored values, as sqlmend's rules see them."""

    name: str = "sql_db_schema"
    description: str = ("Input to this tool is a comma-separated list of tables, output is the schema of those "
                        "tables: columns, types, keys and stored values of the text columns (literals must match "
                        "them exactly). Be sure that the tables actually exist by calling sql_db_list_tables first! "
                        "Example Input: table1, table2, table3")
    args_schema: type[BaseModel] = SchemaInput

    def _run(self, table_names: str, run_manager: Any = None) -> str:
        wanted = {n.strip().lower() for n in table_names.split(",") if n.strip()}
        body = tools.describe_schema({self.db.db_id: self.db}, self.db.db_id)
        known = {t["name"].lower() for t in body["tables"]}
        if not wanted or wanted - known:
            missing = sorted(wanted - known) or [table_names]
            return f"Error: table_names {missing} not found in database (sql_db_list_tables lists them)"
        return tools.schema_text({**body, "tables": [t for t in body["tables"] if t["name"].lower() in wanted]})


class SqlmendListTool(_SqlmendTool):
    """``sql_db_list_tables``: the tables' names."""

    name: str = "sql_db_list_tables"
    description: str = "Input is an empty string, output is a comma-separated list of tables in the database."
    args_schema: type[BaseModel] = ListInput

    def _run(self, tool_input: str = "", run_manager: Any = None) -> str:
        return ", ".join(self._names())


class SqlmendToolkit(BaseToolkit):
    """The SQL toolkit with sqlmend inside: ``get_tools()`` in place of ``SQLDatabaseToolkit``'s.

    Args:
        db: a :class:`sqlmend.Corrector` (shared, kept open by its owner), or a SQLite path or a database
            URL (a Corrector is opened on it with sqlmend's default stages).
        max_rows: rows a ``sql_db_query`` answer holds at most, 1 to 1,000 (it also stops at 64 KB and says so).
        correct: whether ``sql_db_query`` corrects before it runs (the checker always does).

    Raises:
        ConfigError, DatabaseNotFoundError: as :func:`sqlmend.integrations.base.open_corrector`.
    """

    db: Corrector = Field(exclude=True)
    max_rows: int = Field(RUN_ROWS, ge=1, le=MAX_RUN_ROWS)
    correct: bool = True
    model_config = ConfigDict(arbitrary_types_allowed=True)

    @model_validator(mode="before")
    @classmethod
    def _open(cls, values: Any) -> Any:
        if isinstance(values, dict) and "db" in values and not isinstance(values["db"], Corrector):
            values = {**values, "db": open_corrector(values["db"])}
        return values

    @property
    def dialect(self) -> str:
        """The database's SQL dialect (``sqlite``, ``postgres``, ``duckdb``, ``mysql``)."""
        return self.db.dialect

    def get_tools(self) -> list[BaseTool]:
        """``sql_db_query``, ``sql_db_schema``, ``sql_db_list_tables``, ``sql_db_query_checker``: the order of
        ``SQLDatabaseToolkit.get_tools()``."""
        return [SqlmendQueryTool(db=self.db, max_rows=self.max_rows, correct=self.correct),
                SqlmendSchemaTool(db=self.db), SqlmendListTool(db=self.db), SqlmendCheckerTool(db=self.db)]

    def get_context(self) -> dict[str, str]:
        """What an agent's prompt may hold of the database: ``table_info`` and ``table_names``."""
        body = tools.describe_schema({self.db.db_id: self.db}, self.db.db_id)
        return {"table_info": tools.schema_text(body), "table_names": ", ".join(t["name"] for t in body["tables"])}


__all__ = ["CheckerInput", "QueryInput", "SqlmendCheckerTool", "SqlmendListTool", "SqlmendQueryTool",
           "SqlmendSchemaTool", "SqlmendToolkit", "checked_text"]
