"""The shared runtime below every runner: the outer loop per --mode and the
runner interface (modes), the loop policy (loop, driver, progress),
strategies, TF_CONFIG and TPU clusters, checkpoints, profiling,
start-up, eval summaries and the run guard. It reads the typed
trainer.config.Config it is given and imports no input_fn/: what an input
needs (its checks, evaluation steps, serving signature) the front end
passes down (trainer/models/inputs.py)."""
