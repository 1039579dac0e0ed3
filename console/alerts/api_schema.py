"""How /api/v1/alerts stands in the OpenAPI document: each operation's decoration, with the
examples /api/docs/ shows."""

from drf_spectacular.utils import extend_schema

from console.alerts import serializers as s
from console.api import BAD_FILTERS, BAD_REQUEST, ERRORS, NOT_FOUND, answer, sent

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
_SUBSCRIPTION_ROW = {**_SUBSCRIPTION, "label": "A queue was disabled", "default": False}
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


def _page_of(operation_id, filters, page, example):
    """A list a page at a time, filtered by query parameters."""
    return extend_schema(
        operation_id=operation_id,
        parameters=[filters],
        responses={200: answer(page, example), 400: BAD_FILTERS, **ERRORS},
    )


alert_list = _page_of(
    "alerts_list",
    s.AlertFilterSerializer,
    s.AlertPageSerializer,
    {"unread": 1, "count": 8, "results": [{**_ALERT, "read_at": None}]},
)

alerts_read = extend_schema(
    operation_id="alerts_read",
    request=s.AlertsReadSerializer,
    examples=[sent({"ids": [8, 9]}, "Some"), sent({}, "All")],
    responses={
        200: answer(s.AlertsMarkedSerializer, {"marked": 2}),
        400: BAD_REQUEST,
        **ERRORS,
    },
)

outbox = _page_of(
    "alerts_outbox",
    s.OutboxFilterSerializer,
    s.OutboxPageSerializer,
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
)

# --- What one hears of ----------------------------------------------------------------------------

subscriptions = extend_schema(
    operation_id="alerts_subscriptions",
    description="The events the caller may hear of, and by which channels (the console's "
    "bell, email), for which queues; `default` while a choice follows the role's default.",
    responses={
        200: answer(s.SubscriptionRowSerializer(many=True), _SUBSCRIPTION_ROW),
        **ERRORS,
    },
)

subscriptions_set = extend_schema(
    operation_id="alerts_subscriptions_set",
    description="Change what the caller hears of: the events listed get these channels and "
    "queues; the others keep what they were. Answers every event, as GET does.",
    request=s.SubscriptionSerializer(many=True),
    examples=[sent(_SUBSCRIPTION)],
    responses={
        200: answer(s.SubscriptionRowSerializer(many=True), _SUBSCRIPTION_ROW),
        400: BAD_REQUEST,
        **ERRORS,
    },
)

# --- Webhooks and thresholds (administrators) -----------------------------------------------------

webhook_list = extend_schema(
    operation_id="alerts_webhooks",
    description="The webhooks (administrators): where each posts and in which format, "
    "which events and queues it hears of, and the environment variable holding its secret "
    "(the signing secret, or PagerDuty's routing key).",
    responses={200: answer(s.WebhookSerializer(many=True), _WEBHOOK_SHOWN), **ERRORS},
)

webhook_create = extend_schema(
    operation_id="alerts_webhooks_create",
    description="Add a webhook (administrators): it receives every alert of its events and "
    "queues as a POST in its format: generic JSON signed with the secret in `secret_env` "
    "(X-Antidote-Signature); a Slack incoming webhook's or a Teams workflow's message; a "
    "PagerDuty Events API v2 event with the routing key in `secret_env`, which triggers an "
    "incident and resolves it when its cause ends (a queue re-enabled).",
    request=s.WebhookSerializer,
    examples=[sent(_WEBHOOK, "Signed JSON"), sent(_SLACK, "Slack"), sent(_PAGER, "PagerDuty")],
    responses={201: answer(s.WebhookSerializer, _WEBHOOK_SHOWN), 400: BAD_REQUEST, **ERRORS},
)

webhook = extend_schema(
    operation_id="alerts_webhook",
    responses={200: answer(s.WebhookSerializer, _WEBHOOK_SHOWN), 404: NOT_FOUND, **ERRORS},
)

webhook_change = extend_schema(
    operation_id="alerts_webhook_change",
    description="Change a webhook (administrators): its address, the events it receives "
    "(routing), its queues, or its secret's variable; its name and format stay. What is "
    "left out stays as it was.",
    request=s.WebhookChangeSerializer,
    examples=[sent({"kinds": ["queue.disabled", "source.down"]}, "Route")],
    responses={
        200: answer(s.WebhookSerializer, _WEBHOOK_SHOWN),
        400: BAD_REQUEST,
        404: NOT_FOUND,
        **ERRORS,
    },
)

threshold_list = extend_schema(
    operation_id="alerts_thresholds",
    description="The inflow thresholds (administrators): a queue that quarantines more than "
    "`count` messages in `window_hours` raises queue.inflow.",
    responses={200: answer(s.ThresholdSerializer(many=True), _THRESHOLD), **ERRORS},
)

threshold_set = extend_schema(
    operation_id="alerts_thresholds_set",
    description="Set a queue's inflow threshold (administrators); it replaces the queue's "
    "last one.",
    request=s.ThresholdSerializer,
    examples=[sent(_THRESHOLD)],
    responses={200: answer(s.ThresholdSerializer, _THRESHOLD), 400: BAD_REQUEST, **ERRORS},
)
