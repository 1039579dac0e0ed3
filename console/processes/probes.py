"""/healthz and /readyz, for systemd, load balancers and Kubernetes probes: no sign-in, no
session, no throttle, and /healthz no database either.

/healthz: the web process answers (liveness). /readyz: it can serve (readiness): its database
answers, its migrations are applied, the broker answers and the lake is there; 503 with each
check in words otherwise (console.processes.readiness)."""

from django.db import connections
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from console.processes.readiness import readiness

# Taken before any middleware's database connection (console.dbpool): /healthz needs none, and
# /readyz says in its answer when the database does not answer.
PROBE_PATHS = ("/healthz", "/readyz")


@never_cache
@require_safe
def healthz(request):
    return JsonResponse({"status": "alive"})


@never_cache
@require_safe
def readyz(request):
    checks = readiness(connections["default"])
    ready = all(check.ok for check in checks.values())
    return JsonResponse(
        {
            "status": "ready" if ready else "not ready",
            "checks": {
                name: {"ok": check.ok, "detail": check.detail} for name, check in checks.items()
            },
        },
        status=200 if ready else 503,
    )
