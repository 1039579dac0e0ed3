"""/api/v1/queues: every queue with its policy, status and messages by state; and
/api/v1/queues/<name>/enable and /pause: an administrator switches a queue's delivery on or off."""

from django.http import Http404
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api import bad_filters, path_key
from console.permissions import CHANGE_QUEUE, VIEW_QUEUES, VIEW_STATS, has_perms
from console.queues import api_schema, selectors
from console.queues.models import Queue
from console.queues.serializers import QueueOverviewSerializer, QueuePauseSerializer
from console.queues.services import queue_pause, queue_reenable


def _queue_or_404(name):
    queue = Queue.objects.filter(name=path_key(name, not_found="no such queue")).first()
    if queue is None:
        raise Http404("no such queue")
    return queue


class QueueListApi(APIView):
    """Every queue, and every queue name the statistics still hold (`exists` false: it was
    deleted): enabled or not (and why not), its delivery policy, and its messages by state."""

    permission_classes = [has_perms(VIEW_QUEUES, VIEW_STATS)]

    @api_schema.queue_list
    def get(self, request):
        overview = selectors.queue_overview()
        return Response({"results": QueueOverviewSerializer(overview, many=True).data})


class QueueEnableApi(APIView):
    """R11: an administrator re-enables a queue the engine disabled."""

    permission_classes = [has_perms(CHANGE_QUEUE)]

    @api_schema.queue_enable
    def post(self, request, name):
        queue = _queue_or_404(name)
        changed = False
        if not queue.enabled:
            changed = queue_reenable(queue_ids=[queue.id], actor=request.user) == 1
        return Response({"name": queue.name, "enabled": True, "changed": changed})


class QueuePauseApi(APIView):
    """An administrator stops delivery to a queue by hand, until it is re-enabled (`enable`)."""

    permission_classes = [has_perms(CHANGE_QUEUE)]

    @api_schema.queue_pause
    def post(self, request, name):
        queue = _queue_or_404(name)
        data = QueuePauseSerializer(data=request.data)
        if not data.is_valid():
            return bad_filters(data.errors)
        changed = queue_pause(
            queue=queue, actor=request.user, reason=data.validated_data.get("reason", "")
        )
        return Response({"name": queue.name, "enabled": False, "changed": changed})
