#!/usr/bin/env bash
# Sets up every lane and runs its tests; the README's test command.
#   scripts/test.sh                 # every lane: modern (pytest, TF 2.20),
#                                   # bazel (the legacy lane, TF 2.15.1, under
#                                   # Bazel: every target built, every test
#                                   # run but those tagged modern_lane),
#                                   # corpus (public codebases,
#                                   # real Estimator vs the project) and
#                                   # suite (tensorflow/estimator's own tests
#                                   # through the facade, against the real
#                                   # Estimator's recorded results), newest (TF 2.21:
#                                   # the tests of the runners, the facade,
#                                   # the main job and trainer.migrate,
#                                   # NEWEST_TESTS)
#   scripts/test.sh legacy          # one lane; extra args go to pytest:
#   scripts/test.sh legacy -k flags # (legacy: the same tests, pytest only)
#   scripts/test.sh fast            # the fast tier: the in-process tests of
#                                   # tests/fast_tier.txt on the modern
#                                   # lane, about a minute; what a
#                                   # developer runs first (every lane above
#                                   # runs these tests too, so CI does not
#                                   # run this one)
# With every lane, newest runs beside suite (its output printed after it).
# Prints one closing line 'N passed, N failed' over all lanes; exits non-zero
# if any lane failed or ran no test. The pytest lanes run TEST_JOBS workers
# (pytest-xdist, whole modules per worker; default: one per core, 1 runs
# pytest without xdist). TEST_SEED=N repeats the random choices of a run;
# DURATIONS=N: the N slowest tests of a pytest lane (default 15).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export TF_CPP_MIN_LOG_LEVEL=2
# Every lane runs under SCHED_BATCH (inherited by every process it starts).
# Two test workers share the 2 cores, and with wakeup preemption TF's
# tf.data iterator teardown loses a race with its autotuning thread, which
# then sleeps out its period (Model::OptimizeLoop, up to 60 s) while the
# teardown waits: one test took 83 s in the lane, 2.6 s alone. Measured on one core
# beside a running CI: the conformance matrix in 144 s under SCHED_BATCH,
# 9 min without. See docs/performance.md.
if command -v chrt >/dev/null; then chrt --batch --pid 0 $$ >/dev/null || true; fi

