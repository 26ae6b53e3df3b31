"""``sqlmend mcp``: sqlmend's check and correction as tools for agents (Model Context Protocol).

* :mod:`sqlmend.mcpserver.tools` -- ``list_databases``, ``describe_schema``, ``check_sql``,
  ``correct_sql`` as plain functions over open Correctors (what every door answers);
* :mod:`sqlmend.mcpserver.config` -- the configured databases (``--db NAME=URL``, a TOML file)
  and their Correctors;
* :mod:`sqlmend.mcpserver.server` -- the MCP server on the official ``mcp`` SDK (the ``mcp``
  extra): stdio, and streamable HTTP behind the service's bearer token.

docs/mcp.md shows an agent's configuration, what each tool returns and an example exchange.
"""

from __future__ import annotations
