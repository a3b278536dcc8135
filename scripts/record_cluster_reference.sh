#!/usr/bin/env bash
# Records the reference of tests/cluster: what TF 2.15's real Estimator does
# in each loopback-cluster case, written to tests/cluster/golden/*.json,
# which the modern lane's tests compare the facade with (CI runs the
# clusters once, there). Run it after changing a case or census_main.py,
# and commit the goldens:
#   scripts/record_cluster_reference.sh            # every case
#   scripts/record_cluster_reference.sh -k master  # some (pytest's -k)
# Runs tests/cluster on .venv/legacy with RECORD_CLUSTER_REFERENCE=1 (the
# tests' invariants are asserted of the reference as it records); the
# run_config and local_strategies cases also drive .venv/modern.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
python=.venv/legacy/bin/python
[[ -x $python ]] || { echo "record_cluster_reference: no $python (scripts/setup_env.sh legacy)" >&2; exit 1; }
RECORD_CLUSTER_REFERENCE=1 TF_CPP_MIN_LOG_LEVEL=2 nice "$python" -m pytest \
  -q -p no:cacheprovider tests/cluster "$@"
"$python" - <<'PY' > tests/cluster/golden/VERSIONS.json
import json
from importlib import metadata
print(json.dumps({p: metadata.version(p)
                  for p in ('tensorflow', 'tensorflow-estimator')}))
PY
