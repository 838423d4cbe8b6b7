"""`estimator-dist bench -- python PROGRAM.py`: the user's own program measured under each
strategy, against independent copies of it (the limit)."""
