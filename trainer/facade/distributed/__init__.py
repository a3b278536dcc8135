"""The facade's calls under tf.distribute (a multi-replica or TPU strategy,
a TPU, a cluster of workers) mapped onto the tf2 engine
(trainer/engines/tf2)."""
