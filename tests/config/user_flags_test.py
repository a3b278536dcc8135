"""Model modules that define absl flags (trainer/user_flags.py): imported
before parsing, same-named flags of one value type shared, clashes named."""

import textwrap

from absl import flags
import pytest

import flags as trainer_flags
from tests import testutil
from trainer import params as params_lib
from trainer import user_flags

# The way tensorflow/tpu's mnist_tpu.py starts: flags at import, several
# with the trainer's names, and a model_fn and input_fn reading FLAGS.
FLAG_MODULE = textwrap.dedent('''
    from absl import flags
    import tensorflow.compat.v1 as tf
    from tensorflow.compat.v1 import estimator as tf_estimator

    flags.DEFINE_string("tpu", default=None, help="The Cloud TPU to use.")
    flags.DEFINE_bool("use_tpu", True, "Use TPUs rather than plain CPUs")
    flags.DEFINE_float("learning_rate", 0.05, "Learning rate.")
    flags.DEFINE_integer("train_steps", 1000, "Total number of steps.")
    flags.DEFINE_string("data_dir", "", "Path to the data.")
    flags.DEFINE_float("hidden_scale", 1.0, "This module's own flag.")
    FLAGS = flags.FLAGS

    def model_fn(features, labels, mode, params):
      assert FLAGS.hidden_scale == 0.5, FLAGS.hidden_scale
      x = tf.reshape(features["image"], [-1, 784]) * FLAGS.hidden_scale
      logits = tf.layers.dense(x, 10)
      loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
      optimizer = tf.train.GradientDescentOptimizer(FLAGS.learning_rate)
      if FLAGS.use_tpu:
        optimizer = tf.tpu.CrossShardOptimizer(optimizer)
      return tf_estimator.tpu.TPUEstimatorSpec(
          mode, loss=loss,
          train_op=optimizer.minimize(loss, tf.train.get_global_step()))
''')


def _module_flags(define):
  """A FlagValues holding a module's flags (as if it were imported)."""
  flag_values = flags.FlagValues()
  define(flag_values)
  return flag_values


def test_same_type_is_shared_and_keeps_the_modules_definition():
  def module(fv):
    flags.DEFINE_integer('train_steps', 1000, 'theirs', flag_values=fv)
    flags.DEFINE_string('mode', 'train', 'theirs', flag_values=fv)
  fv = _module_flags(module)
  shared = user_flags.define_shared(trainer_flags.define_flags, fv)
  assert set(shared) == {'train_steps', 'mode'}
  assert fv['train_steps'].default == 1000  # The module's default stands.
  fv(['prog', '--train_steps=7', '--mode=evaluate'])
  assert fv.train_steps == 7 and fv.mode == 'evaluate'


def test_the_trainer_still_checks_what_it_uses():
  def module(fv):
    flags.DEFINE_string('mode', 'train_and_eval', 'theirs', flag_values=fv)
    flags.DEFINE_string('optimizer', 'rmsprop', 'theirs', flag_values=fv)
    flags.DEFINE_integer('train_steps', 10, 'theirs', flag_values=fv)
  fv = _module_flags(module)
  user_flags.define_shared(trainer_flags.define_flags, fv)
  with pytest.raises(flags.IllegalFlagValueError, match='--mode=.*shared'):
    # efficientnet's mode, not one of the trainer's, set on the command line.
    fv(['prog', '--mode=train_and_eval'])
  fv = _module_flags(module)
  user_flags.define_shared(trainer_flags.define_flags, fv)
  fv(['prog', '--mode=train'])  # --optimizer is the built-in models' only.
  assert fv.optimizer == 'rmsprop'
  fv = _module_flags(module)
  user_flags.define_shared(trainer_flags.define_flags, fv)
  with pytest.raises(flags.IllegalFlagValueError, match='train_steps'):
    fv(['prog', '--mode=train', '--train_steps=0'])  # Trainer's bound.


