"""Sends the training input pipeline to a tf.data service cluster.

params['tf_data_service'] (--tf_data_service=grpc://HOST:PORT) names the
dispatcher. What it means for the hosts (input pipelines) of a run:

* Training only. Evaluation and prediction read locally: they need every
  example once, in order, which a shared stream cannot promise.
* One shared job per run: every input pipeline of the run registers the
  same dataset under one job name (derived from model_dir and the input
  params), so they read from one stream and each batch goes to exactly one
  of them, whichever asks first. Hosts do not shard files by
  params['context'] then: the service balances the work.
* Processing mode OFF: every worker runs the whole pipeline (all files,
  its own in-memory table when the split is cached) with its own random
  seed, drawn on the worker; batches are independent random draws of the
  split, as with shuffle + repeat, and the workers' streams never repeat
  each other. A run is not reproducible for a --seed (which worker answers
  first is not).
"""

import hashlib
import re
import socket

import tensorflow as tf

# Input params that change what the dataset yields: part of the job name.
_DATASET_KEYS = ('data_dir', 'batch_size', 'image_size', 'image_channels',
                 'augmentation', 'precision', 'cache', 'shuffle_buffer',
                 'skip_corrupt_records')
_ADDRESS = re.compile(r'^grpc://[^/:]+:\d+$')


def check_address(address):
  """ValueError naming --tf_data_service unless `address` is grpc://HOST:PORT."""
  if not _ADDRESS.match(address or ''):
    raise ValueError(f'--tf_data_service={address!r}: expected '
                     'grpc://HOST:PORT of a tf.data service dispatcher.')
  return address


def check_reachable(address, timeout=10.0):
  """ValueError naming --tf_data_service unless a TCP connection to the
  dispatcher at `address` opens within `timeout` seconds (the tf.data
  service client would otherwise retry, and training wait, forever)."""
  host, port = check_address(address)[len('grpc://'):].rsplit(':', 1)
  try:
    with socket.create_connection((host, int(port)), timeout=timeout):
      pass
  except OSError as e:
    raise ValueError(f'--tf_data_service={address}: no dispatcher answers '
                     f'there ({e}); start one with python -m '
                     'scripts.tf_data_service --role=dispatcher.') from e
  return address


def job_name(params):
  """The job every input pipeline of this run shares: one per model_dir and
  dataset definition, so a restarted run rejoins its own job."""
  key = repr([params['model_dir']] +
             [(k, params[k]) for k in _DATASET_KEYS])
  return 'tpu-trainer-' + hashlib.sha256(key.encode()).hexdigest()[:16]


def distribute(dataset, params):
  """`dataset`, produced by the tf.data service named in
  params['tf_data_service'], as described in the module docstring."""
  address = check_address(params['tf_data_service'])
  return dataset.apply(tf.data.experimental.service.distribute(
      processing_mode=tf.data.experimental.service.ShardingPolicy.OFF,
      service=address, job_name=job_name(params)))
