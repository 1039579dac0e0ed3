"""/api/v1/: the console's read models and a message's body, with the screens' permissions.
Reading changes nothing (R12)."""

from django.http import Http404
from django.shortcuts import get_object_or_404
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from console.browse import selectors
from console.browse.body import raw_body_response
from console.browse.forms import API_PAGE_SIZE_MAX, PAGE_SIZE, MessageFilterForm
from console.browse.permissions import (
    CHANGE_QUEUE,
    VIEW_BODY,
    VIEW_GROUPS,
    VIEW_MESSAGES,
    VIEW_QUEUES,
    VIEW_STATS,
    has_perms,
)
from console.queues.models import Queue
from console.queues.services import queue_reenable


class _StateCounts(serializers.Field):
    """[(state, n)] as {"NDLV": 3, ...}, in lifecycle order."""

    def to_representation(self, value):
        return dict(value)


class MessageIndexApi(APIView):
    """The quarantine browser: the same filters as /messages/, by keyset. Pass `after` (or
    `before`) from the previous answer for the next (or previous) page."""

    permission_classes = [has_perms(VIEW_MESSAGES)]

    class OutputSerializer(serializers.Serializer):
        id = serializers.CharField(source="message_id")
        queue = serializers.CharField()
        original_queue = serializers.CharField()
        state = serializers.CharField()
        delivery_count = serializers.IntegerField()
        candidate = serializers.BooleanField()
        next_attempt_at = serializers.DateTimeField()
        first_failure_at = serializers.DateTimeField()
        last_failure_at = serializers.DateTimeField()
        reason = serializers.CharField()
        exception_type = serializers.CharField()
        group = serializers.CharField(source="group_id")
        sender = serializers.CharField()
        conversation_id = serializers.CharField()
        body_size = serializers.IntegerField()
        content_type = serializers.CharField()
        enqueued_at = serializers.DateTimeField()
        updated_at = serializers.DateTimeField()

    def get(self, request):
        form = MessageFilterForm(request.query_params, page_size_max=API_PAGE_SIZE_MAX)
        if not form.is_valid():
            return Response({"errors": form.errors}, status=status.HTTP_400_BAD_REQUEST)
        data = form.cleaned_data
        filters = form.filters()
        try:
            page = selectors.message_page(
                filters=filters,
                sort=data["sort"],
                after=data["after"],
                before=data["before"],
                size=data.get("page_size") or PAGE_SIZE,
            )
        except selectors.BadCursor as exc:
            return Response({"errors": {"cursor": [str(exc)]}}, status=status.HTTP_400_BAD_REQUEST)
        count = selectors.message_match_count(filters=filters)
        return Response(
            {
                "results": self.OutputSerializer(page.rows, many=True).data,
                "next": page.next_cursor,
                "previous": page.prev_cursor,
                "sort": page.sort,
                "count": {"value": count.count, "more": count.more, "source": count.source},
            }
        )


class _GroupSerializer(serializers.Serializer):
    fingerprint = serializers.CharField()
    queue = serializers.CharField()
    exception_type = serializers.CharField()
    pattern = serializers.CharField()
    count = serializers.IntegerField()
    first_seen = serializers.DateTimeField()
    last_seen = serializers.DateTimeField()
    states = serializers.DictField(child=serializers.IntegerField())


class GroupListApi(APIView):
    permission_classes = [has_perms(VIEW_GROUPS)]

    def get(self, request):
        groups = selectors.group_list(queue=request.query_params.get("queue") or None)
        return Response({"results": _GroupSerializer(groups, many=True).data})


class GroupDetailApi(APIView):
    permission_classes = [has_perms(VIEW_GROUPS)]

    class OutputSerializer(_GroupSerializer):
        frames = serializers.CharField()
        sample_message_id = serializers.CharField()
        sample_reason = serializers.CharField()
        sample_stack = serializers.CharField()

    def get(self, request, fingerprint):
        group = selectors.group_get(fingerprint=fingerprint)
        if group is None:
            raise Http404("no such failure group")
        return Response(self.OutputSerializer(group).data)


class QueueListApi(APIView):
    permission_classes = [has_perms(VIEW_QUEUES, VIEW_STATS)]

    class OutputSerializer(serializers.Serializer):
        name = serializers.CharField()
        exists = serializers.SerializerMethodField()
        enabled = serializers.SerializerMethodField()
        disabled_at = serializers.DateTimeField(source="queue.disabled_at", default=None)
        disabled_reason = serializers.CharField(source="queue.disabled_reason", default="")
        policy = serializers.SerializerMethodField()
        counts = _StateCounts()
        total = serializers.IntegerField()
        stats_at = serializers.DateTimeField()

        def get_exists(self, overview):
            return overview.queue is not None

        def get_enabled(self, overview):
            return overview.queue.enabled if overview.queue else None

        def get_policy(self, overview):
            return dict(overview.policy)

    def get(self, request):
        return Response(
            {"results": self.OutputSerializer(selectors.queue_overview(), many=True).data}
        )


class QueueEnableApi(APIView):
    """R11: an administrator re-enables a queue the engine disabled."""

    permission_classes = [has_perms(CHANGE_QUEUE)]

    def post(self, request, name):
        queue = get_object_or_404(Queue, name=name)
        changed = False
        if not queue.enabled:
            changed = queue_reenable(queue_ids=[queue.id]) == 1
        return Response({"name": queue.name, "enabled": True, "changed": changed})


class StatsApi(APIView):
    """The dashboard's numbers."""

    permission_classes = [has_perms(VIEW_STATS)]

    def get(self, request):
        stats = selectors.dashboard_stats()
        series = selectors.inflow_series()
        groups = selectors.group_list(limit=selectors.TOP_GROUPS)
        return Response(
            {
                "totals": dict(stats["totals"]),
                "queues": {name: dict(counts) for name, counts in stats["per_queue"]},
                "quarantined": stats["quarantined"],
                "updated_at": stats["updated_at"],
                "disabled_queues": [
                    {"name": q.name, "disabled_at": q.disabled_at, "reason": q.disabled_reason}
                    for q in selectors.queues_disabled()
                ],
                "top_groups": _GroupSerializer(groups, many=True).data,
                "inflow": [{"hour": hour, "count": n} for hour, n in series],
            }
        )


class MessageBodyApi(APIView):
    """A message's current body, as bytes, with the raw download's headers."""

    permission_classes = [has_perms(VIEW_MESSAGES, VIEW_BODY)]

    def get(self, request, message_id):
        found = selectors.message_body(message_id=message_id)
        if found is None:
            raise Http404("no such message")
        return raw_body_response(found[0], message_id=message_id)
