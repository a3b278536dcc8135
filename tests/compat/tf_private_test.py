"""trainer/compat/tf_private.py (private TF APIs) on every lane."""

import subprocess
import sys

import tensorflow as tf

from tests import testutil
from trainer.compat import tf_private

# Two replicas each add loss = w to a v1 SGD step with learning rate 1: the
# summed gradient is 2 without the Estimator's loss scaling and 1 with it.
LOSS_SCALING = '''
import sys
import tensorflow as tf
from trainer.compat import tf_private
from trainer.runtime import strategy as strategy_lib
strategy_lib.split_cpu(2)
strategy = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])
for scaled in (False, True):
  with strategy.scope():
    w = tf.Variable(0.0)
  def replica_step():
    opt = tf.compat.v1.train.GradientDescentOptimizer(1.0)
    opt.minimize(lambda: w * 1.0, var_list=[w])
  step = tf.function(lambda: strategy.run(replica_step))
  if scaled:
    with tf_private.estimator_loss_scaling(strategy):
      step()
  else:
    step()
  print(f'scaled={scaled} w={float(w.numpy())}')
'''


def test_estimator_loss_scaling_averages_replica_gradients():
  result = subprocess.run([sys.executable, '-c', LOSS_SCALING],
                          cwd=testutil.REPO_ROOT, capture_output=True,
                          text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'scaled=False w=-2.0' in result.stdout
  assert 'scaled=True w=-1.0' in result.stdout


def test_variable_store_decorator_reuses_get_variable():
  decorator = tf_private.track_tf1_style_variables()

  class Linear(tf.Module):

    @decorator
    def __call__(self, x):
      with tf.compat.v1.variable_scope('linear'):
        w = tf.compat.v1.get_variable('w', [2, 1])
      return tf.matmul(x, w)

  layer = Linear()
  x = tf.ones([1, 2])
  first, second = layer(x), tf.function(layer)(x)
  assert [v.name for v in layer.variables] == ['linear/w:0']
  assert float(first[0, 0]) == float(second[0, 0])


def test_summary_writer_init_ops_of_a_graph_writer(tmp_path):
  with tf.Graph().as_default():
    assert not tf_private.summary_writer_init_ops()
    tf.summary.create_file_writer(str(tmp_path))
    ops = tf_private.summary_writer_init_ops()
  assert len(ops) == 1 and ops[0].type == 'CreateSummaryFileWriter'


def test_fed_session_callable_runs_ops_and_returns_tensors():
  graph = tf.Graph()
  with graph.as_default():
    x = tf.compat.v1.placeholder(tf.float32, [None])
    total = tf.compat.v1.get_variable('total', [],
                                      initializer=tf.zeros_initializer())
    add = total.assign_add(tf.reduce_sum(x))
    doubled = 2.0 * x
    init = tf.compat.v1.global_variables_initializer()
  with tf.compat.v1.Session(graph=graph) as session:
    session.run(init)
    run = tf_private.fed_session_callable(session, [x], [add.op, doubled])
    first = run([1.0, 2.0])
    run([3.0])
    assert len(first) == 1 and list(first[0]) == [2.0, 4.0]
    assert session.run(total) == 6.0


def test_text_saved_model_loads_back_whatever_bytes_it_holds(tmp_path):
  # A 32-character variable name makes the variables collection's bytes hold
  # 0x22 ('"', a 34-byte field length), which str(proto) under protobuf's
  # upb backend does not escape.
  v1 = tf.compat.v1
  export_dir = str(tmp_path / 'sm')
  with tf.Graph().as_default(), v1.Session() as session:
    v1.get_variable('v' * 32, [2], initializer=v1.constant_initializer(3.))
    session.run(v1.global_variables_initializer())
    builder = v1.saved_model.Builder(export_dir)
    builder.add_meta_graph_and_variables(session, ['serve'])
    path = tf_private.save_builder(builder, as_text=True)
  assert tf.compat.as_text(path).endswith('saved_model.pbtxt')
  with tf.Graph().as_default(), v1.Session() as session:
    v1.saved_model.loader.load(session, ['serve'], export_dir)
    restored, = v1.global_variables()
    assert session.run(restored).tolist() == [3., 3.]


def test_create_variables_traces_once_and_initialises():
  traces = []
  holder = []

  def step(x):
    traces.append(x)
    if not holder:
      holder.append(tf.Variable(tf.fill([2], 3.0), name='v'))
    return holder[0].assign_add(x)

  function = tf_private.create_variables(step, tf.constant([1.0, 1.0]))
  assert len(traces) == 1, 'get_concrete_function traces twice'
  assert hasattr(function, '_initialize'), 'TF renamed it: one trace more'
  # Made and initialised; the traced update did not run.
  assert holder[0].numpy().tolist() == [3.0, 3.0]


def test_read_scalar_reads_a_mirrored_variable_as_numpy_does():
  one_cpu = tf.distribute.MirroredStrategy(['/cpu:0'])  # In process.
  with one_cpu.scope():
    step = tf.Variable(0, dtype=tf.int64,
                       aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
  one_cpu.run(lambda: step.assign_add(3))
  plain = tf.Variable(5, dtype=tf.int64)
  assert type(step).__name__ == 'MirroredVariable'
  assert tf_private.read_scalar(step) == step.numpy() == 3
  assert tf_private.read_scalar(plain) == 5
