"""TPUEstimator(use_tpu=True)'s own checks, case by case, on a stand-in TPU.

Each case is a TPUEstimator mistake (a batch size the replicas do not
divide, TPUConfig.num_shards or num_cores_per_replica the system cannot
have, float or missing steps, a missing batch size, an input_fn or model_fn
without `params`, features of dynamic shape, training_chief_hooks, dynamic
predictions, several hosts where one is needed) or a call that is fine,
run against the metadata of a TPU system that is not there (8 cores on one
host unless the case says otherwise): the error a user would read (type
and message, addresses and graph names masked), or 'no error' once the
checks pass.
  * TF 2.15 (`python -m trainer.legacy tests/facade/tpu_checks.py
    --out=F`, regenerate.py: golden/tpu_checks.json): the real TPUEstimator
    with tpu_context's metadata query answered by the stand-in; it then
    builds its TPU graph on the CPU, and the session it would run it in
    fails (no TPU): 'no error' there is the first error past the checks.
  * The facade (tpu_checks_test.py, in process): TPUEstimator._tpu_system
    answered by the stand-in, and a one-device strategy standing in for
    the TPUStrategy, so the runner traces the model_fn with TPUEstimator's
    checks on.
"""

import json
import re
import sys
import tempfile

import tensorflow as tf

v1 = tf.compat.v1
FINE = 'no error'


def _model_fn(features, labels, mode, params):
  del params
  w = v1.get_variable('w', [2, 1])
  predictions = tf.matmul(features, w)
  tpu = v1.estimator.tpu
  if mode == 'infer':
    return tpu.TPUEstimatorSpec(mode, predictions={'p': predictions})
  loss = tf.reduce_mean(tf.square(predictions - labels))
  if mode == 'eval':
    return tpu.TPUEstimatorSpec(mode, loss=loss)
  optimizer = v1.tpu.CrossShardOptimizer(
      v1.train.GradientDescentOptimizer(0.1))
  return tpu.TPUEstimatorSpec(mode, loss=loss, train_op=optimizer.minimize(
      loss, v1.train.get_global_step()))


def _input_fn(params, drop_remainder=True):
  return tf.data.Dataset.from_tensors((tf.ones([2]), tf.ones([1]))).repeat(
  ).batch(params['batch_size'], drop_remainder=drop_remainder)


def _dynamic_input_fn(params):
  return _input_fn(params, drop_remainder=False)


def _model_fn_without_params(features, labels, mode):
  return _model_fn(features, labels, mode, {})


def _model_fn_with_chief_hooks(features, labels, mode, params):
  spec = _model_fn(features, labels, mode, params).as_estimator_spec()
  return spec._replace(
      training_chief_hooks=[v1.train.StopAtStepHook(last_step=5)])


def _estimator_spec_model_fn(features, labels, mode, params):
  return _model_fn(features, labels, mode, params).as_estimator_spec()


def _dynamic_predictions_model_fn(features, labels, mode, params):
  spec = _model_fn(features, labels, mode, params)
  p = spec.predictions['p']
  return spec._replace(predictions={'p': tf.boolean_mask(p, p[:, 0] > -1e9)})


