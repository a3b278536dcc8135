"""The shared runtime below every runner: the outer loop per --mode and the
runner interface (modes), the loop policy (loop, driver, progress),
strategies, TF_CONFIG and TPU clusters, checkpoints, serving, profiling,
start-up, eval summaries and the run guard."""
