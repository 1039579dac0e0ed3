"""/api/v1/alerts: the caller's own alerts (the bell), marking them read, what the caller hears
of, and (administrators) the outbox of email and webhook deliveries, the webhooks and the inflow
thresholds."""

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import APIView

from console.alerts import api_schema, selectors, serializers, services
from console.alerts.forms import queue_names
from console.alerts.models import Webhook
from console.api import JSONParser, ServiceRefusals, valid_filters, valid_input
from console.permissions import MANAGE_ALERTS, has_perms


class _WritesApi(ServiceRefusals, APIView):
    """Refusals as BAD_REQUEST answers; JSON only (lists and nested lists, which a form cannot
    say)."""

    parser_classes = [JSONParser]


def _page(output, found, params, **more):
    """One page of `found` (params' page and page_size), with its count and `more`, as `output`
    shows it."""
    paginator = Paginator(found, params["page_size"])
    page = paginator.get_page(params["page"])
    return Response(
        output({**more, "count": paginator.count, "results": list(page.object_list)}).data
    )


class AlertListApi(APIView):
    """The caller's console alerts, newest first, with whether each is read. Reading them here
    does not mark them read (POST /api/v1/alerts/read does)."""

    @api_schema.alert_list
    def get(self, request):
        params = valid_filters(serializers.AlertFilterSerializer, request)
        found = selectors.inbox(user=request.user)
        if params["unread"]:
            found = found.filter(read_at__isnull=True)
        return _page(
            serializers.AlertPageSerializer,
            found,
            params,
            unread=selectors.unread_count(user=request.user),
        )


class AlertReadApi(_WritesApi):
    """Mark the caller's alerts read: those listed in `ids`, or all of them."""

    @api_schema.alerts_read
    def post(self, request):
        ids = valid_input(serializers.AlertsReadSerializer, request.data).get("ids")
        marked = services.alerts_mark_read(user=request.user, alert_ids=ids)
        return Response({"marked": marked})


class OutboxApi(APIView):
    """The email and webhook deliveries, newest first, with their state (administrators)."""

    permission_classes = [has_perms(MANAGE_ALERTS)]

    @api_schema.outbox
    def get(self, request):
        params = valid_filters(serializers.OutboxFilterSerializer, request)
        return _page(
            serializers.OutboxPageSerializer,
            selectors.outbox(state=params.get("state", "")),
            params,
            counts=selectors.outbox_counts(),
        )


# --- What one hears of ----------------------------------------------------------------------------


def _subscriptions(user):
    rows = [
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
    return Response(serializers.SubscriptionRowSerializer(rows, many=True).data)


class SubscriptionsApi(_WritesApi):
    """The events the caller may hear of, and by which channels; PUT changes some of them (the
    others keep what they were)."""

    @api_schema.subscriptions
    def get(self, request):
        return _subscriptions(request.user)

    @api_schema.subscriptions_set
    def put(self, request):
        rows = valid_input(serializers.SubscriptionSerializer, request.data, many=True)
        allowed = set(selectors.kinds_for(request.user))
        choices = {}
        for i, row in enumerate(rows):
            if row["event"] not in allowed:
                raise exceptions.ValidationError({i: [f"you may not hear of {row['event']}"]})
            try:
                queues = queue_names(",".join(row["queues"]))
            except DjangoValidationError as exc:
                raise exceptions.ValidationError({i: exc.messages}) from exc
            choices[row["event"]] = (row["console"], row["email"], queues)
        services.subscriptions_save(user=request.user, choices=choices)
        return _subscriptions(request.user)


# --- Webhooks and thresholds (administrators) -----------------------------------------------------


class WebhookListApi(_WritesApi):
    """Webhooks (administrators): list, and add one. Each receives every alert of its events
    and queues as a POST in its format: our JSON signed in X-Antidote-Signature, a Slack or Teams
    message, a PagerDuty event."""

    permission_classes = [has_perms(MANAGE_ALERTS)]

    @api_schema.webhook_list
    def get(self, request):
        hooks = [h for h, _ in selectors.webhooks()]
        return Response(serializers.WebhookSerializer(hooks, many=True).data)

    @api_schema.webhook_create
    def post(self, request):
        given = valid_input(serializers.WebhookSerializer, request.data)
        hook = services.webhook_create(actor=request.user, **given)
        return Response(serializers.WebhookSerializer(hook).data, status=201)


class WebhookDetailApi(_WritesApi):
    """One webhook (administrators): read it, and change its address, events, queues or
    secret's variable (PATCH: what is left out stays)."""

    permission_classes = [has_perms(MANAGE_ALERTS)]

    @api_schema.webhook
    def get(self, request, webhook_id):
        hook = get_object_or_404(Webhook, id=webhook_id)
        return Response(serializers.WebhookSerializer(hook).data)

    @api_schema.webhook_change
    def patch(self, request, webhook_id):
        hook = get_object_or_404(Webhook, id=webhook_id)
        given = valid_input(
            serializers.WebhookChangeSerializer, request.data, context={"webhook": hook}
        )
        services.webhook_update(actor=request.user, webhook=hook, **given)
        return Response(serializers.WebhookSerializer(hook).data)


class ThresholdListApi(_WritesApi):
    """Inflow thresholds (administrators): list, and set one (a queue's replaces its last)."""

    permission_classes = [has_perms(MANAGE_ALERTS)]

    @api_schema.threshold_list
    def get(self, request):
        return Response(serializers.ThresholdSerializer(selectors.thresholds(), many=True).data)

    @api_schema.threshold_set
    def put(self, request):
        given = serializers.ThresholdSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        services.threshold_set(actor=request.user, **given.validated_data)
        return Response(given.data)
