"""Celery workers and the Spark side of Antidote.

`celery -A workers ...` finds the app here. Only workers.celery imports Django (for its settings);
workers.engine, workers.lake and workers.jobs never do (jobs take paths and parameters), and
nothing here imports console/: the tasks live in each console app's tasks.py."""

from workers.celery import app

__all__ = ["app"]
