"""Tensor slicing: large ops computed in k static slices to cut memory.

params['num_slices'] (k, 1 = off) and params['slice'] choose what is sliced:
  batch  - the per-core batch, in micro-batches whose gradients are summed
           before one optimizer update (`accumulate_gradients`);
  dense  - a wide hidden layer along its features, fused with the layer that
           consumes it, so the full hidden activation never exists
           (`sliced_dense_pair`);
  logits - the classifier head and softmax cross-entropy per slice of
           classes, so the full logits tensor never exists
           (`sliced_softmax_cross_entropy`).

Everything here is plain TensorFlow on tensors with static shapes: slices are
unrolled in Python, no variables are created, and the same code runs in TF1
graphs (TPUEstimator), inside tf.function and under XLA (jit_compile).
The dense and logits slicings recompute each slice in the backward pass
(tf.custom_gradient) instead of keeping it; each slice depends on the
previous one (`_after`), which orders the slices one after another and keeps
the TF runtime and XLA from merging a recomputation with the forward pass.
"""

import tensorflow as tf

SLICE_MODES = ('batch', 'dense', 'logits')


def num_slices(params, what):
  """k if params slice `what` in k > 1 slices, else 1."""
  if what not in SLICE_MODES:
    raise ValueError(f'unknown slice mode {what!r}; one of {SLICE_MODES}.')
  k = int(params['num_slices'])
  if k < 1:
    raise ValueError(f"params['num_slices'] (--num_slices) must be >= 1, "
                     f'got {k}.')
  return k if k > 1 and params['slice'] == what else 1


def slice_sizes(total, k, what='dimension'):
  """k static sizes summing to `total`, as equal as possible (larger first)."""
  if total is None:
    raise ValueError(f'cannot slice a {what} of unknown (dynamic) size; '
                     'slicing needs static shapes.')
  if not 1 <= k <= total:
    raise ValueError(f'cannot cut a {what} of size {total} into {k} slices '
                     '(--num_slices).')
  base, extra = divmod(int(total), k)
  return [base + 1] * extra + [base] * (k - extra)


def _after(tensor, deps):
  """`tensor`, used only once every tensor in `deps` is computed.

  A control dependency orders the TF runtime. XLA drops control
  dependencies between pure ops, so floating tensors also get a zero-valued
  data dependency (+ 0 * one element of each dep, gradient stopped): XLA
  neither folds float multiplication by zero nor merges the result with an
  earlier identical computation, so slices stay sequential and recomputed.
  """
  with tf.control_dependencies(deps):
    if not deps or not tensor.dtype.is_floating:
      return tf.identity(tensor)
    firsts = [tf.cast(tf.reshape(d, [-1])[0], tf.float32) for d in deps]
    zero = tf.stop_gradient(tf.add_n(firsts)) * 0.0
    return tensor + tf.cast(zero, tensor.dtype)


def sliced_dense_pair(inputs, kernel1, bias1, kernel2, k,
                      input_gradient=True):
  """relu(inputs @ kernel1 + bias1) @ kernel2, in k slices of the hidden units.

  Equals the unsliced expression up to float summation order. Neither the
  forward nor the backward pass holds more than one [batch, hidden / k] slice
  of the hidden activation: the backward pass recomputes each slice.
  Arguments are tensors (read variables outside); returns [batch, out] in the
  dtype of `inputs`. With input_gradient=False (inputs are data, e.g.
  images) the gradient for `inputs` is None and never computed.
  """
  sizes = slice_sizes(kernel1.shape[-1], k, 'hidden layer')

  @tf.custom_gradient
  def pair(x, w1, b1, w2):
    w1s, b1s = tf.split(w1, sizes, axis=1), tf.split(b1, sizes)
    w2s = tf.split(w2, sizes, axis=0)

    def hidden(x, j):
      return tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w1s[j]), b1s[j]))

    outputs, deps = None, []
    for j in range(k):
      part = tf.matmul(hidden(_after(x, deps), j), w2s[j])
      outputs = part if outputs is None else outputs + part
      deps = [outputs]

    def grad(dy):
      dx, dw1, db1, dw2, deps = None, [], [], [], [dy]
      for j in range(k):
        h = hidden(_after(x, deps), j)  # Recomputed, not kept.
        dw2.append(tf.matmul(h, dy, transpose_a=True))
        da = tf.raw_ops.ReluGrad(
            gradients=tf.matmul(dy, w2s[j], transpose_b=True), features=h)
        dw1.append(tf.matmul(x, da, transpose_a=True))
        db1.append(tf.reduce_sum(da, axis=0))
        if input_gradient:
          part = tf.matmul(da, w1s[j], transpose_b=True)
          dx = part if dx is None else dx + part
        deps = [dw1[-1], db1[-1], dw2[-1]]
      return dx, tf.concat(dw1, 1), tf.concat(db1, 0), tf.concat(dw2, 0)

    return outputs, grad

  return pair(inputs, kernel1, bias1, kernel2)


