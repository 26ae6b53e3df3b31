#!/usr/bin/env bash
# Set up sqlmend (scripts/setup.sh), then run the main job on an embedded default:
# correct the SQL of a real text-to-SQL system (GPT-4 zero-shot) on the Spider-dev
# questions of one database, concert_singer, from ../shared/data, with the stages
# that need no model, and print the paired before/after report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
export SQLMEND_DATA="${SQLMEND_DATA:-$(cd .. && pwd)/shared/data}"
DB="$SQLMEND_DATA/spider/database/concert_singer/concert_singer.sqlite"
echo "== one query: the literal 'france' is not how concert_singer stores the country"
sqlmend correct --db "$DB" --question "How many singers are from France?" \
  --sql "SELECT count(*) FROM singer WHERE country = 'france'"
echo "== a whole prediction file (GPT-4 zero-shot on Spider dev), first 120 questions"
sqlmend correct --dataset spider-dev \
  --pred "$SQLMEND_DATA/predictions/spider-dev/gpt-4_zero-shot.sql" \
  --out runs/demo --limit 120 --stages static,guard
echo "== results in runs/demo (corrections.jsonl: corrected SQL, findings, guard verdicts)"
