#!/usr/bin/env bash
# The shared corpus of public legacy codebases (../shared/corpus/run.sh):
# each case under the real Estimator on TF 2.15 and through the project on
# TF 2.15 and 2.20. Its last line: 'corpus: N passed, M failed'.
#   SHARED_DIR (default: ../shared beside the checkout); extra args: cases,
#   run as one run.sh. With none, every case runs, split over CORPUS_JOBS
#   run.sh processes at once (default 2; 1: one run.sh, in its order).
# oneDNN's kernels are capped at AVX2 (ONEDNN_MAX_CPU_ISA, unless set): the
# corpus compares TF 2.20's evaluation of the reference checkpoint with TF
# 2.15's at an absolute 1e-5, on losses up to 1e11, i.e. bit for bit. TF 2.15
# and 2.20 ship different oneDNN releases, whose sgemm kernels for other ISAs
# (AVX-512, or AVX/SSE4.1: measured with this cap lowered) round differently;
# with the cap, every CI machine runs the kernels both releases agree on.
# The cap is not enough: TF 2.20's own kernels (tf.sigmoid: up to 7 ulp on
# identical inputs) differ from TF 2.15's, so a cell on TF 2.20 that misses
# its TF 2.15 reference only by float rounding is re-judged by
# scripts/corpus_rounding.py (relative 1e-5, never on a 2.15 lane; printed
# as such; CORPUS_STRICT=1: not re-judged). docs/corpus.md has the figures.
# A group whose runs all passed has its work dir deleted (CORPUS_KEEP=1: kept).
# With every case, scripts/corpus_migrate.py migrates each codebase with
# trainer.migrate beside the groups (migrate/CASE lines; CORPUS_MIGRATE=0: not;
# CORPUS_MIGRATE_CASES: which, default every codebase once).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
shared="${SHARED_DIR:-$root/../shared}"
[[ -f "$shared/corpus/run.sh" ]] || { echo "corpus: $shared/corpus/run.sh not found (set SHARED_DIR)" >&2; exit 1; }
bash scripts/setup_env.sh legacy >/dev/null && bash scripts/setup_env.sh modern >/dev/null ||
  { echo "corpus: setting up the lanes failed" >&2; exit 1; }
export ONEDNN_MAX_CPU_ISA="${ONEDNN_MAX_CPU_ISA:-AVX2}"

jobs="${CORPUS_JOBS:-2}"
# Groups of about equal length (seconds of each case's runs in a CI log:
# simclr 371, tpu_resnet 313, efficientnet 269, tapas 182, resnet_main.py
# 122, mnist_tpu 60, mnist_tpu.py 28).
groups=("simclr efficientnet mnist_tpu.py" "tpu_resnet tapas resnet_main.py mnist_tpu")
[[ "$jobs" -gt 1 ]] || groups=("${groups[*]}")
[[ $# -gt 0 ]] && groups=("$*")
outs=(); pids=()
for g in "${groups[@]}"; do
  out="$(mktemp)"; outs+=("$out")
  # shellcheck disable=SC2086  # a group is a list of case names
  bash "$shared/corpus/run.sh" $g >"$out" 2>&1 &
  pids+=($!)
done
# trainer.migrate on every codebase (scripts/corpus_migrate.py, modern lane),
# beside the run.sh groups when the whole corpus runs (CORPUS_MIGRATE=0: not);
# its reports go to CORPUS_REPORTS (default: a temp dir, named at the end).
migrate_out=""
if [[ $# -eq 0 && "${CORPUS_MIGRATE:-1}" != 0 ]]; then
  migrate_out="$(mktemp)"
  reports="${CORPUS_REPORTS:-$(mktemp -d "${TMPDIR:-/tmp}/corpus_migrate_reports.XXXXXX")}"
  # tpu_resnet is tpu_resnet_rs's codebase and model_fn without the ResNet-RS
  # options: migrating it too repeats 2 minutes of the lane for no new code.
  # shellcheck disable=SC2086  # a list of case names
  SHARED_DIR="$shared" .venv/modern/bin/python scripts/corpus_migrate.py \
      --reports="$reports" ${CORPUS_MIGRATE_CASES:-mnist_tpu tpu_resnet_rs efficientnet simclr tapas} \
      >"$migrate_out" 2>&1 &
  migrate_pid=$!
fi
status=0; passed=0; failed=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}"
  work="$(sed -nE 's/^corpus: logs in (.*)$/\1/p' "${outs[$i]}" | head -n1)"
  line="$(grep -E '^corpus: [0-9]+ passed, [0-9]+ failed' "${outs[$i]}" | tail -n1)"
  if [[ -z "$line" ]]; then
    grep -v '^corpus: [0-9]* passed' "${outs[$i]}"
    echo "corpus: run.sh ${groups[$i]} printed no summary"; status=1
    rm -f "${outs[$i]}"; continue
  fi
  read -r p f < <(sed -E 's/corpus: ([0-9]+) passed, ([0-9]+) failed/\1 \2/' <<<"$line")
  while IFS= read -r text; do
    if [[ "$text" == *": FAIL "* && "${CORPUS_STRICT:-0}" != 1 && -n "$work" ]] &&
       judged="$(python3 scripts/corpus_rounding.py "$work" "$text")"; then
      text="$judged"; p=$((p + 1)); f=$((f - 1))
    fi
    printf '%s\n' "$text"
  done < <(grep -v '^corpus: [0-9]* passed' "${outs[$i]}")
  passed=$((passed + p)); failed=$((failed + f))
  # A passing group's work dir (1.5 to 5 GB of checkpoints) goes; a failing
  # one's stays for its logs.
  if [[ "$f" -eq 0 && -n "$work" && "${CORPUS_KEEP:-0}" != 1 ]]; then
    rm -rf "$work"; echo "corpus: all passed, removed $work (CORPUS_KEEP=1 keeps it)"
  fi
  rm -f "${outs[$i]}"
done
if [[ -n "$migrate_out" ]]; then
  wait "$migrate_pid"
  grep -v '^corpus-migrate: [0-9]* passed' "$migrate_out"
  line="$(grep -E '^corpus-migrate: [0-9]+ passed, [0-9]+ failed' "$migrate_out" | tail -n1)"
  if [[ -z "$line" ]]; then
    echo "corpus: corpus_migrate.py printed no summary"; status=1
  else
    read -r p f < <(sed -E 's/corpus-migrate: ([0-9]+) passed, ([0-9]+) failed/\1 \2/' <<<"$line")
    passed=$((passed + p)); failed=$((failed + f))
  fi
  echo "corpus: trainer.migrate reports in $reports"
  rm -f "$migrate_out"
fi
echo "corpus: $passed passed, $failed failed"
[[ $status -eq 0 && $failed -eq 0 ]]
