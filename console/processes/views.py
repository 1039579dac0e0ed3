"""The Processes page: every process of the deployment with its host, pid, start, last
heartbeat and current work, alive, stale or stopped; the broker sources' consumer threads
under it. It follows by itself (templates/_live.html).

A process's current work may quote a task's argument: the template escapes it, nothing here
marks anything safe."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from console.permissions import VIEW_RUNS, perms_required
from console.processes import selectors


@require_GET
@login_required
@perms_required(VIEW_RUNS)
def process_list(request):
    now = timezone.now()
    ctx = {
        "processes": selectors.process_list(now=now),
        "consumers": selectors.consumer_list(now=now),
        "missing": selectors.process_warnings(now=now),
        "stale_seconds": selectors.stale_seconds(),
    }
    return render(request, "processes/process_list.html", ctx)
