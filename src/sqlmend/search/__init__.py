"""Repair search: error-guided candidate generation, execution, and a trained verifier that chooses.

ErrorLLM's error-guided refinement asks a model to *write* the repair; with no
capable model at hand, this package instead *chooses* among concrete,
executed candidates:

    from sqlmend.search import SearchInput, execute_original, search
    orig = execute_original(db, sql_text, timeout=1.0, max_rows=2000)
    found = search(db, orig, SearchInput(question, db.schema(), db.value_index()), findings)
    found.candidates   # distinct-result repairs, each with its edits

:mod:`sqlmend.search.verifier` scores them; :mod:`sqlmend.search.stage` is the
pipeline stage (``--stages static,search,guard``).
"""

from __future__ import annotations

from sqlmend.search.engine import Executed, SearchResult, SearchSettings, execute_original, result_key, search
from sqlmend.search.generators import Generator, SearchInput, all_generators

__all__ = ["Executed", "Generator", "SearchInput", "SearchResult", "SearchSettings", "all_generators",
           "execute_original", "result_key", "search"]