def test_unset_module_defaults_the_trainer_cannot_use_leave_its_own():
  def module(fv):  # As resnet_main.py and common_hparams_flags define them.
    flags.DEFINE_string('mode', 'train_and_eval', 'theirs', flag_values=fv)
    flags.DEFINE_integer('train_batch_size', None, 'theirs', flag_values=fv)
    flags.DEFINE_integer('train_steps', None, 'theirs', flag_values=fv)
  fv = _module_flags(module)
  user_flags.define_shared(trainer_flags.define_flags, fv)
  fv(['prog', '--train_steps=40'])
  params = params_lib.params_from_flags(fv)
  assert fv.mode == 'train_and_eval'  # What the module reads is untouched.
  assert params['mode'] == 'train_and_evaluate'  # The trainer's defaults.
  assert params['train_batch_size'] == 128
  assert params['train_steps'] == 40  # Set: the one value both read.


def _simclr_mode(fv):
  """SimCLR's run.py: --mode, an enum of other values than the trainer's."""
  flags.DEFINE_enum('mode', 'train', ['train', 'eval', 'train_then_eval'],
                    'theirs', flag_values=fv)


@pytest.mark.parametrize('argv, module_view, trainer_view', [
    ([], 'train', 'train'),  # Unset: the module's default, the trainer's too.
    (['--mode=train'], 'train', 'train'),
    (['--mode=train_and_evaluate'], 'train', 'train_and_evaluate'),
    (['--mode=evaluate'], 'train', 'evaluate'),
])
def test_enums_of_other_values_are_read_apart(argv, module_view,
                                              trainer_view):
  fv = _module_flags(_simclr_mode)
  shared = user_flags.define_shared(trainer_flags.define_flags, fv)
  assert 'mode' in shared and 'mode' in user_flags.SPLIT
  fv(['prog'] + argv)
  assert fv.mode == module_view  # Always one of the module's own values.
  assert params_lib.params_from_flags(fv)['mode'] == trainer_view


def test_a_value_only_the_module_accepts_names_both_definitions():
  fv = _module_flags(_simclr_mode)
  user_flags.define_shared(trainer_flags.define_flags, fv)
  with pytest.raises(flags.IllegalFlagValueError) as raised:
    fv(['prog', '--mode=train_then_eval'])
  message = str(raised.value)
  assert "'train_then_eval' is only" in message
  assert 'defines --mode as enum <train|eval|train_then_eval>' in message
  assert ('the trainer as enum <train|evaluate|train_and_evaluate|predict|'
          'export>') in message
  fv = _module_flags(_simclr_mode)
  user_flags.define_shared(trainer_flags.define_flags, fv)
  with pytest.raises(flags.IllegalFlagValueError, match='neither'):
    fv(['prog', '--mode=bogus'])


def test_a_module_default_the_trainer_refuses_leaves_the_trainers():
  def module(fv):
    flags.DEFINE_enum('mode', 'train_then_eval', ['train', 'train_then_eval'],
                      'theirs', flag_values=fv)
  fv = _module_flags(module)
  user_flags.define_shared(trainer_flags.define_flags, fv)
  fv(['prog'])
  assert fv.mode == 'train_then_eval'
  assert params_lib.params_from_flags(fv)['mode'] == 'train_and_evaluate'


def test_an_enum_accepting_the_trainers_values_stays_one_flag():
  def module(fv):  # A superset of the trainer's modes: nothing to split.
    flags.DEFINE_enum('mode', 'train', trainer_flags.MODES + ('tune',),
                      'theirs', flag_values=fv)
  fv = _module_flags(module)
  user_flags.define_shared(trainer_flags.define_flags, fv)
  assert 'mode' not in user_flags.SPLIT
  fv(['prog', '--mode=evaluate'])
  assert fv.mode == 'evaluate'
  assert params_lib.params_from_flags(fv)['mode'] == 'evaluate'


def test_builtin_only_flag_of_another_type_is_the_modules():
  def module(fv):  # resnet_main.py: --resnet_depth is an int there.
    flags.DEFINE_integer('resnet_depth', None, 'theirs', flag_values=fv)
  fv = _module_flags(module)
  user_flags.define_shared(trainer_flags.define_flags, fv)
  fv(['prog', '--resnet_depth=152'])
  assert fv.resnet_depth == 152  # Not one of the built-in ResNet's depths.
  assert params_lib.params_from_flags(fv)['resnet_depth'] == 50


