"""``sqlmend correct --engine ray`` on a local Ray cluster: the local run's bytes, a killed driver
resumed, a killed worker retried (also as ``sqlmend bench faults``' Ray row).

One local Ray cluster on this machine (2 CPUs) serves the module; the first 60 questions of a
shared Spider-dev prediction file are corrected with the local engine once and compared with.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'sqlmend[ray]' "
                                        "(scripts/setup.sh installs it)")

from sqlmend.batch import correct_file  # noqa: E402
from sqlmend.batch.ray_engine import ACTOR_PREFIX, NAMESPACE  # noqa: E402
from sqlmend.pipeline import PipelineConfig  # noqa: E402

PRED = "gpt-4_zero-shot.sql"
LIMIT = 60


@pytest.fixture(scope="module")
def cluster():
    """A local Ray cluster (2 CPUs, no dashboard): its GCS address, for drivers in subprocesses."""
    ray.init(address="local", num_cpus=2, num_gpus=0, include_dashboard=False,
             logging_level=logging.ERROR, log_to_driver=False)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


@pytest.fixture(scope="module")
def pred(data_dir) -> Path:
    return data_dir / "predictions" / "spider-dev" / PRED


@pytest.fixture(scope="module")
def local_run(pred, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("local")
    correct_file("spider-dev", pred, out, PipelineConfig(workers=2), limit=LIMIT, progress=False)
    return out


def _lines(path: Path) -> dict[str, str]:
    """The checkpoint's whole lines by question id."""
    if not path.exists():
        return {}
    text = path.read_text(encoding="utf-8")
    return {json.loads(line)["question_id"]: line for line in text.split("\n")[:-1] if line}


def _assert_same_run(run: Path, local: Path) -> None:
    assert (run / "corrected.sql").read_bytes() == (local / "corrected.sql").read_bytes()
    assert list(_lines(run / "corrections.jsonl")) == list(_lines(local / "corrections.jsonl"))  # task order
    assert json.loads((run / "summary.json").read_text())["item_errors"] == {}


def _wait_for(path: Path, n: int, limit: float = 120.0) -> dict[str, str]:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        done = _lines(path)
        if len(done) >= n:
            return done
        time.sleep(0.05)
    raise AssertionError(f"fewer than {n} tasks checkpointed in {limit:.0f} s")


def test_ray_writes_the_local_runs_bytes(cluster, pred, local_run, tmp_path):
    correct_file("spider-dev", pred, tmp_path, PipelineConfig(workers=2), limit=LIMIT, progress=False,
                 engine="ray")
    _assert_same_run(tmp_path, local_run)
    assert json.loads((tmp_path / "run.json").read_text())["engine"] == "ray"
    assert not [a for a in ray.util.list_named_actors(all_namespaces=True)
                if a["name"].startswith(ACTOR_PREFIX)], "the run's actors outlived it"


def test_a_killed_driver_resumes_without_redoing_done_tasks(cluster, pred, local_run, tmp_path):
    cmd = [sys.executable, "-c", "from sqlmend.cli import main; main()", "correct", "--dataset", "spider-dev", "--pred", str(pred),
           "--limit", str(LIMIT), "--workers", "1", "--out", str(tmp_path), "--engine", "ray", "--quiet"]
    env = {**os.environ, "RAY_ADDRESS": cluster}
    driver = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_for(tmp_path / "corrections.jsonl", 8)
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait(30)
    before = _lines(tmp_path / "corrections.jsonl")
    assert 8 <= len(before) < LIMIT, "the driver was not killed mid-run"
    assert not (tmp_path / "summary.json").exists()
    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    _assert_same_run(tmp_path, local_run)
    after = _lines(tmp_path / "corrections.jsonl")
    # a task run again would have a new line (its stages' timings): every line from before is kept
    assert {q: after[q] for q in before} == before


def test_a_killed_worker_is_restarted_and_its_task_retried(cluster, pred, local_run, tmp_path):
    failed: list[BaseException] = []

    def run() -> None:
        try:
            correct_file("spider-dev", pred, tmp_path, PipelineConfig(workers=2), limit=LIMIT,
                         progress=False, engine="ray")
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            failed.append(exc)

    batch = threading.Thread(target=run)
    batch.start()
    _wait_for(tmp_path / "corrections.jsonl", 5)
    names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
             if a["namespace"] == NAMESPACE and a["name"].startswith(ACTOR_PREFIX)]
    assert len(names) == 2
    actor = ray.get_actor(names[0], namespace=NAMESPACE)
    pid = ray.get(actor.pid.remote(), timeout=30)
    os.kill(pid, signal.SIGKILL)
    killed_at = len(_lines(tmp_path / "corrections.jsonl"))
    batch.join(300)
    assert not batch.is_alive() and not failed, failed
    assert killed_at < LIMIT, "the worker was killed after the batch ended"
    _assert_same_run(tmp_path, local_run)


def test_the_faults_benchs_ray_row_kills_a_worker_of_the_running_cluster(cluster, pred, tmp_path):
    """``sqlmend bench faults``' Ray row (``ray_worker_fault``) on this module's cluster, a small batch:
    a worker killed mid-batch, the local engine's run of the same tasks the reference."""
    from sqlmend.stress.faults import ray_worker_fault

    row = ray_worker_fault(pred, tmp_path, dbs=2, per_db=6)
    detail = row.detail
    assert detail["killed"] and detail["fault_fired"] and row.items == 12 and row.lost == 0
    assert not detail["missing"] and not detail["silent"] and not detail["unclear"]
    # the local run's file, or, where the machine is loaded enough that the items in flight on the restarted
    # worker pass their wall-clock deadline (the safety net: a clear error, the input kept), only those differ
    assert detail["identical"] or 0 < len(detail["clear"]) <= 4, detail
    assert ("identical to" if detail["identical"] else "DIFFERENT from") + " the local run's" in row.sees
    assert ray.is_initialized()  # the module's cluster, left running
