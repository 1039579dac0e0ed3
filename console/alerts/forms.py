"""What people type about alerts: their subscriptions, and (administrators) webhooks and inflow
thresholds."""

import re

from django import forms
from django.conf import settings
from django.core.validators import URLValidator

from console.alerts import events as E
from console.alerts.formats import PAGERDUTY_URL
from console.alerts.models import Webhook
from console.envnames import ALERT_PREFIX, alert_secret_refusal
from console.forms import LimitedForm
from console.queues.models import Queue
from workers.outbound import DestinationError, OutboundRefused, destination_check

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
    """A webhook: where it posts, in which service's format, which events and queues it hears
    of, and (our signed JSON, PagerDuty) the environment variable that holds its secret."""

    name = forms.SlugField(max_length=100)
    format = forms.ChoiceField(
        required=False,
        choices=Webhook.FORMATS,
        initial=Webhook.GENERIC,
        help_text="What it receives: our signed JSON, or a Slack, Teams or PagerDuty message.",
    )
    url = forms.CharField(
        required=False,
        max_length=500,
        validators=[URLValidator(schemes=["http", "https"])],
        help_text=f"http or https. PagerDuty: empty for its Events API v2 ({PAGERDUTY_URL}).",
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
        required=False,
        max_length=100,
        label="secret's environment variable",
        help_text="The name of the variable that holds the signing secret (generic) or the "
        f"routing key (PagerDuty) in the workers' environment: it starts with {ALERT_PREFIX} "
        "(or is listed in ALERTS_SECRET_ENV_ALLOWED); the secret itself is never stored. "
        "Slack and Teams: empty (their URL is their key).",
    )

    def clean_name(self):
        name = self.cleaned_data["name"]
        if Webhook.objects.filter(name=name).exists():
            raise forms.ValidationError("a webhook by that name exists")
        return name

    def clean_format(self):
        return self.cleaned_data["format"] or Webhook.GENERIC  # as before formats were

    def clean_url(self):
        url = self.cleaned_data["url"]
        if url:
            # Read as the sender reads it, and not to an internal address (workers.outbound);
            # checked again when each alert is sent, which is the check that counts.
            try:
                destination_check(url, allowance=settings.OUTBOUND_ALLOW_INTERNAL, resolve=True)
            except (DestinationError, OutboundRefused) as exc:
                said = str(exc) if isinstance(exc, OutboundRefused) else f"this URL {exc}"
                raise forms.ValidationError(said) from None
        return url

    def clean_queues(self):
        return queue_names(self.cleaned_data["queues"])

    def clean_secret_env(self):
        name = self.cleaned_data["secret_env"]
        if name and not _ENV_NAME.match(name):
            raise forms.ValidationError(
                "an environment variable's name: capital letters, digits and _, from a letter"
            )
        return name

    def clean(self):
        data = super().clean()
        kind = data.get("format")
        if kind is None:
            return data
        if not data.get("url") and "url" not in self.errors:
            if kind == Webhook.PAGERDUTY:
                data["url"] = PAGERDUTY_URL
            else:
                self.add_error("url", "the address it posts to is required")
        secret = data.get("secret_env")
        if kind in Webhook.WITH_SECRET and not secret and "secret_env" not in self.errors:
            what = "routing key" if kind == Webhook.PAGERDUTY else "signing secret"
            self.add_error("secret_env", f"name the environment variable of its {what}")
        elif kind in Webhook.WITH_SECRET and secret and (refusal := alert_secret_refusal(secret)):
            # Only a variable alerts may read: never one of the product's own (R19).
            self.add_error("secret_env", refusal)
        elif kind not in Webhook.WITH_SECRET and secret:
            self.add_error(
                "secret_env", f"a {kind} webhook has no secret but its URL: leave this empty"
            )
        return data


class WebhookEditForm(WebhookForm):
    """A webhook's address, events, queues and secret's variable changed; its name and format
    stay (another format is another webhook)."""

    def __init__(self, *args, webhook, **kwargs):
        if (not args or args[0] is None) and "initial" not in kwargs:
            kwargs["initial"] = {
                "url": webhook.url,
                "kinds": webhook.kinds,
                "queues": ", ".join(webhook.queues),
                "secret_env": webhook.secret_env,
            }
        super().__init__(*args, **kwargs)
        self.webhook = webhook
        del self.fields["name"], self.fields["format"]

    def clean(self):
        self.cleaned_data["format"] = self.webhook.format
        data = super().clean()
        del data["format"]
        return data


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
