"""Which shard of the input files this input pipeline reads."""


def input_shard(params):
  """(num_pipelines, pipeline_index) from params['context'], else (1, 0).

  Understands TPUEstimator's TPUContext (one input_fn call per host under
  PER_HOST_V2) and tf.distribute.InputContext (one call per input pipeline).
  """
  context = params.get('context')
  if context is None:
    return 1, 0
  if hasattr(context, 'current_input_fn_deployment'):
    # (host device, invocation index, invocation count, replicas fed).
    _, index, total, _ = context.current_input_fn_deployment()
    return int(total), int(index)
  if hasattr(context, 'num_input_pipelines'):
    return int(context.num_input_pipelines), int(context.input_pipeline_id)
  raise TypeError(f"params['context'] of type {type(context).__name__} is "
                  'neither a TPUContext nor a tf.distribute.InputContext.')
