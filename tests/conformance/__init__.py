"""The differential conformance matrix: real Estimator (TF 2.15) vs project.

cells.py lists the cells; programs.py builds their model_fn/input_fn pairs;
run.py runs every cell in one process and writes its observables; golden/
holds the real Estimator's (regenerate.py); compare.py judges a lane's
against them; migration_table.py writes MIGRATION.md's table.
"""
