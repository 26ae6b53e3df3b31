"""``sqlmend correct`` (a real process) with its run folder on a full disk: a clear error, no line
written half, and the same command with room completes the run with the clean run's output."""

from __future__ import annotations

import os
import subprocess

import pytest

from sqlmend.stress.faults import disk_full_fault


def _can_mount(tmp_path) -> bool:
    if os.geteuid() != 0:
        return False
    probe = tmp_path / "probe"
    probe.mkdir()
    ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)],
                        capture_output=True).returncode == 0
    if ok:
        subprocess.run(["umount", str(probe)], capture_output=True)
    return ok


@pytest.mark.parametrize("mount", [True, False], ids=["tmpfs", "file-size-limit"])
def test_a_clear_error_nothing_half_and_resume_works(mount, pred, tmp_path):
    if mount and not _can_mount(tmp_path):
        pytest.skip("mounting a tmpfs needs root (the file-size limit variant still runs)")
    row = disk_full_fault(pred, tmp_path, limit=80, mount=mount)
    d = row.detail
    assert d["mounted"] is mount and d["exit"] == 1
    assert "error: cannot write the checkpoint" in d["stderr"] and "Traceback" not in d["stderr"]
    assert ("No space left on device" if mount else "File too large") in d["stderr"]
    assert 0 < d["whole_lines"] < 80 and d["half_lines"] == 0
    assert d["resumed_exit"] == 0 and d["final_lines"] == 80 and d["identical"]
    assert row.lost == 0


def test_no_room_to_rewrite_the_checkpoint_in_order_leaves_it_whole(tmp_path):
    """The finished batch's rewrite in dataset order needs a second copy: without room, a clear error,
    no temporary file left, and the checkpoint as it was."""
    from sqlmend.errors import OutputError
    from sqlmend.pipeline import _Checkpoint, read_checkpoint
    from sqlmend.types import Correction

    if not _can_mount(tmp_path):
        pytest.skip("mounting a tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32k", "tmpfs", str(disk)], check=True)
    try:
        sink = _Checkpoint(disk / "c.jsonl")
        for i in range(12):  # about 20 KiB of 32: no room for a second copy
            sink.write(Correction(str(i), "db", "SELECT 1", "SELECT 1", error="x" * 1600))
        sink.close()
        before = (disk / "c.jsonl").read_bytes()
        with pytest.raises(OutputError, match="cannot rewrite the checkpoint .* in order: No space left"):
            sink.reorder([str(i) for i in reversed(range(12))])
        assert (disk / "c.jsonl").read_bytes() == before and sorted(p.name for p in disk.iterdir()) == ["c.jsonl"]
        assert len(read_checkpoint(disk / "c.jsonl")) == 12
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)
