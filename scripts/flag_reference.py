"""Prints the trainer's flag reference as a Markdown table (for docs/flags.md).

  python -m scripts.flag_reference            # print the table
  python -m scripts.flag_reference --update   # rewrite it inside docs/flags.md
"""

import os
import sys

from absl import flags

import flags as trainer_flags

README = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'docs', 'flags.md')
BEGIN = '<!-- flag-reference:begin (python -m scripts.flag_reference --update) -->'
END = '<!-- flag-reference:end -->'


def _default(value):
  if value is None or value == '' or value == []:
    return '(unset)'
  if isinstance(value, bool):
    return f'`{str(value).lower()}`'
  if isinstance(value, list):
    return f"`{','.join(str(v) for v in value)}`"
  return f'`{value}`'


def table():
  """Markdown rows for every trainer flag, in definition order."""
  fv = flags.FlagValues()
  trainer_flags.define_flags(fv)
  rows = ['| flag | default | meaning |', '|---|---|---|']
  for flag in fv.flags_by_module_dict()[trainer_flags.__name__]:
    help_text = ' '.join(flag.help.split()).replace('|', '\\|')
    rows.append(f'| `--{flag.name}` | {_default(flag.default)} | '
                f'{help_text} |')
  return '\n'.join(rows)


def updated_readme(text):
  """README text with the table between the markers replaced."""
  if BEGIN not in text or END not in text:
    raise ValueError(f'{README} has no flag reference markers.')
  head, rest = text.split(BEGIN, 1)
  _, tail = rest.split(END, 1)
  return f'{head}{BEGIN}\n{table()}\n{END}{tail}'


def main():
  if '--update' in sys.argv[1:]:
    with open(README) as f:
      text = f.read()
    with open(README, 'w') as f:
      f.write(updated_readme(text))
  else:
    print(table())


if __name__ == '__main__':
  main()
