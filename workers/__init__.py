"""Celery workers and the Spark side of Antidote.

`celery -A workers ...` finds the app here. Only workers.celery and workers.tasks import Django;
workers.engine, workers.lake and workers.jobs never do (jobs take paths and parameters)."""

from workers.celery import app

__all__ = ["app"]
