"""Stochastic Dual Coordinate Ascent for the linear Estimators (LinearSDCA).

What tensorflow_estimator 2.15's SDCA trainer does, on TF's SDCA ops:
  * every weight variable of the linear model gets an `<name>_unshrunk`
    twin that the SDCA op's updates accumulate into (a partitioned
    variable: one per part);
  * each example's dual state (4 floats) lives in a dense hash table keyed
    by the fingerprint of its example id, sharded `num_table_shards` ways
    and checkpointed as `ShardedMutableHashTable-I-of-N-keys/-values`;
  * a train step runs the SDCA op on the batch, stores the new example
    states, adds the weight deltas to the unshrunk variables and increments
    global_step; a chief hook then copies the unshrunk values into the model
    variables, shrunk by l1/l2 when there is L1 regularization.
Summaries: `approximate_duality_gap` and `examples_seen`.
"""

import collections

import tensorflow as tf

from trainer.compat import canned as canned_private
from trainer.compat import estimator_reexports

_LOSSES = ('logistic_loss', 'squared_loss', 'hinge_loss', 'smooth_hinge_loss',
           'poisson_loss')
_TABLE_NAME = 'ShardedMutableHashTable'


class SparseFeatureColumn:
  """One categorical column of a batch: parallel example and feature
  indices (int64) and their values (float32, or None for ones)."""

  def __init__(self, example_indices, feature_indices, feature_values):
    with tf.compat.v1.name_scope(None, 'SparseFeatureColumn',
                                 [example_indices, feature_indices]):
      self.example_indices = tf.convert_to_tensor(
          example_indices, name='example_indices', dtype=tf.int64)
      self.feature_indices = tf.convert_to_tensor(
          feature_indices, name='feature_indices', dtype=tf.int64)
    self.feature_values = None
    if feature_values is not None:
      with tf.compat.v1.name_scope(None, 'SparseFeatureColumn',
                                   [feature_values]):
        self.feature_values = tf.convert_to_tensor(
            feature_values, name='feature_values', dtype=tf.float32)


def _parts(variable):
  """A variable's parts: itself, or a partitioned variable's pieces."""
  if isinstance(variable, (list, canned_private.PartitionedVariable)):
    return list(variable)
  return [variable]


def _is_partitioned(variable):
  return isinstance(variable, (list, canned_private.PartitionedVariable))


def _as_tensor(value):
  """A tensor of a variable (its parts concatenated) or tensor."""
  if _is_partitioned(value):
    value = tf.concat(list(value), axis=0)
  return tf.convert_to_tensor(value)


class ShardedDenseHashTable:
  """Dense hash tables of [N, 2] int64 keys, rows sharded by the first key
  element (abs value modulo the shard count)."""

  def __init__(self, num_shards, value_size=4):
    with tf.compat.v1.name_scope(_TABLE_NAME, 'sharded_mutable_hash_table'):
      self.shards = [
          tf.lookup.experimental.DenseHashTable(
              key_dtype=tf.int64, value_dtype=tf.float32,
              default_value=[0.0] * value_size, empty_key=[0, 0],
              deleted_key=[1, 1], checkpoint=True,
              name=f'{_TABLE_NAME}-{i + 1}-of-{num_shards}')
          for i in range(num_shards)]

  def _shard_of(self, keys):
    first = tf.reshape(tf.slice(keys, [0, 0], [-1, 1]), [-1])
    return tf.cast(tf.math.floormod(tf.math.abs(first), len(self.shards)),
                   tf.int32)

  def size(self):
    with tf.compat.v1.name_scope(None, 'sharded_mutable_hash_table_size'):
      return tf.math.add_n([shard.size() for shard in self.shards])

  def lookup(self, keys):
    if len(self.shards) == 1:
      return self.shards[0].lookup(keys)
    count = len(self.shards)
    shard = self._shard_of(keys)
    positions = tf.dynamic_partition(tf.range(tf.shape(keys)[0]), shard,
                                     count)
    pieces = tf.dynamic_partition(keys, shard, count)
    found = [self.shards[i].lookup(pieces[i]) for i in range(count)]
    return tf.dynamic_stitch(positions, found)

  def insert(self, keys, values):
    if len(self.shards) == 1:
      return self.shards[0].insert(keys, values)
    count = len(self.shards)
    shard = self._shard_of(keys)
    key_pieces = tf.dynamic_partition(keys, shard, count)
    value_pieces = tf.dynamic_partition(values, shard, count)
    return tf.group(*[self.shards[i].insert(key_pieces[i], value_pieces[i])
                      for i in range(count)])

  def exported_values(self):
    """Each shard's values tensor."""
    return [shard.export()[1] for shard in self.shards]


