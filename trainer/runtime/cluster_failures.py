"""Known failures of a TF_CONFIG job, each as one line naming the task,
the address or what in TF_CONFIG is wrong, and the fix (entries of
trainer/runtime/failures.py's registry): TF_CONFIG that is not JSON, a task
its cluster does not have, a cluster without its one chief (Estimator's
RunConfig refuses these), and a task's server that cannot start (its port
taken by another process).
"""

import re

from trainer.guard import failure_parts as parts
from trainer.runtime import tf_config

_REFUSED_CONFIG = re.compile(
    r'TF_CONFIG is not valid JSON|is not a valid task_id|is not a valid '
    r'task_type|must have one "chief" node|Expecting .* line \d+ column')


def _tf_config(error, where):
  """RunConfig's (or the trainer's) refusal of TF_CONFIG: what
  tf_config.problem() says of it."""
  del where
  if not any(_REFUSED_CONFIG.search(parts.message(link)) or
             parts.is_named(link, 'JSONDecodeError')
             for link in parts.chain(error)):
    return None
  return tf_config.problem(needs_chief=True)


def _server_start(error, where):
  del where
  if not re.search(r'Could not start gRPC server', parts.message(error)):
    return None
  found = tf_config.task_address()
  return tf_config.server_start_problem(*found) if found else None


ENTRIES = (
    ('tf-config', _tf_config),
    ('server-start', _server_start),
)
