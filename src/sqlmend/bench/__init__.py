"""Benchmarks: the ``sqlmend bench`` measurements of accuracy and cost, one module each.

They score with the evaluator, :mod:`sqlmend.evaluation` (execution accuracy, paired reports,
metrics). The stress harnesses (fuzz, faults, the load test, soak, pathological queries) are
:mod:`sqlmend.stress`; the throw-away database servers and copiers both start are test tooling,
:mod:`sqlmend.testing`.
"""
