"""The model_fn and input_fn the facade hands the tf2 runner for one call.

The runner calls them as it calls any TPUEstimator pair (params with a
per-replica batch_size, use_tpu and, for input_fns, context). They call the
user's functions with exactly what Estimator or TPUEstimator gives them
(trainer/compat/estimator_calls.py passes the arguments they name):
  * model_fn: the Estimator's params (TPUEstimator: plus batch_size and
    use_tpu) and the RunConfig; the spec is returned as it is (the runner
    reads both spec types), with warm_start_from added to its scaffold in
    TRAIN, where Estimator warm-starts;
  * input_fn: the Estimator's params (TPUEstimator: plus batch_size when it
    has one for the mode, and context on a TPU or over several replicas),
    and input_context when a strategy distributes the input; it must return
    a tf.data.Dataset.
"""

import copy
import re
import types

import tensorflow as tf

from trainer.api import model_fns
from trainer.api import specs
from trainer.compat import estimator_calls
from trainer.compat import vocab_warm_start
from trainer.facade.tpu import validation



class WarmStart:
  """warm_start_from of an Estimator: (checkpoint, vars, vocab, prev names)."""

  def __init__(self, settings):
    self.ckpt, self.vars, self.vocab, self.prev_names = settings

  def assignment_map(self, trainable, global_):
    """{checkpoint name: variable name} of the variables to warm-start."""
    selected = []
    if self.vars is None or isinstance(self.vars, str):
      pattern = self.vars or '.*'
      selected = [n for n in trainable if re.match(pattern, n)]
    elif all(isinstance(v, str) for v in self.vars):
      for pattern in self.vars:
        selected += [n for n in global_ if re.match(pattern, n)]
    else:
      selected = [v.name.split(':')[0] for v in self.vars]
    prev = self.prev_names or {}
    return {prev.get(n, n): n for n in dict.fromkeys(selected)}

  def apply(self, trainable, global_, variables=None):
    """Initialises the selected variables from the checkpoint (call where
    get_variable finds them: in a scaffold_fn); those with a VocabInfo
    remapped to their new vocabulary, as tf.compat.v1.train.warm_start
    does (`variables`: {name: variable} of them). ValueError for a
    VocabInfo of a variable not warm-started (TF's)."""
    path = self.ckpt
    if tf.io.gfile.isdir(path):
      path = tf.train.latest_checkpoint(path) or path
    mapping = self.assignment_map(trainable, global_)
    selected = dict.fromkeys(mapping.values())
    vocab = {n: i for n, i in (self.vocab or {}).items() if n in selected}
    plain = {k: v for k, v in mapping.items() if v not in vocab}
    tf.compat.v1.logging.info('Warm-starting %d variable(s) from %s.',
                              len(mapping), path)
    for name, info in vocab.items():
      vocab_warm_start.warm_start_var_with_vocab(
          variables[name], path, info, (self.prev_names or {}).get(name))
    if plain:
      tf.compat.v1.train.init_from_checkpoint(path, plain)
    unused = set(self.vocab or {}) - set(vocab)
    if unused:  # After the others, as TF's warm_start checks.
      raise ValueError(
          'You provided the following variables in var_name_to_vocab_info '
          f'that were not used: {unused}.  Perhaps you misspelled them?  '
          'Here is the list of viable variable names: '
          f'{selected.keys()}')


def _variable_names(key):
  return [v.name.split(':')[0] for v in tf.compat.v1.get_collection(key)]


class EstimatorFns:
  """model_fn / input_fn for one runner call of one facade Estimator.

  model: trainer.facade.distributed.backend.Model; input_fn: the user's
  input_fn of this call (None for export). Set `distributed` when a strategy
  spreads the input over replicas (input_fns then get input_context).
  """

  def __init__(self, model, input_fn=None):
    self.model = model
    self._input_fn = input_fn
    self.distributed = False
    self.predictions_are_dict = None  # Known after a PREDICT trace.

  def input_fn(self, mode, params, input_context=None):
    """The user's input_fn with Estimator's arguments; a tf.data.Dataset."""
    model = self.model
    user_params = copy.copy(model.params)  # Its type, as Estimator's.
    if model.is_tpu:
      if 'params' not in estimator_calls.fn_args(self._input_fn):
        raise ValueError(
            f'input_fn ({self._input_fn}) does not include params argument, '
            'required by TPUEstimator to pass batch size as '
            'params["batch_size"]')
      if model.batch_size(mode):
        user_params['batch_size'] = params['batch_size']
      if self.distributed or model.use_tpu:
        user_params['context'] = params['context']
    result = estimator_calls.call_input_fn(
        self._input_fn, mode, user_params, model.config,
        input_context if self.distributed else None)
    return result

  def model_fn(self, features, labels, mode, params):
    """The user's model_fn with Estimator's arguments; its spec."""
    model = self.model
    on_tpu = model.use_tpu and params['batch_size'] is not None  # Not export.
    if on_tpu:  # TPUEstimator's checks, in its order.
      validation.check_features(
          features, labels,
          model.config.tpu_config.per_host_input_for_training)
      if 'labels' not in estimator_calls.fn_args(model.model_fn) and (
          labels is not None):
        raise ValueError(
            'model_fn does not take labels, but input_fn returns labels.')
      validation.check_model_fn_args(model.model_fn,
                                     estimator_calls.fn_args(model.model_fn))
    user_params = copy.copy(model.params)  # Its type, as Estimator's.
    if model.is_tpu:
      if params['batch_size'] is None:  # Export: predict_batch_size.
        batch = model.predict_batch_size
      else:
        batch = params['batch_size'] if model.batch_size(mode) else None
      if batch is not None:
        user_params['batch_size'] = batch
      user_params['use_tpu'] = params['use_tpu']
    spec = model_fns.call_model_fn(model.model_fn, features, labels,
                                   mode, user_params, model.config)
    if on_tpu:
      validation.check_spec(spec, mode)
    if mode == specs.ModeKeys.PREDICT:
      self.predictions_are_dict = isinstance(
          getattr(spec, 'predictions', None), dict)
    if mode == specs.ModeKeys.TRAIN and model.warm_start is not None:
      spec = self._with_warm_start(spec)
    return spec

  def _with_warm_start(self, spec):
    """spec whose scaffold also warm-starts (before any checkpoint restore
    the runner does, so a checkpoint in model_dir wins, as in Estimator)."""
    names = (_variable_names(tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES),
             _variable_names(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES),
             {v.name.split(':')[0]: v for v in tf.compat.v1.get_collection(
                 tf.compat.v1.GraphKeys.GLOBAL_VARIABLES)})
    warm_start = WarmStart(self.model.warm_start)
    tpu_spec = hasattr(spec, 'scaffold_fn')
    user = spec.scaffold_fn if tpu_spec else getattr(spec, 'scaffold', None)

    def scaffold_fn():
      if user is None:
        scaffold = None
      elif tpu_spec or (callable(user) and not hasattr(user, 'saver')):
        scaffold = user()
      else:
        scaffold = user
      warm_start.apply(*names)
      return scaffold or tf.compat.v1.train.Scaffold()

    if tpu_spec:
      return spec._replace(scaffold_fn=scaffold_fn)
    # An EstimatorSpec's scaffold must be a Scaffold: hand the runner its fields
    # with the scaffold function instead (trainer/engines/tf2/spec.py reads a
    # callable scaffold as a scaffold_fn).
    return types.SimpleNamespace(**dict(spec._asdict(), scaffold=scaffold_fn))
