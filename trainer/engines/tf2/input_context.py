"""params['context'] for input_fns under the tf2 runner.

TPUEstimator hands an input_fn its TPUContext in params['context'], and
TPU-era input_fns call it (`current_input_fn_deployment()`, `num_hosts`,
`current_host`, ...); input_fns written for tf.distribute call a
tf.distribute.InputContext (`input_pipeline_id`,
`get_per_replica_batch_size`, ...). `TPUInputContext` is both, with the
values TPUEstimator gives under PER_HOST_V2 for the same topology: one
input_fn call per host (input pipeline), each feeding that host's replicas
with per-replica batches.
"""

import tensorflow as tf

CPU_HOST = '/job:localhost/replica:0/task:0/device:CPU:0'


class TPUInputContext(tf.distribute.InputContext):
  """A tf.distribute.InputContext that also answers as a TPUContext."""

  def __init__(self, input_context, host_device=CPU_HOST):
    """Wraps the InputContext tf.distribute gives one input pipeline.

    host_device: the CPU device of this pipeline's host, as TPUContext's
    current_input_fn_deployment() reports it.
    """
    super().__init__(
        num_input_pipelines=input_context.num_input_pipelines,
        input_pipeline_id=input_context.input_pipeline_id,
        num_replicas_in_sync=input_context.num_replicas_in_sync)
    self._host_device = host_device

  # -- TPUContext (tensorflow_estimator's tpu_context.TPUContext) ----------

  def current_input_fn_deployment(self):
    """(host device, invocation index, invocation count, replicas fed)."""
    return (self._host_device, self.input_pipeline_id,
            self.num_input_pipelines, self.num_of_replicas_per_host)

  @property
  def num_replicas(self):
    return self.num_replicas_in_sync

  @property
  def num_hosts(self):
    return self.num_input_pipelines

  @property
  def current_host(self):
    return self.input_pipeline_id

  @property
  def num_of_replicas_per_host(self):
    return self.num_replicas_in_sync // self.num_input_pipelines

  @property
  def device_assignment(self):
    raise RuntimeError('This TPUContext instance must not be called from '
                       'input_fn.')  # TPUEstimator's own words.

  def device_for_replica(self, replica_id):
    """(host device, ordinal on the host) of `replica_id`."""
    return self._host_device, replica_id % self.num_of_replicas_per_host

  @property
  def tpu_host_placement_function(self):
    return lambda host_id=None: self._host_device

  def __repr__(self):
    return (f'TPUInputContext(host {self.current_host} of {self.num_hosts}, '
            f'{self.num_replicas} replica(s))')
