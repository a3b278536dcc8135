#!/usr/bin/env bash
# tensorflow/estimator 2.15's own tests through the facade (the shared
# estimator_suite, ../shared/estimator_suite/run.sh), judged against the real
# Estimator's results, then scripts/check_estimator_suite.py, whose last line
# is 'estimator_suite: N passed, N failed' over the behavioural tests that
# pass on the real Estimator (failed: neither passing through the facade nor
# a refusal that MIGRATION.md lists). Exits non-zero below 90% or on a
# failure.
#   scripts/estimator_suite.sh                   # CI's modules (modules=, below)
#   scripts/estimator_suite.sh estimator_test    # these modules only
#   scripts/estimator_suite.sh --check           # only that the recording
#                                                # is current (below)
# The reference lane (the real Estimator, TF 2.15.1, pinned) gives the same
# results every run: they are recorded in tests/estimator_suite_reference/
# (scripts/record_estimator_suite_reference.sh) and copied into the results,
# and only the facade lane runs here (LANES=modern), its modules two run.sh
# processes at a time (ESTIMATOR_SUITE_JOBS, default 2), one summary over
# all. The recording's hashes of the upstream tests and harness and its
# TF pins must match ../shared/estimator_suite and the legacy lane, or this
# fails before running anything.
#   SHARED_DIR (default: ../shared beside the checkout), ESTIMATOR_SUITE_OUT.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
shared="${SHARED_DIR:-$root/../shared}"
suite="$shared/estimator_suite"
ref="$root/tests/estimator_suite_reference"
[[ -f "$suite/run.sh" ]] || { echo "estimator_suite: $suite/run.sh not found (set SHARED_DIR)" >&2; exit 1; }

# The modules CI runs through the facade: run.sh's $ALL and $CANNED (the
# heads' and canned Estimators' own tests).
modules=(run_config_test tpu_config_test estimator_test training_test
  binary_class_head_test multi_class_head_test regression_head_test
  baseline_test linear_test dnn_test_fc_v2)
check_only=0
[[ "${1:-}" == --check ]] && { check_only=1; shift; }
[[ $# -gt 0 ]] && modules=("$@")
# Seconds each module takes through the facade (run.sh's .rc files: modern
# lane, the lane alone, stop 39's machine): modules start longest first, each
# as soon as a run.sh slot is free; an unlisted module counts 30.
declare -A seconds=([run_config_test]=3 [tpu_config_test]=4
  [estimator_test]=14 [training_test]=11 [binary_class_head_test]=13
  [multi_class_head_test]=8 [regression_head_test]=7 [baseline_test]=23
  [linear_test]=33 [dnn_test_fc_v2]=36)

# The recording must still describe this suite and this legacy lane.
stale=0
if ! (cd "$suite" && sha256sum --check --quiet "$ref/upstream.sha256"); then
  stale=1
elif [[ "$(cd "$suite" && find upstream run.sh conftest.py pytest.ini -type f | LC_ALL=C sort)" != \
        "$(awk '{print $2}' "$ref/upstream.sha256")" ]]; then
  echo "estimator_suite: files were added to or removed from $suite" >&2; stale=1
elif ! diff <(grep -E '^tensorflow(-estimator)?==' requirements/legacy-constraints.txt) \
            "$ref/lane.txt" >&2; then
  echo "estimator_suite: the legacy lane's pins changed" >&2; stale=1
fi
if [[ $stale -ne 0 ]]; then
  echo "estimator_suite: the recorded reference results ($ref) no longer match" \
       "the suite or the legacy lane: rerun scripts/record_estimator_suite_reference.sh" >&2
  echo "estimator_suite: 0 passed, 1 failed"; exit 1
fi
for m in "${modules[@]}"; do
  [[ -f "$ref/legacy/$m.xml" ]] || {
    echo "estimator_suite: no recorded reference for $m: run" \
         "MODULES=\"...\" scripts/record_estimator_suite_reference.sh" >&2
    echo "estimator_suite: 0 passed, 1 failed"; exit 1; }
done
[[ $check_only -eq 0 ]] || { echo "estimator_suite: the recorded reference is current"; exit 0; }

bash scripts/setup_env.sh legacy >/dev/null && bash scripts/setup_env.sh modern >/dev/null ||
  { echo "estimator_suite: setting up the lanes failed" >&2; exit 1; }
out="${ESTIMATOR_SUITE_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/estimator_suite.XXXXXX")}"
mkdir -p "$out/legacy"
for m in "${modules[@]}"; do cp "$ref/legacy/$m.xml" "$ref/legacy/$m.rc" "$out/legacy/"; done

# Longest first, ESTIMATOR_SUITE_JOBS (default 2) run.sh processes at once,
# one module each, the next starting as one ends: fixed groups left a core
# idle whenever the estimates were off (linear_test's 470 s, from a loaded
# run, left it alone in one group: 85 of the lane's 119 s on one core).
# Each run.sh ends with a summary of what it saw (discarded); one summary of
# every module follows.
jobs="${ESTIMATOR_SUITE_JOBS:-2}"
for m in "${modules[@]}"; do echo "${seconds[$m]:-30} $m"; done | sort -rn |
  cut -d' ' -f2 | SUITE_SH="$suite/run.sh" OUT="$out" xargs -P "$jobs" -I{} \
    sh -c 'LANES=modern MODULES="$1" ESTIMATOR_SUITE_OUT="$OUT" bash "$SUITE_SH" >"$OUT/run_$1.txt" 2>&1' _ {}
grep -h -A1 '^== ' "$out"/run*.txt | grep -v '^--$'
.venv/legacy/bin/python "$suite/summarize.py" "$out" | tee "$out/summary.txt"
exec .venv/legacy/bin/python scripts/check_estimator_suite.py "$out" MIGRATION.md
