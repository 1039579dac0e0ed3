"""The Celery app. Two queues: `spark` for the worker that holds the one Spark session, and
`default` for light tasks (sweeping, inbox scanning).

The tasks live with the console app whose work they do (console/<app>/tasks.py). Their names
still read "workers.tasks.<name>", as when they all lived here: routes and beat's schedule below,
and tasks already in a broker, name them so."""

import logging
import os
import threading

from celery import Celery
from celery.signals import (
    after_setup_logger,
    after_setup_task_logger,
    task_postrun,
    task_prerun,
    worker_init,
    worker_ready,
    worker_shutdown,
)
from kombu import Exchange, Queue

from workers.logcontext import JsonFormatter, LogContext, log_bind, log_unbind

log = logging.getLogger(__name__)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

app = Celery("antidote")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Each queue with its own exchange and routing key: sharing one would hand every task to both.
app.conf.task_queues = (
    Queue("default", Exchange("default"), routing_key="default"),
    Queue("spark", Exchange("spark"), routing_key="spark"),
)
app.conf.task_default_exchange = "default"
app.conf.task_default_routing_key = "default"
app.conf.task_default_queue = "default"
app.conf.task_routes = {
    "workers.tasks.delivery_run_task": {"queue": "spark", "routing_key": "spark"},
    "workers.tasks.lake_compact_task": {"queue": "spark", "routing_key": "spark"},
    "workers.tasks.browse_refresh_task": {"queue": "spark", "routing_key": "spark"},
    "workers.tasks.action_request_execute_task": {"queue": "spark", "routing_key": "spark"},
    "workers.tasks.lake_query_task": {"queue": "spark", "routing_key": "spark"},
    "workers.tasks.purge_task": {"queue": "spark", "routing_key": "spark"},
    "workers.tasks.counts_verify_task": {"queue": "spark", "routing_key": "spark"},
}
# The spark worker must not prefetch: a second delivery run waiting in its buffer would be lost
# with it if it died, and runs are cheap to re-enqueue from beat anyway.
app.conf.worker_prefetch_multiplier = 1
app.conf.task_acks_late = False
app.conf.broker_connection_retry_on_startup = True
app.conf.beat_schedule = {}


@app.on_after_finalize.connect
def _schedule(sender, **kwargs):
    from django.conf import settings

    sender.conf.beat_schedule = {
        # R16: a run of its own for every queue whose previous run has finished.
        "delivery-run": {
            "task": "workers.tasks.delivery_dispatch_task",
            "schedule": float(settings.DELIVERY_INTERVAL_SECONDS),
        },
        "sweep-leases": {
            "task": "workers.tasks.sweep_leases_task",
            "schedule": float(settings.SWEEP_INTERVAL_SECONDS),
        },
        "sweep-lake-queries": {
            "task": "workers.tasks.lake_queries_sweep_task",
            "schedule": float(settings.SWEEP_INTERVAL_SECONDS),
        },
        "sweep-decisions": {
            "task": "workers.tasks.decisions_sweep_task",
            "schedule": float(settings.SWEEP_INTERVAL_SECONDS),
        },
        "refresh-read-models": {
            "task": "workers.tasks.browse_refresh_task",
            "schedule": float(settings.REFRESH_INTERVAL_SECONDS),
        },
        "sweep-purges": {
            "task": "workers.tasks.purges_sweep_task",
            "schedule": float(settings.SWEEP_INTERVAL_SECONDS),
        },
        # R15: the final messages past their queue's retention, purged daily by default.
        "purge-retention": {
            "task": "workers.tasks.purge_task",
            "schedule": float(settings.PURGE_INTERVAL_SECONDS),
        },
        # Every count the console shows, recounted from the lake and compared (and repaired).
        "counts-verify": {
            "task": "workers.tasks.counts_verify_task",
            "schedule": float(settings.COUNTS_VERIFY_SECONDS),
        },
        # The audit chain's head, in the database and in a signed file outside it.
        "audit-checkpoint": {
            "task": "workers.tasks.audit_checkpoint_task",
            "schedule": float(settings.AUDIT_CHECKPOINT_SECONDS),
        },
        # The whole chain walked: a broken one alerts the auditors (console.alerts).
        "audit-verify": {
            "task": "workers.tasks.audit_verify_task",
            "schedule": float(settings.AUDIT_VERIFY_SECONDS),
        },
        # Alerts: what is due in the outbox sent, and the watches (inflow over a threshold, a
        # broker consumer whose heartbeat stopped) looked at.
        "alerts-send": {
            "task": "workers.tasks.alerts_send_task",
            "schedule": float(settings.ALERTS_SEND_SECONDS),
        },
        "alerts-watch": {
            "task": "workers.tasks.alerts_watch_task",
            "schedule": float(settings.ALERTS_WATCH_SECONDS),
        },
        # Break-glass decisions past BREAK_GLASS_REVIEW_HOURS without their review: alerted once.
        "break-glass-overdue": {
            "task": "workers.tasks.break_glass_overdue_task",
            "schedule": float(settings.ALERTS_WATCH_SECONDS),
        },
        # Standing rules (console.rules): the archives, daily by default; the auto-retries.
        "standing-rules-archive": {
            "task": "workers.tasks.rules_archive_task",
            "schedule": float(settings.RULES_ARCHIVE_SECONDS),
        },
        "standing-rules-retry": {
            "task": "workers.tasks.rules_retry_task",
            "schedule": float(settings.RULES_RETRY_SECONDS),
        },
        # The Runs page's old delivery runs and refreshes forgotten (RUNS_KEEP_DAYS).
        "forget-runs": {
            "task": "workers.tasks.runs_forget_task",
            "schedule": 3600.0,
        },
        "scan-inbox": {
            "task": "workers.tasks.inbox_scan_task",
            "schedule": float(settings.INBOX_POLL_SECONDS),
        },
    }
    if settings.LDAP_SERVER_URI:
        # Accounts whose directory entry is gone (the person left) deactivated (console.sso).
        sender.conf.beat_schedule["directory-check"] = {
            "task": "workers.tasks.directory_accounts_check_task",
            "schedule": float(settings.LDAP_CHECK_MINUTES * 60),
        }


