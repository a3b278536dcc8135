"""TensorFlow's k-means graph ops, for the facade's KMeans Estimator.

tensorflow_estimator's KMeans builds its training graph with
`tensorflow.python.ops.clustering_ops.KMeans` (TF core's: the cluster
centers variable `clusters`, its initialisation ops incl. kmeans++, the
mini-batch and full-batch Lloyd updates over `gen_clustering_ops`), which
has no public name; TF 2.15, 2.20 and 2.21 ship the same module. The facade
(trainer/facade/canned/kmeans.py) reaches it here only. Importing this
module changes nothing.
"""

# pylint: disable=g-direct-tensorflow-import
from tensorflow.python.ops import clustering_ops as _clustering_ops
from tensorflow.python.ops import control_flow_ops as _control_flow_ops
# pylint: enable=g-direct-tensorflow-import

KMeans = _clustering_ops.KMeans
SQUARED_EUCLIDEAN_DISTANCE = _clustering_ops.SQUARED_EUCLIDEAN_DISTANCE
COSINE_DISTANCE = _clustering_ops.COSINE_DISTANCE
RANDOM_INIT = _clustering_ops.RANDOM_INIT
KMEANS_PLUS_PLUS_INIT = _clustering_ops.KMEANS_PLUS_PLUS_INIT
# The name of the variable holding the cluster centers.
CLUSTERS_VAR_NAME = _clustering_ops.CLUSTERS_VAR_NAME


def with_dependencies(dependencies, output_tensor):
  """output_tensor's identity, run after `dependencies` (the op TF 1's
  control_flow_ops.with_dependencies makes, names included)."""
  return _control_flow_ops.with_dependencies(dependencies, output_tensor)
