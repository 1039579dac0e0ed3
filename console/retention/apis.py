"""/api/v1/purges: run a purge of the final messages past their queue's retention, or preview
one (R15), follow it, list them, and read a purge's id list. Running one is for administrators;
administrators and auditors see them."""

from django.core.exceptions import ValidationError
from django.http import Http404, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api import ERRORS, NOT_FOUND, answer, refused, sent
from console.permissions import RUN_PURGES, VIEW_PURGES, has_perms
from console.retention import selectors
from console.retention.models import PurgeRun
from console.retention.services import PurgeBusy, purge_create
from console.retention.tasks import purge_enqueue

TAGS = ["purges"]
PURGE_ID = OpenApiParameter(
    "purge_id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The purge's number."
)


@extend_schema_serializer(component_name="PurgeQueueCount")
class QueueCountSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    sha256 = serializers.CharField(help_text="SHA-256 of the queue's ids, sorted, one a line")


@extend_schema_serializer(component_name="Purge")
class PurgeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    # Text, not an enum: another "status" enum (action requests') would collide with it.
    status = serializers.CharField(help_text="queued, running, done or failed")
    dry_run = serializers.BooleanField(help_text="a preview: counts what would go, changes nothing")
    queue = serializers.CharField(help_text="the queue it was limited to; empty for every queue")
    requested_by = serializers.CharField(help_text='a username, "system" or "manage.py purge"')
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    heartbeat_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    now = serializers.DateTimeField(
        allow_null=True,
        help_text="the clock it purged by: messages final before now - retention_days went",
    )
    total = serializers.IntegerField(help_text="messages purged (or, for a preview, purgeable)")
    ids_sha256 = serializers.CharField(help_text="SHA-256 of the ids, sorted, one a line")
    counts = serializers.DictField(child=QueueCountSerializer(), help_text="by queue")
    events_upto = serializers.IntegerField(allow_null=True, help_text="last events commit read")
    messages_upto = serializers.IntegerField(allow_null=True, help_text="last messages commit read")
    lake_changes = serializers.DictField(
        child=serializers.DictField(child=serializers.IntegerField()),
        help_text="lake commits rewritten and retired, by dataset",
    )
    dirs_deleted_at = serializers.DateTimeField(
        allow_null=True, help_text="when the directories it swapped out were deleted"
    )
    error = serializers.CharField()


# The examples of /api/docs/.
_PURGE = {
    "id": 8,
    "status": "done",
    "dry_run": False,
    "queue": "",
    "requested_by": "admin",
    "created_at": "2026-11-27T03:00:00.000000Z",
    "started_at": "2026-11-27T03:00:01.120000Z",
    "heartbeat_at": "2026-11-27T03:00:41.500000Z",
    "finished_at": "2026-11-27T03:00:42.010000Z",
    "now": "2026-11-27T03:00:01.120000Z",
    "total": 1204,
    "ids_sha256": "5f2b6e1f0c8a5b8cd0e9a3b0f3a4b1e2c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4",
    "counts": {
        "orders": {
            "count": 1204,
            "sha256": "5f2b6e1f0c8a5b8cd0e9a3b0f3a4b1e2c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4",
        }
    },
    "events_upto": 412,
    "messages_upto": 97,
    "lake_changes": {"messages": {"rewritten": 3, "retired": 3}},
    "dirs_deleted_at": None,
    "error": "",
}
_QUEUED = {
    **_PURGE,
    "status": "queued",
    "dry_run": True,
    "queue": "orders",
    "started_at": None,
    "heartbeat_at": None,
    "finished_at": None,
    "now": None,
    "total": 0,
    "ids_sha256": "",
    "counts": {},
    "events_upto": None,
    "messages_upto": None,
    "lake_changes": {},
}


def purge_or_404(purge_id):
    """The purge, or 404 for an id that is unknown, not a number, or too big for one."""
    try:
        number = int(purge_id)
    except (TypeError, ValueError):
        number = 0
    purge = selectors.purge_get(purge_id=number) if 0 < number < 2**63 else None
    if purge is None:
        raise Http404("no such purge")
    return purge


