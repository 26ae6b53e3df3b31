"""Benchmarks: the ``sqlmend bench`` measurements, one module each.

They score with the evaluator, :mod:`sqlmend.evaluation` (execution accuracy, paired reports,
metrics); the throw-away database servers and copiers they start are test tooling,
:mod:`sqlmend.testing`.
"""