def sliced_softmax_cross_entropy(features, kernel, bias, labels, k,
                                 label_smoothing=0.0):
  """Mean softmax cross-entropy of logits = features @ kernel + bias.

  Computed per slice of k class slices with a running log-sum-exp; logits
  are float32 per slice (as the unsliced classifier casts them), and no more
  than one [batch, classes / k] slice exists at a time, in the forward or the
  backward pass (which recomputes each slice). Equals
  `classifier.cross_entropy` on the full logits up to float rounding.
  `labels` are class indices [batch]; returns a float32 scalar.
  """
  num_classes = kernel.shape[-1]
  sizes = slice_sizes(num_classes, k, 'class dimension')
  starts = [sum(sizes[:j]) for j in range(k)]
  labels = tf.cast(labels, tf.int32)
  on, off = 1.0 - label_smoothing, label_smoothing / num_classes

  def target(j):
    # tf.one_hot is all zeros for labels outside [0, size): other slices.
    onehot = tf.one_hot(labels - starts[j], sizes[j], dtype=tf.float32)
    return onehot * on + off if label_smoothing else onehot

  @tf.custom_gradient
  def loss_fn(h, w, b):
    ws, bs = tf.split(w, sizes, axis=1), tf.split(b, sizes)

    def logits(h, j):
      return tf.cast(tf.nn.bias_add(tf.matmul(h, ws[j]), bs[j]), tf.float32)

    lse, dot, deps = None, None, []
    for j in range(k):
      z = logits(_after(h, deps), j)
      part_lse = tf.reduce_logsumexp(z, axis=1)
      part_dot = tf.reduce_sum(z * target(j), axis=1)
      lse = part_lse if lse is None else tf.reduce_logsumexp(
          tf.stack([lse, part_lse]), axis=0)
      dot = part_dot if dot is None else dot + part_dot
      deps = [lse, dot]
    # Targets q sum to one per example: loss = lse - sum(q * z).
    loss = tf.reduce_mean(lse - dot)

    def grad(dloss):
      scale = dloss / tf.cast(tf.shape(h)[0], tf.float32)
      dh, dw, db, deps = None, [], [], [dloss]
      for j in range(k):
        z = logits(_after(h, deps), j)  # Recomputed, not kept.
        dz = (tf.exp(z - lse[:, None]) - target(j)) * scale
        dz = tf.cast(dz, h.dtype)
        dw.append(tf.matmul(h, dz, transpose_a=True))
        db.append(tf.reduce_sum(dz, axis=0))
        part = tf.matmul(dz, ws[j], transpose_b=True)
        dh = part if dh is None else dh + part
        deps = [dh]
      return dh, tf.concat(dw, 1), tf.concat(db, 0)

    return loss, grad

  return loss_fn(features, kernel, bias)


def micro_batch_scope(index):
  """Name scope of micro-batch `index` (trainer/memory groups by it)."""
  return tf.name_scope(f'micro_batch_{index}')


def accumulate_gradients(optimizer, loss_fn, tensors, k):
  """Loss and summed gradients of `loss_fn` over k micro-batches.

  `tensors` (e.g. [images, labels]) are split along a static axis 0 into k
  micro-batches; `loss_fn(*micro_batch_tensors)` returns that micro-batch's
  mean loss. Each micro-batch's gradients (optimizer.compute_gradients of its
  loss weighted by its share of the batch) are added to the running sum
  before the next micro-batch starts, so only one micro-batch's activations
  are kept at a time. Returns (mean loss over the batch, [(grad, var)]) equal
  to the unsliced loss and gradients, ready for optimizer.apply_gradients.
  Variables are reused across micro-batches (AUTO_REUSE).
  """
  batch = tensors[0].shape[0]
  sizes = slice_sizes(batch, k, 'per-core batch')
  pieces = [tf.split(t, sizes, axis=0) for t in tensors]
  total_loss, sums, order, deps = None, {}, [], []
  scope = tf.compat.v1.get_variable_scope()
  for i in range(k):
    with micro_batch_scope(i), tf.compat.v1.variable_scope(
        scope, reuse=tf.compat.v1.AUTO_REUSE):
      inputs = [_after(p[i], deps) for p in pieces]
      loss = loss_fn(*inputs) * (sizes[i] / batch)
      grads_and_vars = optimizer.compute_gradients(loss)
    for grad, var in grads_and_vars:
      if grad is None:
        continue
      grad = tf.convert_to_tensor(grad)
      key = var.ref()
      if key not in sums:
        order.append(var)
        sums[key] = grad
      else:
        sums[key] = sums[key] + grad
    total_loss = loss if total_loss is None else total_loss + loss
    deps = list(sums.values()) + [total_loss]
  if not sums:
    raise ValueError('micro-batch loss has no gradient with respect to any '
                     'trainable variable.')
  return total_loss, [(sums[v.ref()], v) for v in order]
