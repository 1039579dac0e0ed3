"""The web's answer when its database connections are all in use: 503 and Retry-After, never a
500 with a traceback.

On PostgreSQL every process draws on a pool of at most DB_POOL_MAX connections (settings). A
request takes its connection first, before any other middleware or view, and keeps it until it
has been answered (Django gives it back to the pool when the request ends). Taken here, a
connection that does not come within DB_POOL_TIMEOUT is refused in one place, before anything
half-done; taken lazily, the wait would end in whichever middleware asked first, as a 500.
The probes are left alone: /healthz needs no database, and /readyz says itself, as a check among
its others, when the database does not answer (console.processes.probes).
"""

import logging

from django.db import OperationalError, connection
from django.http import HttpResponse, JsonResponse
from django.template.loader import render_to_string

from console.processes.probes import PROBE_PATHS

log = logging.getLogger(__name__)

# What the client is told to wait before trying again: long enough for a burst to drain.
RETRY_AFTER_SECONDS = 5
BUSY = "The console's database is busy or unreachable: no connection came free in time."


def _pool_timed_out(exc):
    from psycopg_pool import PoolTimeout

    return isinstance(exc.__cause__, PoolTimeout)


class ConnectionFirst:
    def __init__(self, get_response):
        self.get_response = get_response
        # SQLite (the embedded default) has no pool: nothing to wait for.
        self.pooled = bool(connection.settings_dict.get("OPTIONS", {}).get("pool"))

    def __call__(self, request):
        if self.pooled and request.path not in PROBE_PATHS:
            try:
                connection.ensure_connection()
            except OperationalError as exc:
                if not _pool_timed_out(exc):
                    raise
                return _busy(request, exc)
        return self.get_response(request)


def _busy(request, exc):
    stats = connection.pool.get_stats() if connection.pool else {}
    log.warning(
        "%s %s answered 503: %s (pool: %s of at most %s connections open, %s requests waiting)",
        request.method,
        request.path,
        exc,
        stats.get("pool_size"),
        stats.get("pool_max"),
        stats.get("requests_waiting"),
    )
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": f"{BUSY} Try again shortly."}, status=503)
    else:
        # Rendered without the request: its context processors would need the database.
        response = HttpResponse(render_to_string("503.html"), status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    # Said once, above, as a warning: not again by django.request as an error with no cause.
    response._has_been_logged = True
    return response
