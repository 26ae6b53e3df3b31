"""The tasks of a batch on Ray (``sqlmend correct --engine ray``): one actor per worker.

Only this module imports ray, and only ``--engine ray`` imports this module (``pip install
'sqlmend[ray]'``). :func:`correct_batch_ray` connects to a cluster (``ray://HOST:PORT``,
else ``RAY_ADDRESS``, else a local Ray started here with ``--workers`` CPUs and shut down at the
end; a Ray already initialised in this process is used as it is), starts ``workers`` actors and
hands them to :func:`sqlmend.pipeline.correct_batch` in place of a pipeline. So the driver keeps
the local engine's checkpoint (appended as tasks finish, done tasks skipped on a re-run,
rewritten in task order at the end), item errors and result order: the corrected file is the
local run's, byte for byte.

Each actor (:class:`Worker`) builds its :class:`~sqlmend.pipeline.Pipeline` once and keeps an
:class:`sqlmend.api.Correctors`: one open Corrector per database it meets, made on first use.
A worker process that dies (killed, out of memory, its node lost) is restarted by Ray and the
call it was running retried (``max_restarts=-1``, ``max_task_retries=TASK_RETRIES``); a task
that outlives those retries gets the item error ``WorkerLost: ...`` and the batch goes on.
"""

from __future__ import annotations

import logging
import os
import queue
import sys
import threading
import uuid
from collections.abc import Iterable
from typing import Any

import ray
from ray.exceptions import RayError

from sqlmend.api import Correctors
from sqlmend.errors import ConfigError
from sqlmend.pipeline import Pipeline, PipelineConfig, correct_batch
from sqlmend.types import Correction, Task

#: The Ray namespace of the actors; each is named ``sqlmend-worker-<run>-<i>`` in it.
NAMESPACE = "sqlmend"
ACTOR_PREFIX = "sqlmend-worker-"
#: Times Ray runs a call again after its worker process died (the actor is restarted first).
TASK_RETRIES = 3
#: Seconds to wait for the first worker (a busy cluster may queue the actors).
START_TIMEOUT = 300.0


@ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=TASK_RETRIES, concurrency_groups={"control": 1})
class Worker:
    """One Ray worker: the stages built once, one open Corrector per database it meets."""

    def __init__(self, config: PipelineConfig, db_root: str | None, cwd: str, env: dict[str, str]) -> None:
        os.environ.update(env)  # the driver's SQLMEND_* settings (data and cache folders, memory store)
        if os.path.isdir(cwd):  # relative paths (llm config, memory store) read as on the driver
            os.chdir(cwd)
        self.failed: Exception | None = None
        try:
            self.correctors = Correctors(Pipeline(config, db_root=db_root))
        except Exception as exc:  # reported by ready(): the driver stops with it
            self.failed = exc

    @ray.method(concurrency_group="control")
    def ready(self) -> Exception | None:
        """None once the stages are built, else the error that stopped them."""
        return self.failed

    @ray.method(concurrency_group="control")
    def pid(self) -> int:
        """The worker's process id (answered while a task runs)."""
        return os.getpid()

    def correct(self, task: Task) -> Correction:
        """Correct one task on its database's Corrector (never raises for the item)."""
        return self.correctors.correct_task(task)


