#!/usr/bin/env bash
# Sets everything up, runs the baseline benchmark and writes its report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
OUT=results/baseline
# --force: running the demo again replaces its previous results.
.venv/bin/cnsim run baseline --out "$OUT" --force "$@"
echo
echo "Report: $OUT/report.html"
