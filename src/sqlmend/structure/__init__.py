"""Schema graph and question-schema linking (ErrorLLM §2.3), and the detector input (§3.1).

::

    from sqlmend import structure
    g = structure.build(question, db.schema(), samples=structure.sample_values(db), value_index=db.value_index())
    text = structure.serialize_qss(g, focus=["singer"])
    x = structure.detector_input(instruction, question, text, sql, structure.ast_text(sql),
                                 structure.exec_text(result))
"""

from __future__ import annotations

from sqlmend.structure.canonical import canonical_sql, is_string_like
from sqlmend.structure.describe import Description, describe, sql_columns, sql_tables
from sqlmend.structure.linking import Link, lemma, tokenize
from sqlmend.structure.qss import QSS, Edge, SchemaNode, build
from sqlmend.structure.qss import serialize as serialize_qss
from sqlmend.structure.samples import sample_values
from sqlmend.structure.serialize import ast_text, detector_input, exec_text

__all__ = ["canonical_sql", "is_string_like", "Description", "describe", "sql_columns", "sql_tables", "QSS", "Edge", "Link", "SchemaNode", "ast_text", "build", "detector_input", "exec_text",
           "lemma", "sample_values", "serialize_qss", "tokenize"]
