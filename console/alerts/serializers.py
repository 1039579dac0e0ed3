"""The shapes of /api/v1/alerts: alerts, the outbox, subscriptions, webhooks and thresholds."""

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from console.alerts import events as E
from console.alerts import selectors
from console.alerts.formats import PAGERDUTY_URL
from console.alerts.forms import MAX_WINDOW_HOURS, WebhookEditForm, WebhookForm, queue_names
from console.alerts.models import Webhook

PAGE_SIZE_MAX = 200


class AlertSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="alert.id")
    event = serializers.CharField(source="alert.kind")
    title = serializers.CharField(source="alert.title")
    text = serializers.CharField(source="alert.text")
    link = serializers.CharField(source="alert.link", help_text="A path in the console.")
    queue = serializers.CharField(source="alert.queue")
    details = serializers.JSONField(source="alert.details")
    repeats = serializers.IntegerField(
        source="alert.repeats", help_text="Times it was raised again within its period."
    )
    created_at = serializers.DateTimeField(source="alert.created_at")

    class Meta:
        ref_name = "Alert"


class InboxRowSerializer(AlertSerializer):
    read_at = serializers.DateTimeField(allow_null=True, help_text="Null while unread.")

    class Meta:
        ref_name = "InboxAlert"


class PageSerializer(serializers.Serializer):
    page = serializers.IntegerField(required=False, min_value=1, default=1)
    page_size = serializers.IntegerField(
        required=False, min_value=1, max_value=PAGE_SIZE_MAX, default=50
    )


# --- The caller's alerts --------------------------------------------------------------------------


class AlertFilterSerializer(PageSerializer):
    unread = serializers.BooleanField(required=False, default=False, help_text="Unread only.")


class AlertPageSerializer(serializers.Serializer):
    unread = serializers.IntegerField(help_text="The caller's unread alerts, in all.")
    count = serializers.IntegerField()
    results = InboxRowSerializer(many=True)

    class Meta:
        ref_name = "AlertPage"


class AlertsReadSerializer(serializers.Serializer):
    ids = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=2**63 - 1),
        required=False,
        max_length=1000,
        help_text="Alert ids (as listed); leave out for all.",
    )

    class Meta:
        ref_name = "AlertsRead"


class AlertsMarkedSerializer(serializers.Serializer):
    marked = serializers.IntegerField()

    class Meta:
        ref_name = "AlertsMarked"


# --- The outbox -----------------------------------------------------------------------------------


class DeliverySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    alert = AlertSerializer(source="*")
    channel = serializers.CharField()
    address = serializers.CharField(
        source="address_shown",
        help_text="The email address, or the webhook's URL redacted to where it leads "
        "(scheme://host:port/[redacted]): its path or query may be its key.",
    )
    state = serializers.CharField(help_text="pending, sent, or failed (gave up; may be retried).")
    attempts = serializers.IntegerField()
    due_at = serializers.DateTimeField(allow_null=True)
    sent_at = serializers.DateTimeField(allow_null=True)
    last_error = serializers.CharField()

    class Meta:
        ref_name = "AlertDelivery"


class OutboxFilterSerializer(PageSerializer):
    state = serializers.ChoiceField(
        choices=selectors.OUTBOX_STATES, required=False, allow_blank=True
    )


class OutboxPageSerializer(serializers.Serializer):
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="By state.")
    count = serializers.IntegerField()
    results = DeliverySerializer(many=True)

    class Meta:
        ref_name = "OutboxPage"


def _queues(help_text, **kwargs):
    """Queue names: a subscription's, a webhook's."""
    return serializers.ListField(
        child=serializers.CharField(max_length=100),
        required=False,
        max_length=500,
        help_text=help_text,
        **kwargs,
    )


# --- What one hears of ----------------------------------------------------------------------------


class SubscriptionSerializer(serializers.Serializer):
    event = serializers.ChoiceField(choices=E.KINDS)
    console = serializers.BooleanField()
    email = serializers.BooleanField()
    queues = _queues("Only these queues (events about a queue); empty: all.", default=list)

    class Meta:
        ref_name = "AlertSubscription"


