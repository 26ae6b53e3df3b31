#!/usr/bin/env bash
# Set up everything the tests need, then run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
export SQLMEND_DATA="${SQLMEND_DATA:-$(cd .. && pwd)/shared/data}"
python -m pytest "$@"
