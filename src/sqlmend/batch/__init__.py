"""The batch job: correct a prediction file into a run folder, resume it, shard it, merge the shards.

::

    from sqlmend.batch import correct_file, merge_runs, parse_shard
    results, corrected = correct_file("spider-dev", Path("pred.sql"), Path("runs/a"), config,
                                      shard=parse_shard("1/4"))    # a rerun resumes from the checkpoint
    merged = merge_runs([Path("runs/a"), ...], Path("runs/all"))   # the unsharded run's files

:mod:`sqlmend.batch.runner` runs (here, or on Ray with ``engine="ray"``: :mod:`sqlmend.batch.ray_engine`,
imported only then); :mod:`sqlmend.batch.folder` owns the run folder's files
(``run.json``, the ``corrections.jsonl`` checkpoint, ``summary.json``, ``corrected.<ext>``),
the shards and the merge.
"""

from sqlmend.batch.folder import RUN_FILE, Merged, in_shard, merge_runs, parse_shard, shard_of
from sqlmend.batch.runner import check_engine, correct_file, run_file

__all__ = ["RUN_FILE", "Merged", "check_engine", "correct_file", "in_shard", "merge_runs", "parse_shard", "run_file", "shard_of"]
