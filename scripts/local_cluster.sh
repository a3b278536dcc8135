#!/usr/bin/env bash
# A TF_CONFIG cluster of one program on loopback ports, as Kubeflow's TFJob
# starts it (see scripts/local_cluster.py and docs/cluster.md):
#   scripts/local_cluster.sh --workers=2 --ps=1 -- \
#     .venv/modern/bin/python -m trainer.legacy their_main.py --model_dir=/tmp/m
exec python3 "$(dirname "${BASH_SOURCE[0]}")/local_cluster.py" "$@"