def test_another_value_type_is_an_error_naming_both():
  def module(fv):
    flags.DEFINE_string('train_steps', '1000', 'theirs', flag_values=fv)
  fv = _module_flags(module)
  with pytest.raises(user_flags.FlagClashError,
                     match=r'--train_steps: .* as string .* trainer defines '
                     r'it as int'):
    user_flags.define_shared(trainer_flags.define_flags, fv)


def test_module_specs_are_read_from_argv_and_flagfiles(tmp_path):
  flagfile = tmp_path / 'run.cfg'
  flagfile.write_text('--input=team.data:input_fn\n')
  argv = ['prog', '--model=/src/m.py:model_fn', f'--flagfile={flagfile}',
          '--train_steps=5', '--unknown_module_flag=1']
  assert user_flags.module_specs(argv) == [
      ('model', '/src/m.py:model_fn'), ('input', 'team.data:input_fn')]


@pytest.mark.parametrize('runner', [
    pytest.param('estimator', marks=testutil.requires_estimator), 'tf2'])
def test_main_runs_a_module_that_defines_flags(tmp_path, runner):
  module = tmp_path / 'mnist_like.py'
  module.write_text(FLAG_MODULE)
  result = testutil.run_main([
      f'--model={module}:model_fn', '--input=tfrecord', f'--runner={runner}',
      '--mode=train', '--train_steps=5', '--iterations_per_loop=5',
      '--use_tpu=false', '--hidden_scale=0.5', '--learning_rate=0.1',
      f'--model_dir={tmp_path / "model"}'])
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'global_step: 5' in result.stdout
  assert '--learning_rate (mnist_like)' in result.stderr  # Logged as shared.


# As SimCLR's run.py: --mode train|eval|train_then_eval, read by its code.
SPLIT_MODULE = textwrap.dedent('''
    from absl import flags
    import tensorflow.compat.v1 as tf
    from tensorflow.compat.v1 import estimator as tf_estimator

    flags.DEFINE_enum("mode", "train", ["train", "eval", "train_then_eval"],
                      "Whether to perform training or evaluation.")
    FLAGS = flags.FLAGS

    def model_fn(features, labels, mode, params):
      assert FLAGS.mode == "train", FLAGS.mode
      logits = tf.layers.dense(tf.reshape(features["image"], [-1, 784]), 10)
      loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
      train_op = None
      if mode == tf_estimator.ModeKeys.TRAIN:
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(
            loss, tf.train.get_global_step())
      return tf_estimator.tpu.TPUEstimatorSpec(mode, loss=loss,
                                               train_op=train_op)
''')


@pytest.mark.parametrize('runner', [
    pytest.param('estimator', marks=testutil.requires_estimator), 'tf2'])
def test_main_runs_the_trainers_mode_beside_a_modules_own(tmp_path, runner):
  module = tmp_path / 'simclr_like.py'
  module.write_text(SPLIT_MODULE)
  args = [f'--model={module}:model_fn', '--input=tfrecord',
          f'--runner={runner}', '--train_steps=4', '--steps_per_eval=4',
          '--iterations_per_loop=4', '--eval_steps=2',
          f'--model_dir={tmp_path / "model"}']
  result = testutil.run_main(args + ['--mode=train_and_evaluate'])
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'global_step: 4' in result.stdout
  assert 'loss: ' in result.stdout  # Evaluated, as the trainer's mode says.
  assert "--mode is read apart: the trainer takes 'train_and_evaluate'" in (
      result.stderr)
  result = testutil.run_main(args + ['--mode=eval'])
  assert result.returncode != 0
  assert "--mode=eval: 'eval' is only simclr_like's value" in result.stderr


def test_main_names_both_definitions_of_a_clash(tmp_path):
  module = tmp_path / 'clash.py'
  module.write_text('from absl import flags\n'
                    'flags.DEFINE_string("train_steps", "10", "theirs")\n'
                    'def model_fn(features, labels, mode, params):\n'
                    '  raise AssertionError("never called")\n')
  result = testutil.run_main([f'--model={module}:model_fn'])
  assert result.returncode != 0
  assert 'clash defines --train_steps as string' in result.stderr
