#!/usr/bin/env bash
# Set up everything the tests need, then run the whole test suite.
# The tests run in parallel (pytest-xdist): one worker per CPU and one more, since many tests wait on
# servers and subprocesses; each worker starts the PostgreSQL and MariaDB servers of the session once,
# when a test first needs one. SQLMEND_TEST_WORKERS sets the number of workers (0: one process).
# Arguments go to pytest: bash scripts/test.sh tests/test_api.py, bash scripts/test.sh -m "not slow".
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
export SQLMEND_DATA="${SQLMEND_DATA:-$(cd .. && pwd)/shared/data}"
WORKERS="${SQLMEND_TEST_WORKERS:-$(( $(python -c 'import os; print(len(os.sched_getaffinity(0)))') + 1 ))}"
python -m pytest -n "$WORKERS" --dist worksteal "$@"
