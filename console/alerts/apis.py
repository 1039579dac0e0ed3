"""/api/v1/alerts: the caller's own alerts (the bell), marking them read, what the caller hears
of, and (administrators) the outbox of email and webhook deliveries, the webhooks and the inflow
thresholds."""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from console.alerts import events as E
from console.alerts import selectors, services
from console.alerts.formats import PAGERDUTY_URL
from console.alerts.forms import MAX_WINDOW_HOURS, WebhookEditForm, WebhookForm, queue_names
from console.alerts.models import Webhook
from console.api import (
    BAD_FILTERS,
    BAD_REQUEST,
    ERRORS,
    NOT_FOUND,
    JSONParser,
    ServiceRefusals,
    answer,
    bad_filters,
    sent,
)
from console.permissions import MANAGE_ALERTS, has_perms

PAGE_SIZE_MAX = 200

# The examples of /api/docs/.
_GROUP = "d11ce0d954f15cfa9eacb6f8737d109af1493a5b4722088202262c5fd6bb43e2"
_ALERT = {
    "id": 8,
    "event": "group.new",
    "title": "New failure group in orders: InventoryUnavailable",
    "text": "InventoryUnavailable: inventory service unavailable",
    "link": f"/groups/{_GROUP}/",
    "queue": "orders",
    "details": {"fingerprint": _GROUP, "count": 1},
    "repeats": 0,
    "created_at": "2026-11-27T06:56:57.271783Z",
}
_SUBSCRIPTION = {
    "event": "queue.disabled",
    "console": True,
    "email": True,
    "queues": ["orders", "payments"],
}
_WEBHOOK = {
    "name": "on-call",
    "format": "generic",
    "url": "https://chat.example.com/hooks/antidote",
    "kinds": ["queue.disabled", "queue.inflow"],
    "queues": ["orders"],
    "secret_env": "ANTIDOTE_ALERT_ONCALL_SECRET",
}
_WEBHOOK_SHOWN = {"id": 1, **_WEBHOOK, "active": True, "disabled_reason": ""}
_PAGER = {
    "name": "pager",
    "format": "pagerduty",
    "kinds": ["queue.disabled", "source.down", "audit.broken"],
    "secret_env": "ANTIDOTE_ALERT_PAGERDUTY_KEY",
}
_SLACK = {
    "name": "ops-channel",
    "format": "slack",
    "url": "https://hooks.slack.com/services/T0000/B0000/XXXXXXXX",
    "kinds": ["queue.disabled", "queue.enabled", "group.new"],
}
_THRESHOLD = {"queue": "orders", "count": 100, "window_hours": 1}


class _AlertSerializer(serializers.Serializer):
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


class _WritesApi(ServiceRefusals, APIView):
    """Refusals as BAD_REQUEST answers; JSON only (lists and nested lists, which a form cannot
    say)."""

    parser_classes = [JSONParser]


class _InboxRowSerializer(_AlertSerializer):
    read_at = serializers.DateTimeField(allow_null=True, help_text="Null while unread.")

    class Meta:
        ref_name = "InboxAlert"


class _PageSerializer(serializers.Serializer):
    page = serializers.IntegerField(required=False, min_value=1, default=1)
    page_size = serializers.IntegerField(
        required=False, min_value=1, max_value=PAGE_SIZE_MAX, default=50
    )


def _page(queryset, params):
    paginator = Paginator(queryset, params["page_size"])
    return paginator, paginator.get_page(params["page"])


