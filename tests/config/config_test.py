"""trainer/config.py: one typed, frozen config; its defaults are the flags'."""

import dataclasses

from absl import flags
import pytest

import flags as trainer_flags
from trainer import config as config_lib
from trainer import params as params_lib


def _parsed(*argv):
  flag_values = flags.FlagValues()
  trainer_flags.define_flags(flag_values)
  flag_values(['prog'] + list(argv))
  return flag_values


def test_flags_without_arguments_give_the_config_defaults():
  config = params_lib.config_from_flags(_parsed())
  expected = config_lib.DEFAULTS.replace(runner=params_lib.default_runner())
  assert config == expected


def test_every_setting_but_the_facade_only_one_is_a_flag():
  flag_values = _parsed()
  missing = [k for k in config_lib.KEYS if k not in flag_values]
  assert missing == ['save_checkpoints_secs']


def test_flag_values_reach_the_config_typed():
  config = params_lib.config_from_flags(_parsed(
      '--mlp_hidden_units=64,32', '--resnet_depth=18', '--train_steps=7',
      '--model_dir=/tmp/x', '--use_synthetic_data'))
  assert config.mlp_hidden_units == (64, 32)
  assert config.resnet_depth == 18
  assert config.train_steps == 7
  assert config.input == 'synthetic'
  assert config.export_dir == '/tmp/x/export'
  params = config.as_params()
  assert params['mlp_hidden_units'] == [64, 32]
  assert set(params) == set(config_lib.KEYS)


def test_config_is_frozen():
  config = config_lib.Config()
  with pytest.raises(dataclasses.FrozenInstanceError):
    config.train_steps = 5  # pytype: disable=annotation-type-mismatch
  assert isinstance(config.replace(mlp_hidden_units=[3]).mlp_hidden_units,
                    tuple)


def test_an_unknown_setting_is_a_type_error_naming_it():
  with pytest.raises(TypeError, match='train_stepz'):
    config_lib.Config().replace(train_stepz=3)
  with pytest.raises(TypeError, match='batch_size'):
    config_lib.from_params(dict(config_lib.Config().as_params(),
                                batch_size=4))


def test_settings_are_grouped_by_concern():
  config = config_lib.Config(train_steps=7, tpu='t', model_dir='/m',
                             mlp_hidden_units=[3], optimizer='sgd')
  assert config.schedule.train_steps == config.train_steps == 7
  assert config.cluster.tpu == 't'
  assert config.checkpoints.model_dir == '/m'
  assert config.architecture.mlp_hidden_units == (3,)
  assert config.optimization.optimizer == 'sgd'
  assert config.replace(train_steps=8).schedule.train_steps == 8
  names = [f.name for _, group in config_lib.GROUPS
           for f in dataclasses.fields(group)]
  assert sorted(names) == sorted(config_lib.KEYS)
  assert len(names) == len(set(names))  # Each setting in one group.
  assert config_lib.Config(**config.settings()) == config


def test_params_round_trip():
  config = config_lib.Config(train_steps=11, lr_decay_steps=(3, 6))
  assert config_lib.from_params(config.as_params()) == config


def test_validation_reads_a_config_and_names_the_flag():
  bad = config_lib.Config(warmup_steps=10, train_steps=10)
  with pytest.raises(ValueError, match='--warmup_steps'):
    params_lib.validate_params(bad)
  assert params_lib.validate_params(config_lib.Config()) == config_lib.Config()


def test_each_flag_values_has_its_own_resolution():
  first, second = flags.FlagValues(), flags.FlagValues()
  params_lib.resolution(first).yielded['mode'] = 'train'
  assert params_lib.resolution(second).yielded == {}
  assert params_lib.resolution(first).yielded == {'mode': 'train'}


def test_runner_flag_is_checked_against_the_one_registry():
  from trainer.runners import registry as runners  # pylint: disable=g-import-not-at-top
  assert runners.names() == ('estimator', 'tf2', 'native')
  flag_values = flags.FlagValues()
  trainer_flags.define_flags(flag_values)
  runners.add_flag_validator(flag_values)
  flag_values(['prog', '--runner=tf2'])
  assert flag_values.runner == 'tf2'
  flag_values.unparse_flags()
  with pytest.raises(flags.IllegalFlagValueError,
                     match='--runner must be one of estimator, tf2, native'):
    flag_values(['prog', '--runner=bogus'])
  with pytest.raises(ValueError, match='--runner=bogus: no such runner'):
    runners.get('bogus')
