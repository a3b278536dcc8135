"""Flag definitions, parse-time validation and the params built from flags."""

import os
import tempfile

from absl import flags
from absl.testing import absltest

import flags as trainer_flags
from trainer import params as params_lib
from trainer.models import registry


def parse(*args):
  """Fresh FlagValues with the trainer flags, parsed from `args`."""
  fv = flags.FlagValues()
  trainer_flags.define_flags(fv)
  fv(['prog'] + list(args))
  return fv


class FlagValidationTest(absltest.TestCase):

  def assert_rejected(self, args, *fragments):
    with self.assertRaises(flags.IllegalFlagValueError) as ctx:
      parse(*args)
    for fragment in fragments:
      self.assertIn(fragment, str(ctx.exception))

  def test_defaults_parse(self):
    fv = parse()
    self.assertEqual(fv.model, 'mlp')
    self.assertEqual(fv.mode, 'train_and_evaluate')

  def test_global_batch_not_divisible_by_cores(self):
    self.assert_rejected(['--train_batch_size=100', '--num_cores=8',
                          '--tpu=grpc://10.0.0.2:8470'],
                         '--train_batch_size', '--num_cores')

  def test_eval_batch_not_divisible_by_cores(self):
    self.assert_rejected(['--eval_batch_size=12', '--num_cores=8',
                          '--tpu=grpc://10.0.0.2:8470'],
                         '--eval_batch_size')

  def test_num_cores_splits_batches_only_on_tpu(self):
    fv = parse('--train_batch_size=100', '--eval_batch_size=12',
               '--num_cores=8')  # CPU: the runners split over replicas.
    self.assertEqual(fv.train_batch_size, 100)

  def test_non_positive_steps(self):
    self.assert_rejected(['--train_steps=0'], 'train_steps')
    self.assert_rejected(['--iterations_per_loop=-1'], 'iterations_per_loop')

  def test_unknown_mode(self):
    self.assert_rejected(['--mode=fit'], 'mode')

  def test_use_tpu_without_tpu(self):
    self.assert_rejected(['--use_tpu'], '--use_tpu', '--tpu')

  def test_piecewise_needs_boundaries(self):
    self.assert_rejected(['--lr_schedule=piecewise'], '--lr_schedule',
                         '--lr_decay_steps')

  def test_batch_slices_need_a_per_core_batch(self):
    self.assert_rejected(['--num_slices=32', '--train_batch_size=128'],
                         '--slice=batch', '--num_slices=32')

  def test_model_and_input_modules_are_not_imported_at_parse_time(self):
    with tempfile.TemporaryDirectory() as directory:
      module = os.path.join(directory, 'user_model.py')
      with open(module, 'w') as f:
        f.write('raise RuntimeError("imported")\n')
      fv = parse(f'--model={module}:model_fn', f'--input={module}:input_fn')
    self.assertEqual(fv.model, f'{module}:model_fn')

  def test_profile_steps(self):
    self.assertEqual(parse('--profile_steps=3,5').profile_steps, ['3', '5'])
    for bad in ('3', '5,3', '3,x', '1,2,3'):
      self.assert_rejected([f'--profile_steps={bad}'], '--profile_steps')
    self.assert_rejected(['--profile_steps=30,40', '--train_steps=30'],
                         '--profile_steps=30,40', '--train_steps=30')

  def test_bad_hidden_units(self):
    self.assert_rejected(['--mlp_hidden_units=128,x'], '--mlp_hidden_units')

  def test_flagfile(self):
    with tempfile.NamedTemporaryFile('w', suffix='.cfg', delete=False) as f:
      f.write('--model=resnet\n--resnet_depth=18\n--train_steps=7\n')
    try:
      fv = parse(f'--flagfile={f.name}', '--train_steps=9')
    finally:
      os.unlink(f.name)
    self.assertEqual(fv.model, 'resnet')
    self.assertEqual(fv.resnet_depth, '18')
    self.assertEqual(fv.train_steps, 9)  # Explicit flags win over the file.