class AlertListApi(APIView):
    """The caller's console alerts, newest first, with whether each is read. Reading them here
    does not mark them read (POST /api/v1/alerts/read does)."""

    class InputSerializer(_PageSerializer):
        unread = serializers.BooleanField(required=False, default=False, help_text="Unread only.")

    class OutputSerializer(serializers.Serializer):
        unread = serializers.IntegerField(help_text="The caller's unread alerts, in all.")
        count = serializers.IntegerField()
        results = _InboxRowSerializer(many=True)

        class Meta:
            ref_name = "AlertPage"

    @extend_schema(
        operation_id="alerts_list",
        parameters=[InputSerializer],
        responses={
            200: answer(
                OutputSerializer,
                {
                    "unread": 1,
                    "count": 8,
                    "results": [{**_ALERT, "read_at": None}],
                },
            ),
            400: BAD_FILTERS,
            **ERRORS,
        },
    )
    def get(self, request):
        params = self.InputSerializer(data=request.query_params)
        if not params.is_valid():
            return bad_filters(params.errors)
        found = selectors.inbox(user=request.user)
        if params.validated_data["unread"]:
            found = found.filter(read_at__isnull=True)
        paginator, page = _page(found, params.validated_data)
        return Response(
            self.OutputSerializer(
                {
                    "unread": selectors.unread_count(user=request.user),
                    "count": paginator.count,
                    "results": list(page.object_list),
                }
            ).data
        )


class AlertReadApi(_WritesApi):
    """Mark the caller's alerts read: those listed in `ids`, or all of them."""

    class InputSerializer(serializers.Serializer):
        ids = serializers.ListField(
            child=serializers.IntegerField(min_value=1, max_value=2**63 - 1),
            required=False,
            max_length=1000,
            help_text="Alert ids (as listed); leave out for all.",
        )

        class Meta:
            ref_name = "AlertsRead"

    class OutputSerializer(serializers.Serializer):
        marked = serializers.IntegerField()

        class Meta:
            ref_name = "AlertsMarked"

    @extend_schema(
        operation_id="alerts_read",
        request=InputSerializer,
        examples=[sent({"ids": [8, 9]}, "Some"), sent({}, "All")],
        responses={200: answer(OutputSerializer, {"marked": 2}), 400: BAD_REQUEST, **ERRORS},
    )
    def post(self, request):
        params = self.InputSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        ids = params.validated_data.get("ids")
        marked = services.alerts_mark_read(user=request.user, alert_ids=ids)
        return Response({"marked": marked})


class _DeliverySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    alert = _AlertSerializer(source="*")
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


class OutboxApi(APIView):
    """The email and webhook deliveries, newest first, with their state (administrators)."""

    permission_classes = [has_perms(MANAGE_ALERTS)]

    class InputSerializer(_PageSerializer):
        state = serializers.ChoiceField(
            choices=selectors.OUTBOX_STATES, required=False, allow_blank=True
        )

    class OutputSerializer(serializers.Serializer):
        counts = serializers.DictField(child=serializers.IntegerField(), help_text="By state.")
        count = serializers.IntegerField()
        results = _DeliverySerializer(many=True)

        class Meta:
            ref_name = "OutboxPage"

    @extend_schema(
        operation_id="alerts_outbox",
        parameters=[InputSerializer],
        responses={
            200: answer(
                OutputSerializer,
                {
                    "counts": {"pending": 0, "sent": 41, "failed": 1},
                    "count": 42,
                    "results": [
                        {
                            "id": 42,
                            "alert": _ALERT,
                            "channel": "webhook",
                            "address": "https://chat.example.com:443/[redacted]",
                            "state": "failed",
                            "attempts": 5,
                            "due_at": None,
                            "sent_at": None,
                            "last_error": "HTTP 502 Bad Gateway",
                        }
                    ],
                },
            ),
            400: BAD_FILTERS,
            **ERRORS,
        },
    )
    def get(self, request):
        params = self.InputSerializer(data=request.query_params)
        if not params.is_valid():
            return bad_filters(params.errors)
        data = params.validated_data
        paginator, page = _page(selectors.outbox(state=data.get("state", "")), data)
        return Response(
            self.OutputSerializer(
                {
                    "counts": selectors.outbox_counts(),
                    "count": paginator.count,
                    "results": list(page.object_list),
                }
            ).data
        )


# --- What one hears of ----------------------------------------------------------------------------


class _SubscriptionSerializer(serializers.Serializer):
    event = serializers.ChoiceField(choices=E.KINDS)
    console = serializers.BooleanField()
    email = serializers.BooleanField()
    queues = serializers.ListField(
        child=serializers.CharField(max_length=100),
        required=False,
        default=list,
        max_length=500,
        help_text="Only these queues (events about a queue); empty: all.",
    )

    class Meta:
        ref_name = "AlertSubscription"