@worker_init.connect
def _pool_fits(sender=None, **kwargs):
    """Say so at start when a threaded worker's threads could wait on each other for database
    connections: a decision holds two at once (its task's and its read-ahead thread's), and a
    heartbeat takes one for the moment of a beat."""
    from django.conf import settings
    from django.db import connection

    if not connection.settings_dict.get("OPTIONS", {}).get("pool"):
        return  # SQLite: no pool
    concurrency = getattr(sender, "concurrency", None) or 1
    needed, pool_max = 2 * concurrency + 1, settings.DB_POOL_MAX
    if pool_max < needed:
        log.error(
            "DB_POOL_MAX is %s for a worker of concurrency %s: tasks may wait on each other for "
            "connections (DB_POOL_TIMEOUT, then fail). Set DB_POOL_MAX to at least %s.",
            pool_max,
            concurrency,
            needed,
        )


@after_setup_logger.connect
@after_setup_task_logger.connect
def _log_format(logger=None, **kwargs):
    """Celery's worker and beat put their own handler on the root logger (and on celery.task)
    in place of settings' LOGGING: it gets the log context, and the JSON format when
    LOG_FORMAT is json. Plain, Celery's own lines (and its -l level) are kept."""
    from django.conf import settings

    for handler in logger.handlers:
        handler.addFilter(LogContext())
        if settings.LOG_FORMAT == "json":
            handler.setFormatter(JsonFormatter(process_name=settings.PROCESS_NAME))


# A task's log context, by task and thread: a task delivered twice may run twice at once.
_task_logs = {}


@task_prerun.connect
def _task_log_context(task_id=None, **kwargs):
    """Every line a task logs carries its id (and, through the services it calls, its run)."""
    _task_logs[task_id, threading.get_ident()] = log_bind(task_id=task_id)


@task_postrun.connect
def _task_log_context_end(task_id=None, **kwargs):
    token = _task_logs.pop((task_id, threading.get_ident()), None)
    if token is not None:
        log_unbind(token)


SPARK_QUEUE = "spark"


@worker_ready.connect
def _spark_session_early(sender=None, **kwargs):
    """The spark worker starts its one Spark session as soon as it is up, in a thread of its own,
    rather than in its first task: a JVM takes seconds to start, which the first refresh after a
    start (the first counts a new console shows) would otherwise wait for on top of its work.
    A task that comes meanwhile waits for the same session. Other workers start none."""
    consumer = getattr(sender, "task_consumer", None)
    names = {queue.name for queue in getattr(consumer, "queues", ())}
    if SPARK_QUEUE not in names:
        return
    from django.conf import settings

    from workers.spark import spark_session_from

    def start():
        try:
            spark_session_from(settings)
        except Exception as exc:
            # The first task that needs it tries again, and fails with the whole story.
            log.warning("the Spark session did not start yet: %s: %s", type(exc).__name__, exc)

    threading.Thread(target=start, name="spark-session-start", daemon=True).start()


@worker_shutdown.connect
def _spark_session_end(sender=None, **kwargs):
    """Stop the Spark session and its JVM as the worker ends (Ctrl-C, honcho's or systemd's
    SIGTERM): the JVM ignores SIGTERM (workers.spark), so it stops after the tasks, not under
    them. A no-op in a worker that never started one."""
    from workers.spark import spark_shutdown

    spark_shutdown()


# Each console app that owns background work has its own tasks.py; Celery finds them through
# Django's installed apps when a worker or beat starts. This is a lookup by name at run time, not
# an import: workers/ never imports console/ (the web process imports the tasks it sends).
app.autodiscover_tasks()
