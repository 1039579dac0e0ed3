"""How /api/v1/lake-queries stands in the OpenAPI document: each operation's decoration, with
the examples /api/docs/ shows."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema

from console.api import ERRORS, NOT_FOUND, answer, invalid, refused, sent
from console.lakequery import selectors
from console.lakequery import serializers as s

TAGS = ["lake queries"]

NO_CRITERION = "give at least one criterion: a lake query never lists everything"
BAD_INPUT = invalid(
    s.BadInputSerializer,
    "The input is not valid.",
    NO_CRITERION,
    {"criteria": [NO_CRITERION]},
    name="No criterion",
)
NOT_DONE = refused(
    "The query is not done: it has no result yet.", "lake query 12 is running: it has no result yet"
)
FINISHED = refused(
    "The query has finished already.", "lake query 11 has finished already (cancelled)"
)
QUERY_ID = OpenApiParameter(
    "query_id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The query's number."
)

# The examples of /api/docs/.
_CRITERIA = {
    "queues": ["orders"],
    "states": ["NDLV", "DLVD"],
    "json_path": "$.customer.country",
    "json_equals": "FR",
}
_QUERY = {
    "id": 12,
    "status": "done",
    "kind": "search",
    "criteria": {**_CRITERIA, "states": ["DLVD", "NDLV"]},
    "analysis": {},
    "requester": "operator",
    "created_at": "2026-11-27T07:18:42.353371Z",
    "started_at": "2026-11-27T07:18:43.010000Z",
    "heartbeat_at": "2026-11-27T07:19:20.400000Z",
    "finished_at": "2026-11-27T07:19:21.170000Z",
    "progress": 100,
    "scanned": 88,
    "matched": 3,
    "upto": 12,
    "error": "",
}
_QUEUED = {
    **_QUERY,
    "status": "queued",
    "started_at": None,
    "heartbeat_at": None,
    "finished_at": None,
    "progress": 0,
    "scanned": 0,
    "matched": 0,
    "upto": None,
}
_ROW = {
    "message_id": "demo-orders-000008",
    "queue": "orders",
    "state": "NDLV",
    "delivery_count": 1,
    "sender": "web-shop@shop.example",
    "conversation_id": "conv-ORD-100016",
    "enqueued_at": "2026-11-27T06:55:32.984224Z",
    "body_size": 143,
    "reason": "permanent failure: missing field: order_id",
    "updated": "2026-11-27T06:55:45.002047Z",
}


lake_query_list = extend_schema(
    operation_id="lake_queries_list",
    summary="The newest lake queries you may see",
    description="The newest lake queries you may see, newest first, with their status and "
    "progress (those that searched bodies only if you may read bodies).",
    tags=TAGS,
    responses={200: answer(s.LakeQueryListSerializer, {"results": [_QUERY]}), **ERRORS},
)

lake_query_create = extend_schema(
    operation_id="lake_queries_create",
    summary="Run a lake query",
    description="Checks the criteria and queues the query (202); follow it at "
    "/api/v1/lake-queries/{id}. Body criteria need the permission to read bodies.",
    tags=TAGS,
    request=s.CriteriaSerializer,
    examples=[sent(_CRITERIA, "French customers' orders")],
    responses={
        202: answer(s.LakeQuerySerializer, _QUEUED, "Queued."),
        400: BAD_INPUT,
        **ERRORS,
        403: refused(
            "You may not run queries, or search bodies without reading them.",
            "searching bodies reveals what they hold: it needs the permission to read bodies",
        ),
    },
)

lake_query = extend_schema(
    operation_id="lake_queries_retrieve",
    summary="A lake query's status and progress",
    tags=TAGS,
    parameters=[QUERY_ID],
    responses={200: answer(s.LakeQuerySerializer, _QUERY), **ERRORS, 404: NOT_FOUND},
)

lake_query_results = extend_schema(
    operation_id="lake_queries_results",
    summary="A page of a finished lake query's result",
    tags=TAGS,
    parameters=[
        QUERY_ID,
        OpenApiParameter(
            "after",
            OpenApiTypes.STR,
            description="the message id after which the page starts (the `next` of the "
            "previous page)",
        ),
        OpenApiParameter(
            "limit",
            OpenApiTypes.INT,
            description=f"rows, 1 to {selectors.PAGE_SIZE_MAX} (default {selectors.PAGE_SIZE})",
        ),
    ],
    responses={
        200: answer(
            s.ResultPageSerializer,
            {"results": [_ROW], "next": "demo-orders-000008"},
            "a page of the result, by message id",
        ),
        400: BAD_INPUT,
        **ERRORS,
        404: NOT_FOUND,
        409: NOT_DONE,
    },
)

lake_query_cancel = extend_schema(
    operation_id="lake_queries_cancel",
    summary="Cancel a lake query",
    tags=TAGS,
    parameters=[QUERY_ID],
    request=None,
    responses={
        200: answer(
            s.LakeQuerySerializer,
            {**_QUEUED, "status": "cancelled", "finished_at": "2026-11-27T07:18:46.366560Z"},
        ),
        **ERRORS,
        404: NOT_FOUND,
        409: FINISHED,
    },
)


_WHY = {
    **_QUEUED,
    "kind": "why",
    "criteria": {
        "group": "f" * 64,
        "queue": "orders",
        "since": "2026-11-27T06:55:44.944980+00:00",
        "until": "2026-11-27T07:41:02.101200+00:00",
    },
}

why_fail_create = extend_schema(
    operation_id="groups_why_create",
    summary="Ask why a failure group's messages fail",
    description="Queues a lake query (202) that compares the group's messages with the messages "
    "of its queue delivered in its period, and ranks what sets them apart (JSON fields present "
    "or absent, their values, headers, content types, producers, sizes) by how much more often "
    "it occurs among the failures. Follow it at /api/v1/lake-queries/{id}: its `analysis` holds "
    "the findings. Needs the permissions to run queries and to read bodies.",
    tags=TAGS,
    parameters=[
        OpenApiParameter(
            "fingerprint", OpenApiTypes.STR, OpenApiParameter.PATH, description="The group's."
        )
    ],
    request=None,
    responses={
        202: answer(s.LakeQuerySerializer, _WHY, "Queued."),
        400: BAD_INPUT,
        **ERRORS,
        403: refused(
            "You may not run queries, or read bodies.",
            "comparing the fields of failed and delivered bodies reveals what they hold: it "
            "needs the permissions to read bodies and failure groups",
        ),
        404: NOT_FOUND,
    },
)
