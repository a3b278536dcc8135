"""tpu_trainer: the installed form of this repository (see docs/install.md).

The repository's top-level packages live beneath this one:
tpu_trainer.flags, tpu_trainer.trainer, tpu_trainer.model_fn,
tpu_trainer.input_fn, with the embedded digits in tpu_trainer/data and the
flagfiles in tpu_trainer/configs. Their imports of each other name
tpu_trainer.* (rewritten when the wheel is built), so a program's own
`flags` or `trainer` modules are never shadowed, nor do they shadow these.
Entry points: the console scripts in tpu_trainer.cli, or
`python -m tpu_trainer.trainer.main` (and `python -m tpu_trainer`).
"""
