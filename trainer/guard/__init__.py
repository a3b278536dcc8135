"""What guards a run: model_dir lock, configuration check, checkpoint
recovery, preemption and non-finite checks."""
