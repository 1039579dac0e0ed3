"""What a message's history says of the standing rules behind its events: the request that made
an event was made, or redirected, by a rule (console.browse.history_notes, handed over when
Django starts)."""

from django.urls import reverse

from console.browse.history_notes import HistoryNote, provide
from console.rules.models import RuleApplication
from console.rules.redirects import application_said
from workers.jobs.decisions.chunk import request_run_id


def _request_ids(run_ids):
    prefix = request_run_id("")
    tails = (run_id.removeprefix(prefix) for run_id in run_ids if run_id.startswith(prefix))
    return [int(tail) for tail in tails if tail.isdigit() and len(tail) < 19]


def history_notes(run_ids):
    """{run_id: [HistoryNote]} of the requests among `run_ids` standing rules made or
    redirected."""
    applications = (
        RuleApplication.objects.filter(request_id__in=_request_ids(run_ids))
        .select_related("rule")
        .order_by("id")
    )
    notes = {}
    for a in applications:
        notes.setdefault(request_run_id(a.request_id), []).append(
            HistoryNote(text=application_said(a), url=reverse("rule-detail", args=[a.rule_id]))
        )
    return notes


provide(history_notes)
