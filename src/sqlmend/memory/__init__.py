"""MIRA: evidence-verified repair memory (../shared/papers/mira.md).

Offline (§3.2): :mod:`recovery` (a validated repair), :mod:`edits` (AST edits
grouped by structural dependency), :mod:`isolation` (revert one group, reparse,
collect evidence), :mod:`judge` (accept repair units), :mod:`items` (the four
parts, admission), :mod:`keys` (structural keys), :mod:`store` (per-database
SQLite), :mod:`build` (the whole construction). Online (§3.3):
:mod:`retrieval`, :mod:`activation`, :mod:`adapt`, and :mod:`stage` (the
pipeline's ``MemoryStage``). :mod:`split` is the evaluation split of §4.1.
"""
