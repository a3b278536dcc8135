"""Main of every py_test (tools/python/defs.bzl): runs one test module in pytest.

Bazel runs a py_test's main file as a script, which would run no test at all
in a pytest-style module; this runs the module given as the first argument
under pytest instead, with the repository's pytest.ini, and writes JUnit XML
where Bazel asks for it so per-test results show up in the test logs.
pytest exits non-zero when a test fails or when the module has no test.
"""

import os
import sys

import pytest


def main(argv):
  if len(argv) < 2:
    raise SystemExit(f'usage: {argv[0]} TEST_MODULE.py [PYTEST_ARGS...]')
  args = ['-q', '-rs'] + argv[1:]
  xml_output = os.environ.get('XML_OUTPUT_FILE')
  if xml_output:
    args.append(f'--junitxml={xml_output}')
  return pytest.main(args)


if __name__ == '__main__':
  sys.exit(main(sys.argv))
