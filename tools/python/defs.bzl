"""py_pytest: a py_test whose module runs under pytest (pytest_main.py)."""

def py_pytest(name, srcs = None, deps = [], data = [], args = [], **kwargs):
    """A py_test target for the pytest module NAME.py (or srcs[0]).

    Like pytest itself, it picks up the package's conftest.py and __init__.py
    (as deps, when they exist) and the repository's pytest.ini.

    Args:
      name: target name; the module is NAME.py unless srcs is given.
      srcs: the test module first, then helper sources of this test only.
      deps: py_library targets the module imports.
      data: files and binaries the test reads or runs.
      args: extra pytest arguments.
      **kwargs: passed to py_test (size, timeout, tags, ...).
    """
    srcs = srcs or [name + ".py"]
    implicit = [
        ":" + f[:-len(".py")]
        for f in native.glob(["__init__.py", "conftest.py"])
    ]
    native.py_test(
        name = name,
        srcs = srcs + ["//tools/python:pytest_main.py"],
        main = "//tools/python:pytest_main.py",
        args = ["$(rootpath %s)" % srcs[0]] + args,
        deps = deps + [d for d in implicit if d not in deps],
        data = data + ["//:pytest.ini"],
        python_version = "PY3",
        srcs_version = "PY3",
        **kwargs
    )
