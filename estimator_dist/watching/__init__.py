"""Watching a job's progress: the launcher's live lines (`live_progress`, drawn by
`terminal_bar`), `estimator-dist progress` on a job's mailbox (`progress_watch`), and the
curves read from the model_dir's event files (`curves`).
"""