class PurgeListApi(APIView):
    """GET: the newest purges and previews. POST: run a purge, or preview one (202: it is
    queued; follow it at /api/v1/purges/<id>)."""

    def get_permissions(self):
        wanted = RUN_PURGES if self.request.method == "POST" else VIEW_PURGES
        return [has_perms(wanted)()]

    @extend_schema_serializer(component_name="PurgeRequest")
    class InputSerializer(serializers.Serializer):
        dry_run = serializers.BooleanField(
            required=False, default=False, help_text="only count and hash what would go"
        )
        queue = serializers.CharField(
            required=False, allow_blank=True, default="", help_text="only this queue's messages"
        )

    @extend_schema_serializer(component_name="PurgeList")
    class OutputSerializer(serializers.Serializer):
        results = PurgeSerializer(many=True)

    @extend_schema(
        operation_id="purges_list",
        summary="The newest purges and previews",
        description="The newest purges and previews, newest first, each with its status and, "
        "once done, what it purged (counts and hashes by queue). Administrators and auditors.",
        tags=TAGS,
        responses={200: answer(OutputSerializer, {"results": [_PURGE]}), **ERRORS},
    )
    def get(self, request):
        return Response(self.OutputSerializer({"results": selectors.purge_list()}).data)

    @extend_schema(
        operation_id="purges_create",
        summary="Purge the final messages past their retention, or preview it",
        description="Queues a purge (202) of the messages in a final state (DLVD, FAIL, ENDED) "
        "whose queue's retention_days have passed since they became final; with dry_run, a "
        "preview that only counts and hashes them. Follow it at /api/v1/purges/{id}.",
        tags=TAGS,
        request=InputSerializer,
        examples=[sent({"dry_run": True, "queue": "orders"}, "A preview of one queue")],
        responses={
            202: answer(PurgeSerializer, _QUEUED, "Queued."),
            400: refused("The input is not valid.", "there is no queue 'ordres'"),
            409: refused(
                "A purge is queued or running.",
                "a purge is queued or running; try again when it has ended",
            ),
            **ERRORS,
        },
    )
    def post(self, request):
        serializer = self.InputSerializer(data=request.data)
        if not serializer.is_valid():
            first = next(iter(serializer.errors.items()))
            return Response(
                {"detail": f"{first[0]}: {first[1][0]}"}, status=status.HTTP_400_BAD_REQUEST
            )
        try:
            purge = purge_create(
                actor=request.user,
                dry_run=serializer.validated_data["dry_run"],
                queue=serializer.validated_data["queue"],
                enqueue=purge_enqueue,
            )
        except ValidationError as exc:
            return Response({"detail": exc.messages[0]}, status=status.HTTP_400_BAD_REQUEST)
        except PurgeBusy as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(PurgeSerializer(purge).data, status=status.HTTP_202_ACCEPTED)


class PurgeDetailApi(APIView):
    """One purge: its status and, once done, what it purged."""

    permission_classes = [has_perms(VIEW_PURGES)]

    @extend_schema(
        operation_id="purges_retrieve",
        summary="A purge's status and what it purged",
        tags=TAGS,
        parameters=[PURGE_ID],
        responses={200: answer(PurgeSerializer, _PURGE), **ERRORS, 404: NOT_FOUND},
    )
    def get(self, request, purge_id):
        return Response(PurgeSerializer(purge_or_404(purge_id)).data)


class PurgeIdsApi(APIView):
    """The ids a finished purge purged (a preview: would purge), sorted, one a line: the text
    whose SHA-256 is its ids_sha256."""

    permission_classes = [has_perms(VIEW_PURGES)]

    def perform_content_negotiation(self, request, force=False):
        # The list is text whatever the client accepts (JSON only for a refusal).
        return super().perform_content_negotiation(request, force=True)

    @extend_schema(
        operation_id="purges_ids",
        summary="The ids a purge purged",
        tags=TAGS,
        parameters=[PURGE_ID],
        responses={
            (200, "text/plain"): answer(
                OpenApiTypes.STR,
                "demo-orders-000001\ndemo-orders-000002\ndemo-orders-000005\n",
                "The ids, sorted, one a line.",
            ),
            404: NOT_FOUND,
            409: refused("The purge has not finished.", "purge 8 is running: it has no id list"),
            **ERRORS,
        },
    )
    def get(self, request, purge_id):
        purge = purge_or_404(purge_id)
        if purge.status != PurgeRun.DONE:
            return Response(
                {"detail": f"purge {purge.id} is {purge.status}: it has no id list"},
                status=status.HTTP_409_CONFLICT,
            )
        response = StreamingHttpResponse(
            selectors.purge_ids_lines(purge=purge), content_type="text/plain; charset=utf-8"
        )
        response["Content-Disposition"] = f'attachment; filename="purge-{purge.id}-ids.txt"'
        return response
