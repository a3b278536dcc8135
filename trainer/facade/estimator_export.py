"""tensorflow_estimator's estimator_export decorator, for libraries that
declare their own Estimator API names with it.

@estimator_export('estimator.Foo', v1=[...]) records the names on the
decorated object as the reference's decorator does (_estimator_api_names,
_estimator_api_names_v1: the v2 names when v1 is not given) and returns it.
The reference also wraps the object in TF's deprecation warning and adds the
names to TF's generated API; the facade's API modules are its own
(install.py), so nothing is generated from these names.
"""


class estimator_export:  # pylint: disable=invalid-name
  """Declares Estimator API names of a function, class or constant."""

  def __init__(self, *args, v1=None):
    self._names = args
    self._names_v1 = v1 if v1 is not None else args

  def __call__(self, func):
    func._estimator_api_names = self._names  # pylint: disable=protected-access
    func._estimator_api_names_v1 = self._names_v1  # pylint: disable=protected-access
    return func

  def export_constant(self, module_name, name):
    """Declares module `module_name`'s constant `name` (recorded nowhere)."""
    del module_name, name
