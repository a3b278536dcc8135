"""tf.compat.v1.estimator.experimental.KMeans (KMeansClustering).

tensorflow_estimator 2.15's k-means Estimator on the facade, same graph:
TF core's clustering ops (trainer/compat/clustering.py) build the cluster
centers variable `clusters` and one mini-batch (`use_mini_batch`, centers
updated every `mini_batch_steps_per_iteration` steps) or full-batch Lloyd
iteration per training step; the centers are chosen when the session
starts (random or kmeans++ from input batches, or given), by the chief
while other tasks wait; `relative_tolerance` stops training when the loss
(the sum of squared distances to the nearest center, summary `loss/raw`)
changes less than that. Predictions `all_distances` and `cluster_index`
(each also an export signature; serving_default the index), metric
`score`; transform(), predict_cluster_index(), score(), cluster_centers().
"""

import time

import numpy as np
import tensorflow as tf

from trainer.api import specs
from trainer.compat import clustering
from trainer.facade import estimator
from trainer.facade.export import export_output

_v1 = tf.compat.v1


class _LossRelativeChangeHook(_v1.train.SessionRunHook):
  """Stops when the loss changes by less than `tolerance` (relative to
  1 + |previous loss|) from one step to the next."""

  def __init__(self, loss_tensor, tolerance):
    self._loss_tensor = loss_tensor
    self._tolerance = tolerance
    self._prev_loss = None

  def before_run(self, run_context):
    del run_context
    return _v1.train.SessionRunArgs(self._loss_tensor)

  def after_run(self, run_context, run_values):
    loss = run_values.results
    if self._prev_loss:
      change = abs(loss - self._prev_loss) / (1 + abs(self._prev_loss))
      if change < self._tolerance:
        run_context.request_stop()
    self._prev_loss = loss


class _InitializeClustersHook(_v1.train.SessionRunHook):
  """Chooses the initial centers when the session starts: the chief runs
  the init op until every center is chosen, the others wait for it."""

  def __init__(self, init_op, is_initialized_var, is_chief):
    self._init_op = init_op
    self._is_initialized_var = is_initialized_var
    self._is_chief = is_chief

  def after_create_session(self, session, coord):
    del coord
    while True:
      try:
        if session.run(self._is_initialized_var):
          break
        if self._is_chief:
          session.run(self._init_op)
        else:
          time.sleep(1)
      except RuntimeError as e:
        _v1.logging.info(e)


def _parse_features_if_necessary(features, feature_columns):
  """The input points: a non-dict as is; a dict through feature_columns
  (input_layer), else its features concatenated in key order."""
  if not isinstance(features, dict):
    return features
  if feature_columns:
    return _v1.feature_column.input_layer(features, feature_columns)
  keys = sorted(features)
  with _v1.colocate_with(features[keys[0]]):
    return tf.concat([features[k] for k in keys], axis=1)


class _ModelFn:
  """The KMeans model_fn(features, mode, config) of one configuration."""

  def __init__(self, num_clusters, initial_clusters, distance_metric, seed,
               use_mini_batch, mini_batch_steps_per_iteration,
               kmeans_plus_plus_num_retries, relative_tolerance,
               feature_columns):
    self._num_clusters = num_clusters
    self._initial_clusters = initial_clusters
    self._distance_metric = distance_metric
    self._seed = seed
    self._use_mini_batch = use_mini_batch
    self._mini_batch_steps_per_iteration = mini_batch_steps_per_iteration
    self._kmeans_plus_plus_num_retries = kmeans_plus_plus_num_retries
    self._relative_tolerance = relative_tolerance
    self._feature_columns = feature_columns

  def model_fn(self, features, mode, config):
    """One Lloyd iteration per training step; input_fn returns features
    (or (features, None)): the model_fn takes no labels."""
    points = _parse_features_if_necessary(features, self._feature_columns)
    (all_distances, model_predictions, losses, is_initialized, init_op,
     training_op) = clustering.KMeans(
         inputs=points, num_clusters=self._num_clusters,
         initial_clusters=self._initial_clusters,
         distance_metric=self._distance_metric,
         use_mini_batch=self._use_mini_batch,
         mini_batch_steps_per_iteration=self._mini_batch_steps_per_iteration,
         random_seed=self._seed,
         kmeans_plus_plus_num_retries=self._kmeans_plus_plus_num_retries
     ).training_graph()
    loss = tf.math.reduce_sum(losses)
    _v1.summary.scalar('loss/raw', loss)
    incr_step = _v1.assign_add(_v1.train.get_global_step(), 1)
    training_op = clustering.with_dependencies([training_op, incr_step], loss)
    training_hooks = [
        _InitializeClustersHook(init_op, is_initialized, config.is_chief)]
    if self._relative_tolerance is not None:
      training_hooks.append(
          _LossRelativeChangeHook(loss, self._relative_tolerance))
    export_outputs = {
        KMeansClustering.ALL_DISTANCES:
            export_output.PredictOutput(all_distances[0]),
        KMeansClustering.CLUSTER_INDEX:
            export_output.PredictOutput(model_predictions[0]),
        tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY:
            export_output.PredictOutput(model_predictions[0])}
    return specs.EstimatorSpec(
        mode=mode,
        predictions={KMeansClustering.ALL_DISTANCES: all_distances[0],
                     KMeansClustering.CLUSTER_INDEX: model_predictions[0]},
        loss=loss, train_op=training_op,
        eval_metric_ops={KMeansClustering.SCORE: _v1.metrics.mean(loss)},
        training_hooks=training_hooks, export_outputs=export_outputs)


