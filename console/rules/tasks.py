"""The standing rules' Celery tasks: thin, each calls console.rules.applying."""

from console.celery_task import console_task
from console.rules.applying import rules_apply
from console.rules.models import ARCHIVE, AUTO_RETRY, REDIRECT


@console_task("workers.tasks.rules_archive_task", soft_time_limit=600, time_limit=660)
def rules_archive_task():
    """Beat's daily look of every active archive rule: each FAILs, through a request of its own,
    the quarantined messages it matches. Idempotent: a second look finds them decided or held by
    the first's request; a lost task is made up by the next. Returns {rule id: request id or
    None}."""
    return rules_apply(kinds=[ARCHIVE])


@console_task("workers.tasks.rules_retry_task", soft_time_limit=240, time_limit=300)
def rules_retry_task():
    """Beat's look, every RULES_RETRY_SECONDS, of every active auto-retry rule: each reprocesses
    its group's new failures past its delay, one request at a time; and of every redirect, which
    stops once its proposer or approver lost the right to it. Idempotent, as the archive's.
    Returns {rule id: request id or None}."""
    return rules_apply(kinds=[AUTO_RETRY, REDIRECT])
