"""`estimator-dist verify`: `verify` runs a program alone and distributed
(`verify_runs`, the program's Estimator calls read by `program_capture`) and compares
their weights.
"""