class _SubscriptionRowSerializer(_SubscriptionSerializer):
    label = serializers.CharField()
    default = serializers.BooleanField(help_text="True while it follows the role's default.")

    class Meta:
        ref_name = "AlertSubscriptionRow"


def _subscription_rows(user):
    return [
        {
            "event": kind,
            "label": label,
            "console": console,
            "email": email,
            "queues": queues,
            "default": default,
        }
        for kind, label, console, email, queues, default in selectors.subscriptions_of(user)
    ]


class SubscriptionsApi(_WritesApi):
    """The events the caller may hear of, and by which channels; PUT changes some of them (the
    others keep what they were)."""

    @extend_schema(
        operation_id="alerts_subscriptions",
        description="The events the caller may hear of, and by which channels (the console's "
        "bell, email), for which queues; `default` while a choice follows the role's default.",
        responses={
            200: answer(
                _SubscriptionRowSerializer(many=True),
                {**_SUBSCRIPTION, "label": "A queue was disabled", "default": False},
            ),
            **ERRORS,
        },
    )
    def get(self, request):
        return Response(
            _SubscriptionRowSerializer(_subscription_rows(request.user), many=True).data
        )

    @extend_schema(
        operation_id="alerts_subscriptions_set",
        description="Change what the caller hears of: the events listed get these channels and "
        "queues; the others keep what they were. Answers every event, as GET does.",
        request=_SubscriptionSerializer(many=True),
        examples=[sent(_SUBSCRIPTION)],
        responses={
            200: answer(
                _SubscriptionRowSerializer(many=True),
                {**_SUBSCRIPTION, "label": "A queue was disabled", "default": False},
            ),
            400: BAD_REQUEST,
            **ERRORS,
        },
    )
    def put(self, request):
        rows = _SubscriptionSerializer(data=request.data, many=True)
        rows.is_valid(raise_exception=True)
        allowed = set(selectors.kinds_for(request.user))
        choices = {}
        for i, row in enumerate(rows.validated_data):
            if row["event"] not in allowed:
                raise exceptions.ValidationError({i: [f"you may not hear of {row['event']}"]})
            try:
                queues = queue_names(",".join(row["queues"]))
            except DjangoValidationError as exc:
                raise exceptions.ValidationError({i: exc.messages}) from exc
            choices[row["event"]] = (row["console"], row["email"], queues)
        services.subscriptions_save(user=request.user, choices=choices)
        return Response(
            _SubscriptionRowSerializer(_subscription_rows(request.user), many=True).data
        )


# --- Webhooks and thresholds (administrators) -----------------------------------------------------


class _WebhookSerializer(serializers.Serializer):
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
    queues = serializers.ListField(
        child=serializers.CharField(max_length=100),
        required=False,
        default=list,
        max_length=500,
        help_text="The queues it hears of; empty: all.",
    )
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
            raise serializers.ValidationError(
                {field: [str(e) for e in errors] for field, errors in form.errors.items()}
            )
        clean = form.cleaned_data
        return {**data, "kinds": kinds, "queues": clean["queues"], "url": clean["url"]}


class WebhookListApi(_WritesApi):
    """Webhooks (administrators): list, and add one. Each receives every alert of its events
    and queues as a POST in its format: our JSON signed in X-Antidote-Signature, a Slack or Teams
    message, a PagerDuty event."""

    permission_classes = [has_perms(MANAGE_ALERTS)]

    @extend_schema(
        operation_id="alerts_webhooks",
        description="The webhooks (administrators): where each posts and in which format, "
        "which events and queues it hears of, and the environment variable holding its secret "
        "(the signing secret, or PagerDuty's routing key).",
        responses={
            200: answer(_WebhookSerializer(many=True), _WEBHOOK_SHOWN),
            **ERRORS,
        },
    )
    def get(self, request):
        return Response(_WebhookSerializer([h for h, _ in selectors.webhooks()], many=True).data)

    @extend_schema(
        operation_id="alerts_webhooks_create",
        description="Add a webhook (administrators): it receives every alert of its events and "
        "queues as a POST in its format: generic JSON signed with the secret in `secret_env` "
        "(X-Antidote-Signature); a Slack incoming webhook's or a Teams workflow's message; a "
        "PagerDuty Events API v2 event with the routing key in `secret_env`, which triggers an "
        "incident and resolves it when its cause ends (a queue re-enabled).",
        request=_WebhookSerializer,
        examples=[
            sent(_WEBHOOK, "Signed JSON"),
            sent(_SLACK, "Slack"),
            sent(_PAGER, "PagerDuty"),
        ],
        responses={
            201: answer(_WebhookSerializer, _WEBHOOK_SHOWN),
            400: BAD_REQUEST,
            **ERRORS,
        },
    )
    def post(self, request):
        given = _WebhookSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        hook = services.webhook_create(actor=request.user, **given.validated_data)
        return Response(_WebhookSerializer(hook).data, status=201)