class SDCAModel:
  """The SDCA trainer of one linear model over one batch (see module doc).

  examples: sparse_features (SparseFeatureColumn list), dense_features
  (tensor list), example_labels, example_weights, example_ids.
  variables: sparse_features_weights, dense_features_weights (variable
  lists, parallel to the features). options: loss_type,
  symmetric_l1_regularization, symmetric_l2_regularization, and optionally
  num_loss_partitions, num_table_shards, adaptive.
  """

  def __init__(self, examples, variables, options):
    if not examples or not variables or not options:
      raise ValueError('examples, variables and options must all be '
                       'specified.')
    if options['loss_type'] not in _LOSSES:
      raise ValueError('Unsupported loss_type: ', options['loss_type'])
    for key in ('example_labels', 'example_weights', 'example_ids',
                'sparse_features', 'dense_features'):
      if examples[key] is None:
        raise ValueError(f'{key} must be specified.')
    for key in ('sparse_features_weights', 'dense_features_weights'):
      if not isinstance(variables[key], list):
        raise ValueError(key + ' must be a list.')
    if options['symmetric_l2_regularization'] <= 0.0:
      raise ValueError('symmetric_l2_regularization should be positive.')
    if options['symmetric_l2_regularization'] <= 1.0:
      tf.compat.v1.logging.warn(
          'symmetric_l2_regularization for SDCA should typically be larger '
          'than for online optimization methods. Recommended value is of '
          'the order of the average L2 norm of the training examples.')
    if options['symmetric_l1_regularization'] < 0.0:
      raise ValueError('symmetric_l1_regularization should be non-negative.')
    self._examples = examples
    self._variables = variables
    self._options = options
    self._unshrunk = self._create_unshrunk()
    self._table = ShardedDenseHashTable(
        options.get('num_table_shards') or 1)
    tf.compat.v1.summary.scalar('approximate_duality_gap',
                                self.approximate_duality_gap())
    tf.compat.v1.summary.scalar('examples_seen', self._table.size())

  @property
  def _l1(self):
    return self._options['symmetric_l1_regularization']

  @property
  def _l2(self):
    return self._options['symmetric_l2_regularization']

  def _create_unshrunk(self):
    """{variables key: [twin (a list for a partitioned variable)]}."""

    def twin(variable):
      current = tf.cond(tf.compat.v1.is_variable_initialized(variable),
                        variable.read_value, lambda: variable.initial_value)
      return tf.Variable(tf.compat.v1.zeros_like(current, tf.float32),
                         name=variable.op.name + '_unshrunk')

    twins = collections.defaultdict(list)
    for key in ('sparse_features_weights', 'dense_features_weights'):
      for variable in self._variables[key]:
        if _is_partitioned(variable):
          parts = []
          for part in variable:
            with tf.compat.v1.colocate_with(part):
              parts.append(twin(part))
          twins[key].append(parts)
        else:
          with tf.compat.v1.device(variable.device):
            twins[key].append(twin(variable))
    return twins

  def _all_weights(self):
    for key in ('sparse_features_weights', 'dense_features_weights'):
      for variable in self._variables[key]:
        yield from _parts(variable)

  def _l1_loss(self):
    with tf.compat.v1.name_scope('sdca/l1_loss'):
      sums = []
      for part in self._all_weights():
        weights = tf.convert_to_tensor(part)
        with tf.compat.v1.device(weights.device):
          sums.append(tf.math.reduce_sum(
              tf.math.abs(tf.cast(weights, tf.float64))))
      return self._l1 * tf.math.add_n(sums)

  def _l2_loss(self):
    with tf.compat.v1.name_scope('sdca/l2_loss'):
      sums = []
      for part in self._all_weights():
        weights = tf.convert_to_tensor(part)
        with tf.compat.v1.device(weights.device):
          sums.append(tf.math.reduce_sum(
              tf.math.square(tf.cast(weights, tf.float64))))
      return self._l2 * tf.math.add_n(sums) / 2.0

  def _gather_partitioned(self, parts, flat_ids):
    """Rows flat_ids of a partitioned variable's parts (laid out as
    min-max partitioning does: the first `total % n` parts one row longer);
    (rows, part of each id, ids within the parts)."""
    count = len(parts)
    rows = [tf.compat.dimension_value(p.shape[0]) for p in parts]
    if all(r is not None for r in rows):
      total = tf.constant(sum(rows), flat_ids.dtype)
    else:
      sizes = []
      for part, size in zip(parts, rows):
        if size is None:
          with tf.compat.v1.colocate_with(part):
            size = tf.compat.v1.shape(part)[0]
        sizes.append(size)
      total = tf.math.reduce_sum(tf.cast(tf.stack(sizes), flat_ids.dtype))
    per_part = total // count
    extras = total % count
    assignment = tf.math.maximum(flat_ids // (per_part + 1),
                                 (flat_ids - extras) // per_part)
    local = tf.where(assignment < extras, flat_ids % (per_part + 1),
                     (flat_ids - extras) % per_part)
    assignment = tf.cast(assignment, tf.int32)
    local_ids = tf.dynamic_partition(local, assignment, count)
    gathered = []
    for i, part in enumerate(parts):
      with tf.compat.v1.colocate_with(part):
        gathered.append(tf.compat.v1.gather(part, local_ids[i]))
    positions = tf.dynamic_partition(tf.range(tf.compat.v1.shape(local)[0]),
                                     assignment, count)
    return tf.dynamic_stitch(positions, gathered), assignment, local_ids

  def minimize(self, global_step=None, name=None):
    """The train op: one SDCA step on the batch (see module docstring)."""
    with tf.compat.v1.name_scope(name, 'sdca/minimize'):
      sparse = self._examples['sparse_features']
      example_indices = [f.example_indices for f in sparse]
      feature_indices = [f.feature_indices for f in sparse]
      feature_values = [f.feature_values for f in sparse
                        if f.feature_values is not None]
      hashed_ids = tf.compat.v1.train.sdca_fprint(
          tf.convert_to_tensor(self._examples['example_ids']))
      states = self._table.lookup(hashed_ids)
      unique_ids, batch_weights, partitioning = [], [], {}
      for i, (twin, ids) in enumerate(zip(
          self._unshrunk['sparse_features_weights'], feature_indices)):
        ids = tf.cast(tf.unique(tf.cast(ids, tf.int32))[0], tf.int64)
        unique_ids.append(ids)
        if _is_partitioned(twin):
          rows, assignment, local_ids = self._gather_partitioned(
              list(twin), tf.reshape(ids, [-1]))
          partitioning[i] = (assignment, local_ids)
        else:
          twin_tensor = tf.convert_to_tensor(twin)
          with tf.compat.v1.device(twin_tensor.device):
            rows = tf.compat.v1.gather(twin_tensor, ids)
        batch_weights.append(rows)
      new_states, sparse_deltas, dense_deltas = (
          tf.raw_ops.SdcaOptimizerV2(
              sparse_example_indices=example_indices,
              sparse_feature_indices=feature_indices,
              sparse_feature_values=feature_values,
              dense_features=[_as_tensor(f)
                              for f in self._examples['dense_features']],
              example_weights=tf.convert_to_tensor(
                  self._examples['example_weights']),
              example_labels=tf.convert_to_tensor(
                  self._examples['example_labels']),
              sparse_indices=unique_ids, sparse_weights=batch_weights,
              dense_weights=[
                  _as_tensor(w)
                  for w in self._unshrunk['dense_features_weights']],
              example_state_data=states, loss_type=self._options['loss_type'],
              l1=self._l1, l2=self._l2,
              num_loss_partitions=self._options.get('num_loss_partitions', 1),
              num_inner_iterations=1,
              adaptive=self._options.get('adaptive', True)))
      with tf.control_dependencies([new_states]):
        updates = [self._table.insert(hashed_ids, new_states)]
        for i, (twin, ids, delta) in enumerate(zip(
            self._unshrunk['sparse_features_weights'], unique_ids,
            sparse_deltas)):
          if i in partitioning:
            assignment, local_ids = partitioning[i]
            pieces = tf.dynamic_partition(delta, assignment, len(twin))
            for part, part_ids, piece in zip(twin, local_ids, pieces):
              with tf.compat.v1.colocate_with(part):
                updates.append(
                    tf.compat.v1.scatter_add(part, part_ids, piece))
          else:
            updates.append(tf.compat.v1.scatter_add(twin, ids, delta))
        for twin, delta in zip(self._unshrunk['dense_features_weights'],
                               dense_deltas):
          if _is_partitioned(twin):
            pieces = tf.split(delta, num_or_size_splits=[
                part.shape.as_list()[0] for part in twin])
            updates.extend(tf.compat.v1.assign_add(part, piece)
                           for part, piece in zip(twin, pieces))
          else:
            updates.append(tf.compat.v1.assign_add(twin, delta))
      if global_step is None:
        return tf.group(*updates)
      with tf.control_dependencies(updates):
        return tf.compat.v1.assign_add(global_step, 1, name=name).op

  def update_weights(self, train_op):
    """After train_op: the model variables take the unshrunk values, shrunk
    towards zero by l1/l2 when l1 > 0."""
    with tf.control_dependencies([train_op]):
      copies = []
      for key in ('sparse_features_weights', 'dense_features_weights'):
        for variable, twin in zip(self._variables[key],
                                  self._unshrunk[key]):
          for part, twin_part in zip(_parts(variable), _parts(twin)):
            copies.append(part.assign(twin_part))
    if self._l1 <= 0:
      return tf.group(*copies)
    shrinkage = self._l1 / self._l2
    with tf.control_dependencies(copies):
      shrunk = []
      for part in self._all_weights():
        with tf.compat.v1.device(part.device):
          shrunk.append(part.assign(
              tf.math.sign(part) *
              tf.math.maximum(0.0, tf.math.abs(part) - shrinkage)))
      return tf.group(*shrunk)

  def approximate_duality_gap(self):
    """(primal loss + dual loss + regularization) / total example weight,
    over the examples seen so far."""
    with tf.compat.v1.name_scope('sdca/approximate_duality_gap'):
      sums = []
      for values in self._table.exported_values():
        with tf.compat.v1.device(values.device):
          with tf.control_dependencies(sums):
            sums.append(tf.math.reduce_sum(tf.cast(values, tf.float64), 0))
      total = tf.math.add_n(sums)
      primal, dual, weight = total[1], total[2], total[3]
      return (primal + dual + self._l1_loss() +
              2.0 * self._l2_loss()) / weight


def _unique_ids(id_weight_pair):
  """A categorical column's batch as a SparseFeatureColumn: ids < 0 (out
  of vocabulary) dropped, an id repeated within an example kept once with
  its weights summed."""
  id_tensor = id_weight_pair.id_tensor
  if id_weight_pair.weight_tensor is not None:
    weights = id_weight_pair.weight_tensor.values
  else:
    weights = tf.ones([tf.compat.v1.shape(id_tensor.indices)[0]], tf.float32)
  example_ids = tf.reshape(id_tensor.indices[:, 0], [-1])
  ids = tf.cast(tf.reshape(id_tensor.values, [-1]), tf.int64)
  valid = tf.math.greater_equal(ids, 0)
  ids = tf.compat.v1.boolean_mask(ids, valid)
  example_ids = tf.compat.v1.boolean_mask(example_ids, valid)
  weights = tf.compat.v1.boolean_mask(weights, valid)
  # One key per (example, id) pair, deduplicated.
  stride = tf.math.reduce_max(ids) + 1
  keys, position = tf.unique(stride * example_ids + ids)
  count = tf.compat.v1.shape(keys)[0]
  examples = tf.math.unsorted_segment_min(example_ids, position, count)
  summed = tf.reshape(tf.math.unsorted_segment_sum(weights, position, count),
                      [-1])
  return SparseFeatureColumn(examples, keys - stride * examples, summed)


def model_for_columns(state_manager, feature_columns, features, targets,
                      bias_var, weight_column_name, example_id_column,
                      options):
  """The SDCAModel of a LinearModel's columns (variables from its state
  manager) and bias on one batch."""
  batch_size = tf.compat.v1.shape(targets)[0]
  cache = canned_private.TransformationCache(features)
  dense, dense_weights, sparse, sparse_weights = [], [], [], []
  for column in sorted(feature_columns, key=lambda c: c.name):
    if isinstance(column, canned_private.CategoricalColumn):
      sparse.append(_unique_ids(column.get_sparse_tensors(cache,
                                                          state_manager)))
      sparse_weights.append(state_manager.get_variable(column, 'weights'))
    elif isinstance(column, canned_private.DenseColumn):
      if column.variable_shape.ndims != 1:
        raise ValueError(f'Column {type(column).__name__} has rank '
                         f'{column.variable_shape.ndims}, larger than 1.')
      dense.append(column.get_dense_tensor(cache, state_manager))
      dense_weights.append(state_manager.get_variable(column, 'weights'))
    else:
      raise ValueError('LinearSDCA does not support column type '
                       f'{type(column).__name__}.')
  dense.append(tf.ones([batch_size, 1]))
  dense_weights.append(bias_var)
  if weight_column_name:
    example_weights = tf.reshape(features[weight_column_name], shape=[-1])
  else:
    example_weights = tf.ones([batch_size])
  examples = dict(
      sparse_features=sparse, dense_features=dense,
      example_labels=tf.compat.v1.to_float(tf.reshape(targets, shape=[-1])),
      example_weights=example_weights,
      example_ids=features[example_id_column])
  variables = dict(sparse_features_weights=sparse_weights,
                   dense_features_weights=dense_weights)
  return SDCAModel(examples, variables, options)


class UpdateWeightsHook(tf.compat.v1.train.SessionRunHook):
  """Runs the SDCA model's weight update with every training step."""

  def __init__(self, sdca_model, train_op):
    self._sdca_model = sdca_model
    self._train_op = train_op
    self._update_op = None

  def begin(self):
    self._update_op = self._sdca_model.update_weights(self._train_op)

  def before_run(self, run_context):
    del run_context
    return tf.compat.v1.train.SessionRunArgs(self._update_op)


# The TF ops tensorflow_estimator's sdca_ops module imports by name.
internal_convert_to_tensor = estimator_reexports.internal_convert_to_tensor
name_scope = estimator_reexports.name_scope
log_poisson_loss = estimator_reexports.log_poisson_loss
sigmoid_cross_entropy_with_logits = (
    estimator_reexports.sigmoid_cross_entropy_with_logits)
