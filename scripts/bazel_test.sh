#!/usr/bin/env bash
# The Bazel lane: builds and tests every target offline with Debian's Bazel.
#   scripts/bazel_test.sh                 # builds and tests //...
#   scripts/bazel_test.sh //tests/config:flags_test   # only these targets
#   scripts/bazel_test.sh --setup         # installs what it needs, no test
# Installs bazel-bootstrap (Bazel 4.2.3) when `bazel` is missing and the
# legacy virtualenv the Python toolchain runs on (tools/python/python3.sh).
# Every target is built; every test runs but those tagged "modern_lane":
# tests whose code does not depend on the TensorFlow version, or that
# exercise the TF2-only paths (benchmarks' smoke modes, the memory report,
# the native runner and its converter, the input pipeline, the wheel, the
# facade's canned Estimators, which TF 2.15 programs never run), run
# on the modern lane only, so CI keeps to its time budget.
# Prints 'bazel: N passed, N failed' over test targets as its last line;
# exits non-zero if the build or any test failed.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

targets=(); setup_only=0
for arg in "$@"; do
  [[ "$arg" == //* ]] && targets+=("$arg")
  [[ "$arg" == --setup ]] && setup_only=1
done
filters=()  # Named targets run as named; //... skips the modern_lane tests.
[[ ${#targets[@]} -gt 0 ]] || { targets=(//...); filters=(--test_tag_filters=-modern_lane); }

need=()
command -v bazel >/dev/null || need+=(bazel-bootstrap)
[[ -x /usr/bin/python3 ]] || need+=(python3)  # runs Bazel's launcher stubs
if [[ ${#need[@]} -gt 0 ]]; then
  echo "bazel_test: installing ${need[*]} with apt-get"
  sudo=(); [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq &&
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" ||
    { echo "bazel_test: installing ${need[*]} failed" >&2; exit 1; }
fi
bash scripts/setup_env.sh legacy ||
  { echo "bazel_test: setting up the legacy virtualenv failed" >&2; exit 1; }
[[ $setup_only -eq 0 ]] || exit 0

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
start=$SECONDS
# One invocation builds every target of the pattern (binaries and libraries
# too) and runs the tests. --batch: no server is left running once the lane
# ends. --keep_going: every test target reports a status even when another
# target fails to build.
bazel --batch test --keep_going "${filters[@]}" -- "${targets[@]}" 2>&1 |
  tee "$log"
rc=${PIPESTATUS[0]}
echo "bazel_test: bazel test exited $rc after $((SECONDS - start)) s"

# Bazel's per-target summary: '//pkg:name   (cached) PASSED in 1.2s', 'FAILED
# in ...', 'TIMEOUT in ...', 'NO STATUS', 'FAILED TO BUILD', 'FLAKY, ...'.
summary="$(grep -E '^//[^ ]+ +(\(cached\) )?[A-Z]' "$log")"
passed="$(grep -cE ' (\(cached\) )?PASSED( |$)' <<<"$summary")"
failed="$(grep -cvE ' (\(cached\) )?PASSED( |$)' <<<"$summary")"
[[ -n "$summary" ]] || failed=0
if [[ $rc -ne 0 && $failed -eq 0 ]]; then
  failed=1  # the build broke (a library or binary), no test target reported
fi
echo "bazel: ${passed} passed, ${failed} failed"
[[ $rc -eq 0 ]]
