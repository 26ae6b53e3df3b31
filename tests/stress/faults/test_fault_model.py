"""A batch whose model endpoint (a real OpenAI-protocol server on loopback) hangs, answers garbage or
answers slowly: every task finishes, keeps its original SQL, and says why."""

from __future__ import annotations

import pytest

from sqlmend.stress.faults import model_fault


@pytest.mark.parametrize("mode", ["hang", "garbage"])
def test_a_broken_endpoint_keeps_the_original_and_records_the_reason(mode, pred, tmp_path):
    row = model_fault(mode, pred, tmp_path, tasks=4, timeout=1.5)
    assert row.lost == 0 and row.clear == 4 and row.detail["failed"] == 4
    reason = {"hang": "ModelTimeout: fault: no answer within 1.5s", "garbage": "the answer is not a completion"}
    assert reason[mode] in row.sees
    assert row.detail["requests"] == (8 if mode == "hang" else 4)  # a time-out is retried once, garbage not


def test_a_slow_endpoint_within_its_timeout_is_waited_for(pred, tmp_path):
    row = model_fault("slow", pred, tmp_path, tasks=4, timeout=5.0, delay=1.0)
    # the model's answer (the SQL it was shown) is used: every task ran, none kept by a failure
    assert row.lost == 0 and row.detail["ran"] == 4 and row.detail["failed"] == 0
    assert row.detail["requests"] == 4 and row.sees.startswith("answers used (4/4")
