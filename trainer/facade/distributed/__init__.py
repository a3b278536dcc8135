"""The facade's link to the tf2 runner, for calls under tf.distribute: a
multi-replica or TPU strategy, a TPU, a cluster of workers."""
