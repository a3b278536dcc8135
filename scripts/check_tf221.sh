#!/usr/bin/env bash
# Checks the tf2 runner on TensorFlow 2.21 (+ tf-keras 2.21 + tensorboard,
# which TF 2.21 no longer pulls in) in its own virtualenv, .venv/tf221.
# No tf-models-official exists for 2.21, so it is not installed.
#   bash scripts/check_tf221.sh        # ~3 min the first time
# Runs the main job under the tf2 runner and the tf2-runner tests; prints one
# closing line 'tf221: N passed, N failed' and exits non-zero on a failure.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export TF_CPP_MIN_LOG_LEVEL=2
venv="$root/.venv/tf221"
python="${PYTHON:-python3.11}"
command -v "$python" >/dev/null || python=python3
pins=(tensorflow==2.21.0 tf-keras==2.21.0 tensorboard==2.21.0 'protobuf<7'
      absl-py==2.1.0 pillow==10.4.0 matplotlib==3.8.4 pytest==8.3.3)

if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c \
    'import tensorflow as tf, tf_keras, tensorboard; assert tf.__version__.startswith("2.21")' 2>/dev/null; then
  echo "check_tf221: installing ${pins[*]} into $venv"
  "$python" -m venv "$venv" || exit 2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${pins[@]}" || exit 2
fi
"$venv/bin/python" -c 'import tensorflow as tf; print("check_tf221: tensorflow", tf.__version__)'

status=0
out="$(mktemp)"
"$venv/bin/python" -m trainer.main --runner=tf2 --train_steps=300 \
    --steps_per_eval=300 --iterations_per_loop=100 2>&1 | tee "$out" | grep -E '^(top_1_accuracy|global_step):|Runner:'
grep -qE '^top_1_accuracy: 0\.(9|8)' "$out" || { echo "check_tf221: main job failed" >&2; status=1; }
"$venv/bin/python" -m pytest -q -p no:cacheprovider tests/tf2_runner_test.py \
    tests/estimator_compat_test.py tests/tf_private_test.py \
    tests/multi_worker_test.py tests/checkpoint_interop_test.py \
    tests/verify_migration_test.py 2>&1 | tee "$out"
line="$(grep -E '[0-9]+ passed' "$out" | tail -n1)"
passed="$(grep -oE '[0-9]+ passed' <<<"$line" | grep -oE '[0-9]+' || echo 0)"
failed=0
for n in $(grep -oE '[0-9]+ (failed|error)' <<<"$line" | grep -oE '[0-9]+'); do
  failed=$((failed + n))
done
rm -f "$out"
[[ "${failed:-0}" -eq 0 && "${passed:-0}" -gt 0 ]] || status=1
echo "tf221: ${passed:-0} passed, ${failed:-0} failed"
exit $status
