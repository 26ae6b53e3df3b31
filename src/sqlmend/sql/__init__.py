"""The SQL layer: the only package of sqlmend that imports sqlglot.

Parse, normalize/qualify, features, edits (AST diff) and render. Everything above
this layer uses these functions and :mod:`sqlmend.sql.ast` for node classes::

    from sqlmend import sql
    tree = sql.parse(text, dialect="sqlite")
    text = sql.render(tree, dialect="sqlite")   # unchanged tree -> original text
"""

from __future__ import annotations

import logging

from sqlmend.sql import ast, fixes
from sqlmend.sql.clauses import conjuncts, from_tables
from sqlmend.sql.diff import diff, kept_share
from sqlmend.sql.features import Features, features
from sqlmend.sql.normalize import normalize
from sqlmend.sql.parse import parse
from sqlmend.sql.render import render, restyle, transpile
from sqlmend.sql.resolve import Resolver
from sqlmend.sql.safety import check_read_only, check_read_only_tree, is_read_only
from sqlmend.sql.schema import table_key, table_name

# sqlglot logs its own warnings ("... contains unsupported syntax. Falling back to parsing as a
# 'Command'"); sqlmend reports what it cannot read as errors and findings, so they stay quiet.
logging.getLogger("sqlglot").setLevel(logging.CRITICAL)

__all__ = ["Features", "Resolver", "ast", "fixes", "check_read_only", "check_read_only_tree", "conjuncts", "diff", "kept_share", "from_tables", "features", "is_read_only", "normalize", "parse",
           "render", "restyle", "table_key", "table_name", "transpile"]
