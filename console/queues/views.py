"""The queues page: every queue with its policy, status and messages by state, and its broker
sources; and an administrator's switches, pause and re-enable. Every view checks its permission
on the server."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET, require_POST

from console.permissions import CHANGE_QUEUE, VIEW_QUEUES, VIEW_STATS, perms_required
from console.queues import selectors, services
from console.queues.forms import QueuePauseForm
from console.queues.models import Queue
from console.views import redirect_back


@require_GET
@login_required
@perms_required(VIEW_QUEUES, VIEW_STATS)
def queue_list(request):
    queues = selectors.queue_overview()
    history = selectors.queue_history(names=[q.name for q in queues])
    rows = []
    for q in queues:
        changes = history.get(q.name, [])
        rows.append((q, changes, selectors.queue_relapse(history=changes, queue=q.queue)))
    return render(
        request,
        "queues/queue_list.html",
        {"rows": rows, "sources": selectors.source_status_list()},
    )


@require_POST
@login_required
@perms_required(CHANGE_QUEUE)
def queue_enable(request, name):
    queue = get_object_or_404(Queue, name=name)
    if queue.enabled:
        messages.info(request, f"Queue {queue.name} was already enabled.")
    else:
        # Read before enabling: afterwards the newest entry is this enabling.
        history = selectors.queue_history(names=[queue.name], per_queue=2)[queue.name]
        relapsed = selectors.queue_relapse(history=history, queue=queue)
        services.queue_reenable(queue_ids=[queue.id], actor=request.user)
        said = f"Queue {queue.name} is enabled again."
        if relapsed:
            # It stopped itself right after the last enabling: enabling alone may not be enough.
            said += (
                f" Last time it was {relapsed}; unless its handler was fixed, it may stop again."
            )
        messages.success(request, said)
    return redirect_back(request, default="dashboard")


@require_POST
@login_required
@perms_required(CHANGE_QUEUE)
def queue_pause(request, name):
    queue = get_object_or_404(Queue, name=name)
    form = QueuePauseForm(request.POST)
    if not form.is_valid():
        # Refused whole, never cut: the reason is what the alert and the audit trail say.
        messages.error(request, f"{' '.join(form.errors['reason'])} The queue is not paused.")
    elif services.queue_pause(queue=queue, actor=request.user, reason=form.cleaned_data["reason"]):
        messages.success(request, f"Queue {queue.name} is paused: nothing is delivered to it.")
    else:
        messages.info(request, f"Queue {queue.name} was already disabled.")
    return redirect_back(request, default="queue-list")
