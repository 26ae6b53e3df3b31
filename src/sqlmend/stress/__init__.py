"""Stress harnesses: sqlmend under what no one planned for, measured, each behind a ``sqlmend bench``
command.

* :mod:`sqlmend.stress.fuzz` (``bench fuzz``): mutated SQL, odd questions and malformed files
  through the whole correction path, the service and the batch readers.
* :mod:`sqlmend.stress.faults` (``bench faults``): each fault injected into real components (a
  database that dies, a model that hangs, a full disk, a killed batch) and what it cost.
* :mod:`sqlmend.stress.serve` (``bench serve``): a load test of ``sqlmend serve``, one process or
  replicas on one PostgreSQL repair memory.
* :mod:`sqlmend.stress.soak` (``bench soak``): the service under steady load for minutes, watched
  for leaks.
* :mod:`sqlmend.stress.pathological` (``bench pathological``): queries that never end or allocate
  without bound, on each engine.

The benchmarks of accuracy and cost are :mod:`sqlmend.bench`; the throw-away servers these start
are :mod:`sqlmend.testing`.
"""