class _WebhookChangeSerializer(serializers.Serializer):
    url = serializers.CharField(max_length=500, required=False, allow_blank=True)
    kinds = serializers.ListField(
        child=serializers.ChoiceField(choices=E.KINDS),
        required=False,
        max_length=len(E.KINDS),
        help_text="The events it receives; empty: all.",
    )
    queues = serializers.ListField(
        child=serializers.CharField(max_length=100),
        required=False,
        max_length=500,
        help_text="The queues it hears of; empty: all.",
    )
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
            raise serializers.ValidationError(
                {field: [str(e) for e in errors] for field, errors in form.errors.items()}
            )
        return {**form.cleaned_data, "kinds": kinds}


class WebhookDetailApi(_WritesApi):
    """One webhook (administrators): read it, and change its address, events, queues or
    secret's variable (PATCH: what is left out stays)."""

    permission_classes = [has_perms(MANAGE_ALERTS)]

    @extend_schema(
        operation_id="alerts_webhook",
        responses={200: answer(_WebhookSerializer, _WEBHOOK_SHOWN), 404: NOT_FOUND, **ERRORS},
    )
    def get(self, request, webhook_id):
        return Response(_WebhookSerializer(get_object_or_404(Webhook, id=webhook_id)).data)

    @extend_schema(
        operation_id="alerts_webhook_change",
        description="Change a webhook (administrators): its address, the events it receives "
        "(routing), its queues, or its secret's variable; its name and format stay. What is "
        "left out stays as it was.",
        request=_WebhookChangeSerializer,
        examples=[sent({"kinds": ["queue.disabled", "source.down"]}, "Route")],
        responses={
            200: answer(_WebhookSerializer, _WEBHOOK_SHOWN),
            400: BAD_REQUEST,
            404: NOT_FOUND,
            **ERRORS,
        },
    )
    def patch(self, request, webhook_id):
        hook = get_object_or_404(Webhook, id=webhook_id)
        given = _WebhookChangeSerializer(data=request.data, context={"webhook": hook})
        given.is_valid(raise_exception=True)
        services.webhook_update(actor=request.user, webhook=hook, **given.validated_data)
        return Response(_WebhookSerializer(hook).data)


class _ThresholdSerializer(serializers.Serializer):
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


class ThresholdListApi(_WritesApi):
    """Inflow thresholds (administrators): list, and set one (a queue's replaces its last)."""

    permission_classes = [has_perms(MANAGE_ALERTS)]

    @extend_schema(
        operation_id="alerts_thresholds",
        description="The inflow thresholds (administrators): a queue that quarantines more than "
        "`count` messages in `window_hours` raises queue.inflow.",
        responses={200: answer(_ThresholdSerializer(many=True), _THRESHOLD), **ERRORS},
    )
    def get(self, request):
        return Response(_ThresholdSerializer(selectors.thresholds(), many=True).data)

    @extend_schema(
        operation_id="alerts_thresholds_set",
        description="Set a queue's inflow threshold (administrators); it replaces the queue's "
        "last one.",
        request=_ThresholdSerializer,
        examples=[sent(_THRESHOLD)],
        responses={200: answer(_ThresholdSerializer, _THRESHOLD), 400: BAD_REQUEST, **ERRORS},
    )
    def put(self, request):
        given = _ThresholdSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        services.threshold_set(actor=request.user, **given.validated_data)
        return Response(given.data)
