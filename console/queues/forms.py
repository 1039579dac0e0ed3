"""The queues page's form: why a queue is paused."""

from django import forms

from console.forms import LimitedForm
from console.queues.services import PAUSE_REASON_MAX


class QueuePauseForm(LimitedForm):
    """Why a queue is paused (the queues page): the alert and the audit trail say it."""

    reason = forms.CharField(required=False, max_length=PAUSE_REASON_MAX, label="reason")
