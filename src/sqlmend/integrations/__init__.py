"""sqlmend where text-to-SQL applications are built: LangChain, LlamaIndex and Vanna.

Each module plugs sqlmend into one framework by that framework's own extension point, so that the SQL
its model writes is corrected, then run read-only, before the application sees rows:

* :mod:`sqlmend.integrations.langchain` -- the SQL toolkit's four tools (``sql_db_query``,
  ``sql_db_schema``, ``sql_db_list_tables``, ``sql_db_query_checker``) with sqlmend inside, and
  :class:`~sqlmend.integrations.langchain.SqlmendToolkit`, whose ``get_tools()`` an agent takes in place of
  ``SQLDatabaseToolkit``'s (extra ``sqlmend[langchain]``);
* :mod:`sqlmend.integrations.llamaindex` -- a ``SQLDatabase`` for the NL-to-SQL query engines and
  retrievers: every SQL the engine runs passes through sqlmend first (extra ``sqlmend[llamaindex]``);
* :mod:`sqlmend.integrations.vanna` -- a Vanna 2.0 ``SqlRunner`` that corrects, then runs read-only
  (extra ``sqlmend[vanna]``).

They are thin: a query goes through :func:`sqlmend.mcpserver.tools.run_query` (the MCP server's
``run_sql``), so it gets the same corrected SQL, findings and refusals as :class:`sqlmend.Corrector` and
every other door. Importing this package imports no framework; each module imports its own.
docs/integrations.md has a copy-paste example per framework and what a call costs.
"""

from __future__ import annotations
