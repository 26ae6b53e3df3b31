#!/usr/bin/env bash
# Set up sqlmend (scripts/setup.sh), then run the main job on an embedded default:
# correct one query on a real Spider database (pets_1, from ../shared/data), then the whole
# Spider-dev prediction file of a real text-to-SQL system (GPT-4 zero-shot) with the stages
# that need no model endpoint (static rules, repair search with the shipped verifier, guard),
# and print the paired before/after report (fixed / regressed / ΔEX).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
export SQLMEND_DATA="${SQLMEND_DATA:-$(cd .. && pwd)/shared/data}"
PRED="$SQLMEND_DATA/predictions/spider-dev/gpt-4_zero-shot.sql"
echo "== one query: pets_1 stores the sex as 'F', not 'female'"
sqlmend correct --db "$SQLMEND_DATA/spider/database/pets_1/pets_1.sqlite" \
  --question "How many female students are there?" \
  --sql "SELECT count(*) FROM Student WHERE Sex = 'female'"
echo "== the shipped error-token detector on the same query (advisory: weak on real predictions, AUROC 0.63 on 1,000 of them)"
sqlmend detect --db "$SQLMEND_DATA/spider/database/pets_1/pets_1.sqlite" \
  --question "How many female students are there?" \
  --sql "SELECT count(*) FROM Student WHERE Sex = 'female'"
echo "== GPT-4 zero-shot on Spider dev (1,034 questions), no model endpoint: static rules + repair search + guard"
sqlmend correct --dataset spider-dev --pred "$PRED" --out runs/demo --stages static,search,guard
echo "== paired report: before (GPT-4 zero-shot) vs after (runs/demo/corrected.sql)"
sqlmend eval --dataset spider-dev --pred "$PRED" --against runs/demo/corrected.sql
