"""The runs page: every background run (delivery runs, refreshes, compactions, purges) with its
state, heartbeat, position and timings, the ones in progress first, marked stuck or slow; it
follows by itself (templates/_live.html).

A run's error may quote a message (a handler's exception, a reason): the template escapes it,
nothing here marks anything safe."""

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.views.decorators.http import require_GET

from console.list_pages import filtered_list
from console.permissions import VIEW_RUNS, perms_required
from console.runs import selectors
from console.runs.forms import RunFilterForm


@require_GET
@login_required
@perms_required(VIEW_RUNS)
def run_list(request):
    return filtered_list(
        request,
        RunFilterForm,
        "runs/run_list.html",
        lambda data: selectors.runs_page(
            kind=data["kind"], state=data["state"], before=data["before"]
        ),
        kept=("kind", "state"),
        lease_seconds=settings.LEASE_SECONDS,
    )
