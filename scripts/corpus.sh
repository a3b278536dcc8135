#!/usr/bin/env bash
# The shared corpus of public legacy codebases (../shared/corpus/run.sh):
# each case under the real Estimator on TF 2.15 and through the project on
# TF 2.15 and 2.20. Its last line: 'corpus: N passed, M failed'.
#   SHARED_DIR (default: ../shared beside the checkout); extra args: cases.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
shared="${SHARED_DIR:-$root/../shared}"
[[ -f "$shared/corpus/run.sh" ]] || { echo "corpus: $shared/corpus/run.sh not found (set SHARED_DIR)" >&2; exit 1; }
bash scripts/setup_env.sh legacy >/dev/null && bash scripts/setup_env.sh modern >/dev/null ||
  { echo "corpus: setting up the lanes failed" >&2; exit 1; }
exec bash "$shared/corpus/run.sh" "$@"