class _Workers:
    """Stands for a Pipeline in :func:`~sqlmend.pipeline.correct_batch`: each ``correct(task)``
    runs on an idle actor (one task per actor at a time); actors join as they come up."""

    def __init__(self, actors: list[Any], config: PipelineConfig) -> None:
        self.config = config
        self._idle: queue.Queue[Any] = queue.Queue()
        self._starting = {a.ready.remote(): a for a in actors}
        self._lock = threading.Lock()

    def start(self, timeout: float = START_TIMEOUT) -> None:
        """Wait for the first actor to come up.

        Raises:
            ConfigError: none came up in time, or a worker could not start.
            SqlmendError: the worker could not build the stages (a bad option or model endpoint).
        """
        if not self._admit(timeout, first=True):
            raise ConfigError(f"no Ray worker started within {timeout:.0f} s: does the cluster have a free "
                              "CPU for a worker, and sqlmend installed on its nodes?")

    def _admit(self, timeout: float, first: bool = False) -> int:
        with self._lock:
            refs = list(self._starting)
            if not refs:
                return 0
            done, _ = ray.wait(refs, num_returns=1 if first else len(refs), timeout=timeout)
            for ref in done:
                actor = self._starting.pop(ref)
                try:
                    failed = ray.get(ref)
                except RayError as exc:
                    failed = ConfigError(f"a Ray worker could not start: {_first_line(exc)}")
                if failed is None:
                    self._idle.put(actor)
                elif first:
                    raise failed
                else:  # a worker on another node: the batch goes on without it
                    print(f"warning: a Ray worker is left out: {failed}", file=sys.stderr)
            return len(done)

    def _take(self) -> Any:
        while True:
            if self._starting:
                self._admit(0)
            try:
                return self._idle.get(timeout=1.0)
            except queue.Empty:
                continue

    def correct(self, task: Task) -> Correction:
        actor = self._take()
        try:
            return ray.get(actor.correct.remote(task))
        except RayError as exc:  # the worker died more often than Ray retries
            return Correction(question_id=task.question_id, db_id=task.db_id, original_sql=task.sql,
                              sql=task.sql, error=f"WorkerLost: the Ray worker running this task died "
                                                  f"{TASK_RETRIES + 1} times ({_first_line(exc)})")
        finally:
            self._idle.put(actor)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def connect(address: str | None, workers: int) -> bool:
    """Connect to Ray unless this process already is: ``address`` (``ray://HOST:PORT``), else
    ``RAY_ADDRESS``, else a new local Ray with ``workers`` CPUs (no dashboard, logging quiet).

    Returns:
        Whether this call connected (the caller then shuts Ray down).

    Raises:
        ConfigError: the cluster cannot be reached.
    """
    if ray.is_initialized():
        return False
    target = address or os.environ.get("RAY_ADDRESS") or "local"
    quiet: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
    if target == "local":
        quiet.update(num_cpus=workers, num_gpus=0, include_dashboard=False)
    try:
        ray.init(address=target, **quiet)
    except Exception as exc:  # ConnectionError, a refused token, a version mismatch, ...
        hint = "" if target == "local" or os.environ.get("RAY_AUTH_MODE") else (
            " (a cluster with token authentication needs RAY_AUTH_MODE=token and its token in "
            "~/.ray/auth_token, RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH)")
        raise ConfigError(f"cannot start or reach Ray at {target!r}: {_first_line(exc)}{hint}") from None
    return True


def correct_batch_ray(tasks: Iterable[Task], config: PipelineConfig, *,
                      checkpoint: str | os.PathLike | None = None, progress: bool = True,
                      db_root: str | os.PathLike | None = None, address: str | None = None) -> list[Correction]:
    """Correct many tasks on Ray actors, resumably: :func:`sqlmend.pipeline.correct_batch`'s contract.

    Args:
        tasks: the tasks, in output order.
        config: the run's configuration; ``workers`` actors (one CPU each) are started.
        checkpoint: the JSONL checkpoint to resume from and append to (written by this process).
        progress: show a progress bar.
        db_root: the folder of ``<db_id>/<db_id>.sqlite`` for tasks without ``db``; the same
            path must hold the databases on every node.
        address: ``ray://HOST:PORT``; default ``RAY_ADDRESS`` or a local Ray.

    Returns:
        One correction per task, in the order of ``tasks``.

    Raises:
        ConfigError: Ray cannot be reached or no worker starts.
        SqlmendError: the workers cannot build the stages; the checkpoint cannot be written.
    """
    started = connect(address, config.workers)
    actors: list[Any] = []
    try:
        run = uuid.uuid4().hex[:8]
        env = {k: v for k, v in os.environ.items() if k.startswith("SQLMEND_")}
        root = os.path.abspath(db_root) if db_root is not None else None
        actors = [Worker.options(name=f"{ACTOR_PREFIX}{run}-{i}", namespace=NAMESPACE)  # type: ignore[attr-defined]
                  .remote(config, root, os.getcwd(), env) for i in range(config.workers)]
        workers = _Workers(actors, config)
        workers.start()
        return correct_batch(tasks, checkpoint=checkpoint, progress=progress, pipeline=workers)  # type: ignore[arg-type]
    finally:
        for actor in actors:
            try:
                ray.kill(actor, no_restart=True)
            except (RayError, ValueError):
                pass
        if started:
            ray.shutdown()


__all__ = ["ACTOR_PREFIX", "NAMESPACE", "TASK_RETRIES", "Worker", "connect", "correct_batch_ray"]
