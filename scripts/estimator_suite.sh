#!/usr/bin/env bash
# tensorflow/estimator 2.15's own tests through the facade (the shared
# estimator_suite): runs ../shared/estimator_suite/run.sh on both lanes, then
# scripts/check_estimator_suite.py, whose last line is
# 'estimator_suite: N passed, N failed' over the behavioural tests that pass
# on the real Estimator (failed: neither passing through the facade nor a
# refusal that MIGRATION.md lists). Exits non-zero below 90% or on a failure.
#   SHARED_DIR (default: ../shared beside the checkout), ESTIMATOR_SUITE_OUT.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
shared="${SHARED_DIR:-$root/../shared}"
suite="$shared/estimator_suite/run.sh"
[[ -f "$suite" ]] || { echo "estimator_suite: $suite not found (set SHARED_DIR)" >&2; exit 1; }
bash scripts/setup_env.sh legacy >/dev/null && bash scripts/setup_env.sh modern >/dev/null ||
  { echo "estimator_suite: setting up the lanes failed" >&2; exit 1; }
out="${ESTIMATOR_SUITE_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/estimator_suite.XXXXXX")}"
mkdir -p "$out"
ESTIMATOR_SUITE_OUT="$out" bash "$suite" | tee "$out/summary.txt"
exec .venv/legacy/bin/python scripts/check_estimator_suite.py "$out" MIGRATION.md
