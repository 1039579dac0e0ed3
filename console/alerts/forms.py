"""What people type about alerts: their subscriptions, and (administrators) webhooks and inflow
thresholds."""

import re

from django import forms
from django.core.validators import URLValidator

from console.alerts import events as E
from console.alerts.models import Webhook
from console.forms import LimitedForm
from console.queues.models import Queue

_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,99}$")
MAX_WINDOW_HOURS = 168


def queue_names(text):
    """Queue names from a comma-separated field; each must be a queue."""
    names = sorted({n.strip() for n in (text or "").split(",") if n.strip()})
    unknown = sorted(
        set(names) - set(Queue.objects.filter(name__in=names).values_list("name", flat=True))
    )
    if unknown:
        raise forms.ValidationError(f"no such queue: {', '.join(unknown)}")
    return names


class SubscriptionsForm(LimitedForm):
    """One row of fields per event the user may hear of: console, email, and which queues."""

    def __init__(self, *args, rows, **kwargs):
        super().__init__(*args, **kwargs)
        self.rows = rows
        for kind, label, console, email, queues, _default in rows:
            self.fields[f"{kind}:console"] = forms.BooleanField(
                required=False, initial=console, label=f"{label}: in the console"
            )
            self.fields[f"{kind}:email"] = forms.BooleanField(
                required=False, initial=email, label=f"{label}: by email"
            )
            if kind in E.QUEUE_KINDS:
                self.fields[f"{kind}:queues"] = forms.CharField(
                    required=False,
                    max_length=2000,
                    initial=", ".join(queues),
                    label=f"{label}: only these queues",
                )

    def clean(self):
        data = super().clean()
        for kind, *_ in self.rows:
            field = f"{kind}:queues"
            if field in data:
                try:
                    data[field] = queue_names(data[field])
                except forms.ValidationError as exc:
                    self.add_error(field, exc)
        return data

    def choices(self):
        """{kind: (console, email, queues)}, for subscriptions_save."""
        data = self.cleaned_data
        return {
            kind: (data[f"{kind}:console"], data[f"{kind}:email"], data.get(f"{kind}:queues", []))
            for kind, *_ in self.rows
        }

    def grouped(self):
        """[(label, console field, email field, queues field or None)] for the template."""
        return [
            (
                label,
                self[f"{kind}:console"],
                self[f"{kind}:email"],
                self[f"{kind}:queues"] if kind in E.QUEUE_KINDS else None,
            )
            for kind, label, *_ in self.rows
        ]


class WebhookForm(LimitedForm):
    name = forms.SlugField(max_length=100)
    url = forms.CharField(
        max_length=500,
        validators=[URLValidator(schemes=["http", "https"])],
        help_text="http or https; it receives a signed JSON POST.",
    )
    kinds = forms.MultipleChoiceField(
        required=False,
        choices=[(k, E.LABELS[k]) for k in E.KINDS],
        widget=forms.CheckboxSelectMultiple,
        label="events",
        help_text="None ticked: every event.",
    )
    queues = forms.CharField(
        required=False, max_length=2000, help_text="Comma-separated; empty: all."
    )
    secret_env = forms.CharField(
        max_length=100,
        label="secret's environment variable",
        help_text="The name of the variable that holds the signing secret in the workers' "
        "environment. The secret itself is never stored.",
    )

    def clean_name(self):
        name = self.cleaned_data["name"]
        if Webhook.objects.filter(name=name).exists():
            raise forms.ValidationError("a webhook by that name exists")
        return name

    def clean_queues(self):
        return queue_names(self.cleaned_data["queues"])

    def clean_secret_env(self):
        name = self.cleaned_data["secret_env"]
        if not _ENV_NAME.match(name):
            raise forms.ValidationError(
                "an environment variable's name: capital letters, digits and _, from a letter"
            )
        return name


class ThresholdForm(LimitedForm):
    queue = forms.ModelChoiceField(queryset=Queue.objects.order_by("name"), to_field_name="name")
    count = forms.IntegerField(min_value=1, max_value=10**9, help_text="Messages quarantined…")
    window_hours = forms.IntegerField(
        min_value=1,
        max_value=MAX_WINDOW_HOURS,
        initial=1,
        label="window (hours)",
        help_text="…within this many clock hours, this one included.",
    )
