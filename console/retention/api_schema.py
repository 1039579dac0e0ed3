"""How /api/v1/purges stands in the OpenAPI document: each operation's decoration, with the
examples /api/docs/ shows."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema

from console.api import ERRORS, NOT_FOUND, answer, refused, sent
from console.retention import serializers as s

TAGS = ["purges"]
PURGE_ID = OpenApiParameter(
    "purge_id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The purge's number."
)

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


purge_list = extend_schema(
    operation_id="purges_list",
    summary="The newest purges and previews",
    description="The newest purges and previews, newest first, each with its status and, "
    "once done, what it purged (counts and hashes by queue). Administrators and auditors.",
    tags=TAGS,
    responses={200: answer(s.PurgeListSerializer, {"results": [_PURGE]}), **ERRORS},
)

purge_create = extend_schema(
    operation_id="purges_create",
    summary="Purge the final messages past their retention, or preview it",
    description="Queues a purge (202) of the messages in a final state (DLVD, FAIL, ENDED) "
    "whose queue's retention_days have passed since they became final; with dry_run, a "
    "preview that only counts and hashes them. Follow it at /api/v1/purges/{id}.",
    tags=TAGS,
    request=s.PurgeRequestSerializer,
    examples=[sent({"dry_run": True, "queue": "orders"}, "A preview of one queue")],
    responses={
        202: answer(s.PurgeSerializer, _QUEUED, "Queued."),
        400: refused("The input is not valid.", "there is no queue 'ordres'"),
        409: refused(
            "A purge is queued or running.",
            "a purge is queued or running; try again when it has ended",
        ),
        **ERRORS,
    },
)

purge = extend_schema(
    operation_id="purges_retrieve",
    summary="A purge's status and what it purged",
    tags=TAGS,
    parameters=[PURGE_ID],
    responses={200: answer(s.PurgeSerializer, _PURGE), **ERRORS, 404: NOT_FOUND},
)

purge_ids = extend_schema(
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