class SubscriptionRowSerializer(SubscriptionSerializer):
    label = serializers.CharField()
    default = serializers.BooleanField(help_text="True while it follows the role's default.")

    class Meta:
        ref_name = "AlertSubscriptionRow"


# --- Webhooks and thresholds (administrators) -----------------------------------------------------


def _form_errors(form):
    return serializers.ValidationError(
        {field: [str(e) for e in errors] for field, errors in form.errors.items()}
    )


class WebhookSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    name = serializers.SlugField(max_length=100)
    format = serializers.ChoiceField(
        choices=Webhook.FORMATS,
        default=Webhook.GENERIC,
        help_text="What it receives: generic (our JSON, signed), slack (an incoming webhook's "
        "message), teams (a workflow's Adaptive Card), pagerduty (an Events API v2 event).",
    )
    url = serializers.CharField(
        max_length=500,
        required=False,
        allow_blank=True,
        default="",
        help_text=f"http or https. Leave out for PagerDuty's Events API v2 ({PAGERDUTY_URL}).",
    )
    kinds = serializers.ListField(
        child=serializers.ChoiceField(choices=E.KINDS),
        required=False,
        default=list,
        max_length=len(E.KINDS),
        help_text="The events it receives; empty: all. A pagerduty webhook also receives the "
        "events that resolve its events' incidents (queue.enabled for queue.disabled).",
    )
    queues = _queues("The queues it hears of; empty: all.", default=list)
    secret_env = serializers.CharField(
        max_length=100,
        required=False,
        allow_blank=True,
        default="",
        help_text="The environment variable holding the signing secret (generic) or the "
        "routing key (pagerduty): one starting with ANTIDOTE_ALERT_, or listed in "
        "ALERTS_SECRET_ENV_ALLOWED, never one of the product's own settings; empty for slack "
        "and teams.",
    )
    active = serializers.BooleanField(read_only=True)
    disabled_reason = serializers.CharField(
        read_only=True,
        help_text="Why the product disabled it (its secret_env names a variable alerts may not "
        "read); empty otherwise. Enabling it again clears it.",
    )

    class Meta:
        ref_name = "Webhook"

    def validate(self, data):
        kinds = list(dict.fromkeys(data.get("kinds", [])))
        form = WebhookForm(
            data={**data, "kinds": kinds, "queues": ",".join(data.get("queues", []))}
        )
        if not form.is_valid():
            raise _form_errors(form)
        clean = form.cleaned_data
        return {**data, "kinds": kinds, "queues": clean["queues"], "url": clean["url"]}


# Its context holds the webhook it changes ("webhook"): what is left out stays as it was.
class WebhookChangeSerializer(serializers.Serializer):
    url = serializers.CharField(max_length=500, required=False, allow_blank=True)
    kinds = serializers.ListField(
        child=serializers.ChoiceField(choices=E.KINDS),
        required=False,
        max_length=len(E.KINDS),
        help_text="The events it receives; empty: all.",
    )
    queues = _queues("The queues it hears of; empty: all.")
    secret_env = serializers.CharField(max_length=100, required=False, allow_blank=True)

    class Meta:
        ref_name = "WebhookChange"

    def validate(self, data):
        hook = self.context["webhook"]
        kinds = list(dict.fromkeys(data.get("kinds", hook.kinds)))
        form = WebhookEditForm(
            data={
                "url": data.get("url", hook.url),
                "kinds": kinds,
                "queues": ",".join(data.get("queues", hook.queues)),
                "secret_env": data.get("secret_env", hook.secret_env),
            },
            webhook=hook,
        )
        if not form.is_valid():
            raise _form_errors(form)
        return {**form.cleaned_data, "kinds": kinds}


class ThresholdSerializer(serializers.Serializer):
    queue = serializers.CharField(max_length=100)
    count = serializers.IntegerField(min_value=1, max_value=10**9)
    window_hours = serializers.IntegerField(min_value=1, max_value=MAX_WINDOW_HOURS, default=1)

    class Meta:
        ref_name = "InflowThreshold"

    def validate_queue(self, value):
        try:
            return queue_names(value)[0]
        except (DjangoValidationError, IndexError) as exc:
            raise serializers.ValidationError(f"no such queue: {value}") from exc
