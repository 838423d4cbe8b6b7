"""What a job leaves behind in its model_dir, written by its tasks and read by the launcher,
the sweep and `estimator-dist verify`, in the layer above the contract and below `task/`.

`checkpoints` vouches for the checkpoints a job resumes from, `best_checkpoints` reads
the records of the best ones in model_dir/best, `event_files` reads the evaluations from
the event files without TensorFlow, `tracking` records a job's MLflow run from its
model_dir, `model_dir_check` finds a model_dir writable, with space, and
`model_dir_lock` keeps a model_dir to one job. Imports nothing above the contract
(tests/imports_test.py); only `checkpoints` imports TensorFlow when it is imported.
"""