class RegistryTest(absltest.TestCase):
  """--model and --input, resolved by the entry point: errors name the flag."""

  def assert_unresolved(self, resolve, spec, *fragments):
    with self.assertRaises(ValueError) as ctx:
      resolve(spec)
    for fragment in fragments:
      self.assertIn(fragment, str(ctx.exception))

  def test_unknown_model(self):
    self.assert_unresolved(registry.resolve_model_fn, 'transformer', '--model',
                           'transformer', 'mlp')

  def test_model_module_that_does_not_exist(self):
    self.assert_unresolved(registry.resolve_model_fn, 'no_such_pkg.models:fn',
                           '--model', 'no_such_pkg.models')

  def test_model_function_that_does_not_exist(self):
    self.assert_unresolved(registry.resolve_model_fn, 'model_fn.models:nope',
                           '--model', 'nope')

  def test_unknown_input(self):
    self.assert_unresolved(registry.resolve_input_fn, 'csv', '--input', 'csv')


class ConfigFilesTest(absltest.TestCase):

  def test_every_config_parses_into_valid_params(self):
    config_dir = os.path.join(params_lib.REPO_ROOT, 'configs')
    configs = sorted(n for n in os.listdir(config_dir) if n.endswith('.cfg'))
    self.assertIn('resnet18_digits.cfg', configs)
    for name in configs:
      fv = parse(f'--flagfile={os.path.join(config_dir, name)}',
                 '--model_dir=/tmp/x')
      params = params_lib.params_from_flags(fv)
      self.assertEqual(params['model'], 'resnet', name)


class ParamsFromFlagsTest(absltest.TestCase):

  def test_cpu_by_default(self):
    params = params_lib.params_from_flags(parse('--model_dir=/tmp/x'))
    self.assertFalse(params['use_tpu'])
    self.assertEqual(params['data_dir'], params_lib.DEFAULT_DATA_DIR)
    self.assertEqual(params['mlp_hidden_units'], [128])
    self.assertEqual(params['export_dir'], '/tmp/x/export')

  def test_tpu_flag_turns_tpu_on(self):
    params = params_lib.params_from_flags(
        parse('--tpu=grpc://10.0.0.2:8470', '--model_dir=/tmp/x'))
    self.assertTrue(params['use_tpu'])

  def test_use_tpu_false_overrides(self):
    params = params_lib.params_from_flags(
        parse('--tpu=my-tpu', '--use_tpu=false', '--model_dir=/tmp/x'))
    self.assertFalse(params['use_tpu'])

  def test_synthetic_data_selects_synthetic_input(self):
    params = params_lib.params_from_flags(
        parse('--use_synthetic_data', '--model_dir=/tmp/x'))
    self.assertEqual(params['input'], 'synthetic')

  def test_no_reserved_estimator_keys(self):
    params = params_lib.params_from_flags(parse('--model_dir=/tmp/x'))
    self.assertNotIn('batch_size', params)
    self.assertNotIn('context', params)

  def test_missing_model_dir_is_left_to_the_entry_point(self):
    params = params_lib.params_from_flags(parse())
    self.assertIsNone(params['model_dir'])  # Nothing created.
    self.assertIsNone(params['export_dir'])
    config = params_lib.with_model_dir(
        params_lib.config_from_flags(parse()), '/tmp/y')
    self.assertEqual(config.export_dir, '/tmp/y/export')
    self.assertEqual(params_lib.with_model_dir(
        params_lib.config_from_flags(parse('--export_dir=/e')),
        '/tmp/y').export_dir, '/e')

  def test_validate_rejects_warmup_longer_than_training(self):
    params = params_lib.params_from_flags(parse('--model_dir=/tmp/x'))
    params.update(warmup_steps=10, train_steps=10)
    with self.assertRaisesRegex(ValueError, '--warmup_steps'):
      params_lib.validate_params(params)

  def test_piecewise_needs_boundaries(self):
    params = params_lib.params_from_flags(parse('--model_dir=/tmp/x'))
    params.update(lr_schedule='piecewise')
    with self.assertRaisesRegex(ValueError, '--lr_decay_steps'):
      params_lib.validate_params(params)


if __name__ == '__main__':
  absltest.main()
