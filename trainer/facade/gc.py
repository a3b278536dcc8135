"""Export garbage collection, as Estimator's exporters do it.

A `Path` is a directory entry and its export version (None when the parser
does not recognise it). Filters take a list of Paths and return the sorted
list of those they keep; the exporters keep the largest N versions and
delete the rest. The names are those of Estimator's private `gc` module,
which programs and its tests import.
"""

import collections
import math
import os

import tensorflow as tf

from trainer.compat import facade_private

Path = collections.namedtuple('Path', 'path export_version')


def _versioned(paths):
  return [p for p in paths if p.export_version is not None]


def _largest_export_versions(n):
  """A filter keeping the n paths with the largest export versions."""

  def keep(paths):
    ranked = sorted(enumerate(_versioned(paths)),
                    key=lambda item: (item[1].export_version, item[0]))
    if n <= 0:
      return []
    return sorted(p for _, p in ranked[max(len(ranked) - n, 0):])

  return keep


def _one_of_every_n_export_versions(n):
  """A filter keeping, of each interval [0, n], (n, 2n], ..., the path of
  the largest version in it."""

  def keep(paths):
    best = {}
    for p in _versioned(paths):
      interval = (math.floor((p.export_version - 1) / n)
                  if p.export_version else 0)
      if interval not in best or (
          best[interval].export_version < p.export_version):
        best[interval] = p
    return sorted(best.values())

  return keep


def _mod_export_version(n):
  """A filter keeping the paths whose version is a multiple of n."""

  def keep(paths):
    return sorted(p for p in paths if p.export_version % n == 0)

  return keep


def _union(lf, rf):
  """A filter keeping what either filter keeps."""

  def keep(paths):
    return sorted(set(lf(paths)) | set(rf(paths)))

  return keep


def _negation(f):
  """A filter keeping what `f` does not."""

  def keep(paths):
    return sorted(set(paths) - set(f(paths)))

  return keep


def _get_paths(base_dir, parser):
  """The sorted Paths of base_dir's entries that `parser` (a Path with
  export_version None -> a Path, or None to skip it) accepts."""
  paths = []
  for name in facade_private.list_directory(base_dir):
    name = tf.compat.as_str_any(name).rstrip('/')
    path = parser(Path(os.path.join(tf.compat.as_str_any(base_dir), name),
                       None))
    if path:
      paths.append(path)
  return sorted(paths)


def export_version(path):
  """The Path with the version of a timestamped export directory (ten
  digits), or None for any other entry."""
  name = os.path.basename(path.path)
  if len(name) == 10 and name.isdigit():
    return path._replace(export_version=int(name))
  return None


def keep_newest_exports(export_dir_base, keep):
  """Deletes all but the `keep` newest timestamped exports of
  export_dir_base (None: deletes none), as Estimator's exporters do."""
  if not keep:
    return
  stale = _negation(_largest_export_versions(keep))
  for path in stale(_get_paths(export_dir_base, export_version)):
    try:
      tf.io.gfile.rmtree(path.path)
    except tf.errors.NotFoundError as e:
      tf.compat.v1.logging.warn('Can not delete %s recursively: %s',
                                path.path, e)