lanes=()
if [[ $# -gt 0 && "$1" != -* ]]; then lanes=("$1"); shift; fi
if [[ ${#lanes[@]} -eq 0 ]]; then
  # The legacy lane's test modules run once, under Bazel (on .venv/legacy),
  # not a second time under pytest.
  lanes=(modern bazel corpus suite newest)
fi

# The newest lane (TF 2.21) runs what depends on the TensorFlow version:
# the runners, the facade, the legacy launcher and the main job.
NEWEST_TESTS="${NEWEST_TESTS:-tests/main/main_test.py
  tests/engines/tf2_engine_test.py tests/runners/native_runner_test.py
  tests/facade/estimator_test.py tests/facade/api_test.py
  tests/launcher/launcher_test.py tests/launcher/programs_test.py
  tests/api/estimator_names_test.py tests/compat/tf_private_test.py
  tests/canned/wide_deep_test.py
  tests/facade/inventory_test.py tests/facade/subclass_contract_test.py
  tests/migrate/migrate_test.py tests/facade/keras_test.py}"

passed=0; failed=0; status=0

# With every lane to run, the legacy and newest virtualenvs and Bazel install
# in the background while the modern lane installs and tests; a lane that
# needs one waits for it (setup_env.sh must not run twice on one lane).
declare -A prefetch=()
prefetch_log="$(mktemp -d)"
if [[ ${#lanes[@]} -gt 1 ]]; then
  bash scripts/bazel_test.sh --setup >"$prefetch_log/legacy" 2>&1 &
  prefetch[legacy]=$!
  bash scripts/setup_env.sh newest >"$prefetch_log/newest" 2>&1 &
  prefetch[newest]=$!
fi
await() {  # await VENV...: wait for their background set-up; print its log.
  local v
  for v in "$@"; do
    [[ -n "${prefetch[$v]:-}" ]] || continue
    wait "${prefetch[$v]}" || echo "test.sh: background set-up of $v failed" >&2
    cat "$prefetch_log/$v"; unset "prefetch[$v]"
  done
}
count() {  # count LANE_OUTPUT_FILE: add the lane's closing counts.
  local line p f e
  line="$(grep -E '^(=+ )?[0-9]+ (passed|failed)|^[a-z_]*:? ?[0-9]+ passed, [0-9]+ failed' "$1" | tail -n1)"
  p="$(grep -oE '[0-9]+ passed' <<<"$line" | grep -oE '[0-9]+' || echo 0)"
  f="$(grep -oE '[0-9]+ failed' <<<"$line" | grep -oE '[0-9]+' || echo 0)"
  e="$(grep -oE '[0-9]+ error' <<<"$line" | grep -oE '[0-9]+' || echo 0)"
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0} + ${e:-0}))
  if [[ "${p:-0}" -eq 0 ]]; then echo "test.sh: lane ran no test" >&2; status=1; fi
}

run_lane() {  # run_lane LANE [PYTEST ARGS...]: runs the lane; its exit code.
  local lane=$1 jobs workers tests
  shift
  if [[ "$lane" == fast ]]; then  # The modules of tests/fast_tier.txt.
    run_lane modern -m fast $(grep -v '^#' tests/fast_tier.txt) "$@"
  elif [[ "$lane" == bazel ]]; then
    bash scripts/bazel_test.sh "$@"
  elif [[ "$lane" == corpus ]]; then
    bash scripts/corpus.sh
  elif [[ "$lane" == suite ]]; then
    bash scripts/estimator_suite.sh
  else
    if ! bash scripts/setup_env.sh "$lane"; then
      echo "test.sh: setting up lane $lane failed" >&2; return 1
    fi
    jobs="${TEST_JOBS:-$(nproc)}"
    workers=()
    [[ "$jobs" -gt 1 ]] && workers=(-n "$jobs" --dist loadfile)
    tests=()
    [[ "$lane" == newest && $# -eq 0 ]] && IFS=$' \t\n' read -rd '' -a tests <<<"$NEWEST_TESTS"
    ".venv/$lane/bin/python" -m pytest -q --durations="${DURATIONS:-15}" "${workers[@]}" \
        "${tests[@]}" "$@"
  fi
}

# The last two lanes run side by side when both are asked for: each ends on
# one core (the suite's last module, newest's last test file), and side by
# side each fills the other's idle core (stop 37: 1.3 of 2 cores busy over
# the two run one after the other).
declare -A beside=([suite]=newest)
declare -A side_pid=() side_out=() side_start=()
# A side lane runs in the background, where Ctrl-C does not reach it.
trap 'for p in "${side_pid[@]}"; do pkill -TERM -P "$p"; done 2>/dev/null' EXIT
for lane in "${lanes[@]}"; do
  start=$SECONDS
  case "$lane" in
    modern|fast) ;; newest) await newest ;; *) await legacy ;;
  esac
  if [[ -n "${side_pid[$lane]:-}" ]]; then  # Started beside an earlier lane.
    wait "${side_pid[$lane]}"; rc=$?; unset "side_pid[$lane]"
    out="${side_out[$lane]}"; start="${side_start[$lane]}"
    ended="$(cat "$out.end" 2>/dev/null || echo "$SECONDS")"; rm -f "$out.end"
    echo "=== lane: $lane (ran beside the lane before)"; cat "$out"
  else
    other="${beside[$lane]:-}"
    if [[ -n "$other" && " ${lanes[*]} " == *" $other "* ]]; then
      [[ "$other" == newest ]] && await newest
      side_out[$other]="$(mktemp)"; side_start[$other]=$SECONDS
      (run_lane "$other" "$@" >"${side_out[$other]}" 2>&1; rc=$?
       echo "$SECONDS" >"${side_out[$other]}.end"; exit $rc) &
      side_pid[$other]=$!
    fi
    echo "=== lane: $lane"
    out="$(mktemp)"
    run_lane "$lane" "$@" 2>&1 | tee "$out"; rc=${PIPESTATUS[0]}
  fi
  count "$out"; rm -f "$out"
  [[ $rc -eq 0 ]] || status=1
  echo "=== lane $lane: exit $rc in $((${ended:-$SECONDS} - start)) s"
  ended=
done
await legacy newest
rm -rf "$prefetch_log"
echo "${passed} passed, ${failed} failed"
exit $status