class KMeansClustering(estimator.Estimator):
  """tf.compat.v1.estimator.experimental.KMeans: see the module docstring.

  The SavedModel export_saved_model writes has no cluster centers: read
  them from the checkpoint (cluster_centers(), or
  tf.train.load_variable(model_dir, CLUSTER_CENTERS_VAR_NAME)).
  """

  SQUARED_EUCLIDEAN_DISTANCE = clustering.SQUARED_EUCLIDEAN_DISTANCE
  COSINE_DISTANCE = clustering.COSINE_DISTANCE
  RANDOM_INIT = clustering.RANDOM_INIT
  KMEANS_PLUS_PLUS_INIT = clustering.KMEANS_PLUS_PLUS_INIT
  SCORE = 'score'
  CLUSTER_INDEX = 'cluster_index'
  ALL_DISTANCES = 'all_distances'
  CLUSTER_CENTERS_VAR_NAME = clustering.CLUSTERS_VAR_NAME

  def __init__(self, num_clusters, model_dir=None,
               initial_clusters=RANDOM_INIT,
               distance_metric=SQUARED_EUCLIDEAN_DISTANCE, seed=None,
               use_mini_batch=True, mini_batch_steps_per_iteration=1,
               kmeans_plus_plus_num_retries=2, relative_tolerance=None,
               config=None, feature_columns=None):
    """Same arguments, defaults and errors as tensorflow_estimator's:
    ValueError for an unknown `initial_clusters` name or
    `distance_metric`."""
    if isinstance(initial_clusters, str) and initial_clusters not in (
        KMeansClustering.RANDOM_INIT, KMeansClustering.KMEANS_PLUS_PLUS_INIT):
      raise ValueError(
          f"Unsupported initialization algorithm '{initial_clusters}'")
    if distance_metric not in (KMeansClustering.SQUARED_EUCLIDEAN_DISTANCE,
                               KMeansClustering.COSINE_DISTANCE):
      raise ValueError(f"Unsupported distance metric '{distance_metric}'")
    self._distance_metric = distance_metric
    super().__init__(
        model_fn=_ModelFn(num_clusters, initial_clusters, distance_metric,
                          seed, use_mini_batch,
                          mini_batch_steps_per_iteration,
                          kmeans_plus_plus_num_retries, relative_tolerance,
                          feature_columns).model_fn,
        model_dir=model_dir, config=config)

  def _predict_one_key(self, input_fn, predict_key):
    for result in self.predict(input_fn=input_fn, predict_keys=[predict_key]):
      yield result[predict_key]

  def predict_cluster_index(self, input_fn):
    """Yields the index of the closest center to each input point."""
    yield from self._predict_one_key(input_fn, KMeansClustering.CLUSTER_INDEX)

  def score(self, input_fn):
    """The sum of squared distances of the first batch's points to their
    nearest centers (sklearn's score is its negative)."""
    return self.evaluate(input_fn=input_fn, steps=1)[KMeansClustering.SCORE]

  def transform(self, input_fn):
    """Yields each point's distances to every center (Euclidean, not
    squared, with SQUARED_EUCLIDEAN_DISTANCE)."""
    for distances in self._predict_one_key(input_fn,
                                           KMeansClustering.ALL_DISTANCES):
      if self._distance_metric == KMeansClustering.SQUARED_EUCLIDEAN_DISTANCE:
        yield np.sqrt(distances)
      else:
        yield distances

  def cluster_centers(self):
    """The cluster centers of the latest checkpoint."""
    return self.get_variable_value(KMeansClustering.CLUSTER_CENTERS_VAR_NAME)