# name: (TPUEstimator changes, TPUConfig args, (cores, hosts), call, args)
CASES = {
    'train_fine': ({}, {}, (8, 1), 'train', {'steps': 2}),
    'train_batch_not_divisible': ({'train_batch_size': 12}, {}, (8, 1),
                                  'train', {'steps': 2}),
    'num_shards_mismatch': ({}, {'num_shards': 4}, (8, 1), 'train',
                            {'steps': 2}),
    'cores_per_replica_over_system': ({}, {'num_cores_per_replica': 16},
                                      (8, 1), 'train', {'steps': 2}),
    'cores_per_replica_over_host': ({}, {'num_cores_per_replica': 8},
                                    (8, 2), 'train', {'steps': 2}),
    'no_tpu_cores': ({}, {}, (0, 1), 'train', {'steps': 2}),
    'train_no_steps': ({}, {}, (8, 1), 'train', {}),
    'train_float_steps': ({}, {}, (8, 1), 'train', {'steps': 2.5}),
    'train_float_max_steps': ({}, {}, (8, 1), 'train', {'max_steps': 3.0}),
    'train_zero_steps': ({}, {}, (8, 1), 'train', {'steps': 0}),
    'eval_no_batch': ({'eval_batch_size': None}, {}, (8, 1), 'evaluate',
                      {'steps': 1}),
    'eval_batch_not_divisible': ({'eval_batch_size': 12}, {}, (8, 1),
                                 'evaluate', {'steps': 1}),
    'eval_no_steps': ({}, {}, (8, 1), 'evaluate', {}),
    'eval_float_steps': ({}, {}, (8, 1), 'evaluate', {'steps': 1.5}),
    'eval_multi_host': ({}, {}, (8, 2), 'evaluate', {'steps': 1}),
    'predict_no_batch': ({'predict_batch_size': None}, {}, (8, 1), 'predict',
                         {}),
    'predict_multi_host': ({}, {}, (8, 2), 'predict', {}),
    'predict_input_fn_without_params': ({'input_fn': 'no_params'}, {},
                                        (8, 1), 'predict', {}),
    'dynamic_features': ({'input_fn': 'dynamic'}, {}, (8, 1), 'train',
                         {'steps': 2}),
    'model_fn_without_params': ({'model_fn': _model_fn_without_params}, {},
                                (8, 1), 'train', {'steps': 2}),
    'chief_hooks': ({'model_fn': _model_fn_with_chief_hooks}, {}, (8, 1),
                    'train', {'steps': 2}),
    'estimator_spec_in_eval': ({'model_fn': _estimator_spec_model_fn}, {},
                               (8, 1), 'evaluate', {'steps': 1}),
    'dynamic_predictions': ({'model_fn': _dynamic_predictions_model_fn}, {},
                            (8, 1), 'predict', {}),
    # eval_on_tpu=False evaluates on the CPU: nothing is checked, it runs.
    'eval_on_cpu': ({'eval_on_tpu': False, 'eval_batch_size': 12}, {},
                    (8, 1), 'evaluate', {'steps': 1}),
}


def metadata(cores, hosts):
  return tf.tpu.experimental.TPUSystemMetadata(
      num_cores=cores, num_hosts=hosts,
      num_of_cores_per_host=cores // hosts, topology=None, devices=[])


def _input_fns():
  return {'no_params': lambda: _input_fn({'batch_size': 8}),
          'dynamic': _dynamic_input_fn}


def masked(text):
  """An error message without what differs run to run or lane to lane:
  object addresses, graph tensor names."""
  text = re.sub(r' at 0x[0-9a-f]+', '', text)
  text = re.sub(r"<class '[\w.]*?(\w+)'>", r'<class \1>', text)
  return re.sub(r'Tensor\("[^"]*"', 'Tensor(', text)


def run_case(name, stand_in):
  """[error type, masked message] of case `name` (or [FINE]); `stand_in`
  (cores, hosts) is a context manager answering the metadata query."""
  changes, tpu_config, system, method, args = CASES[name]
  changes = dict(changes)
  input_fn = _input_fns().get(changes.pop('input_fn', None), _input_fn)
  model_fn = changes.pop('model_fn', _model_fn)
  kwargs = dict(train_batch_size=8, eval_batch_size=8, predict_batch_size=8)
  kwargs.update(changes)
  tpu = v1.estimator.tpu
  config = tpu.RunConfig(model_dir=tempfile.mkdtemp(),
                         tpu_config=tpu.TPUConfig(**tpu_config))
  try:
    with stand_in(*system):
      est = tpu.TPUEstimator(model_fn=model_fn, config=config, use_tpu=True,
                             **kwargs)
      result = getattr(est, method)(input_fn, **args)
      if method == 'predict':
        next(result)
      elif method == 'evaluate' and 'loss' not in result:
        return ['no loss', sorted(result)]
  except tf.errors.OpError:
    return [FINE]  # Past the checks: running the TPU graph failed (no TPU).
  except Exception as e:  # pylint: disable=broad-except
    return [type(e).__name__, masked(str(e))]
  return [FINE]


def _reference_stand_in(cores, hosts):
  from unittest import mock  # pylint: disable=g-import-not-at-top
  from tensorflow_estimator.python.estimator.tpu import tpu_context  # pylint: disable=g-import-not-at-top
  found = metadata(cores, hosts)
  return mock.patch.object(tpu_context._InternalTPUContext,  # pylint: disable=protected-access
                           '_get_tpu_system_metadata', lambda self: found)


def main(argv):
  """Records every case under TF 2.15's TPUEstimator (--out=FILE)."""
  out = next(a.split('=', 1)[1] for a in argv[1:] if a.startswith('--out='))
  v1.logging.set_verbosity(v1.logging.ERROR)
  with open(out, 'w') as f:
    json.dump({name: run_case(name, _reference_stand_in) for name in CASES},
              f, indent=1, sort_keys=True)


if __name__ == '__main__':
  main(sys.argv)
