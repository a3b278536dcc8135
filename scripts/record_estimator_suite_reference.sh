#!/usr/bin/env bash
# Records the estimator suite's reference lane: tensorflow/estimator 2.15's
# own tests (../shared/estimator_suite) under the real Estimator (TF 2.15.1,
# .venv/legacy). Their results do not change while the upstream test files,
# the suite's harness and the legacy lane's pins stay the same, so CI
# (scripts/estimator_suite.sh) reads them from here instead of rerunning the
# reference. Writes tests/estimator_suite_reference/:
#   legacy/MODULE.xml, legacy/MODULE.rc  run.sh's junit results and
#                    'exit-status seconds' (times, hostnames and checkout
#                    paths taken out, so a re-recording diffs only in results)
#   upstream.sha256  sha256sum of the suite's upstream/ files, run.sh,
#                    conftest.py and pytest.ini
#   lane.txt         the legacy lane's tensorflow and tensorflow-estimator pins
# scripts/estimator_suite.sh fails while upstream.sha256 or lane.txt do not
# match: rerun this then, and commit what changed.
#   SHARED_DIR (default: ../shared beside the checkout);
#   MODULES (default: run.sh's $ALL and $CANNED, the heads' and canned
#   Estimators' tests included).
# About 12 minutes on 2 cores (one test process at a time).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
shared="${SHARED_DIR:-$root/../shared}"
suite="$shared/estimator_suite"
[[ -f "$suite/run.sh" ]] || { echo "record: $suite/run.sh not found (set SHARED_DIR)" >&2; exit 1; }
shared="$(cd "$shared" && pwd)"
bash scripts/setup_env.sh legacy >/dev/null && bash scripts/setup_env.sh modern >/dev/null ||
  { echo "record: setting up the lanes failed" >&2; exit 1; }
ref="$root/tests/estimator_suite_reference"
modules="${MODULES:-run_config_test tpu_config_test estimator_test training_test
  binary_class_head_test multi_class_head_test regression_head_test
  baseline_test linear_test dnn_test_fc_v2}"
out="$(mktemp -d "${TMPDIR:-/tmp}/estimator_suite_reference.XXXXXX")"
trap 'rm -rf "$out"' EXIT

# shellcheck disable=SC2086  # a list of module names
LANES=legacy MODULES="$(echo $modules)" ESTIMATOR_SUITE_OUT="$out" \
  bash "$suite/run.sh" >"$out/summary.txt"
mkdir -p "$ref/legacy"
for m in $modules; do
  if [[ ! -s "$out/legacy/$m.xml" ]]; then
    echo "record: no junit result for $m; its log:" >&2
    tail -n 30 "$out/legacy/$m.log" >&2; exit 1
  fi
  sed -E -e 's/ (time|timestamp|hostname)="[^"]*"//g' \
      -e "s#$root#@CHECKOUT@#g; s#$shared#@SHARED@#g" \
      "$out/legacy/$m.xml" >"$ref/legacy/$m.xml"
  cp "$out/legacy/$m.rc" "$ref/legacy/$m.rc"
  echo "record: $m: exit status and seconds $(cat "$ref/legacy/$m.rc")"
done
(cd "$suite" && find upstream run.sh conftest.py pytest.ini -type f | LC_ALL=C sort |
   xargs sha256sum) >"$ref/upstream.sha256"
grep -E '^tensorflow(-estimator)?==' requirements/legacy-constraints.txt >"$ref/lane.txt"
echo "record: wrote $ref"
