"""/api/v1/lake-queries: run a lake query, follow its progress, page its result, cancel it.
The same permissions as the screens; a query that searched bodies is seen only by those who may
read bodies."""

from django.core.exceptions import ValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api import ERRORS, NOT_FOUND, JSONParser, answer, refused, sent
from console.lakequery import selectors, services
from console.lakequery.models import LakeQuery
from console.lakequery.views import query_or_404
from console.permissions import VIEW_QUERIES, has_perms
from workers.engine.states import STATES

TAGS = ["lake queries"]


@extend_schema_serializer(component_name="LakeQueryBadInput")
class BadInputSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="Why, in one sentence.")
    errors = serializers.JSONField(
        required=False,
        help_text="The messages by field (`criteria` for the criteria as a whole; a list's by "
        "item), when fields were not valid.",
    )


BAD_INPUT = OpenApiResponse(
    BadInputSerializer,
    description="The input is not valid.",
    examples=[
        OpenApiExample(
            "No criterion",
            value={
                "detail": "give at least one criterion: a lake query never lists everything",
                "errors": {
                    "criteria": ["give at least one criterion: a lake query never lists everything"]
                },
            },
        )
    ],
)
NOT_DONE = refused(
    "The query is not done: it has no result yet.", "lake query 12 is running: it has no result yet"
)
FINISHED = refused(
    "The query has finished already.", "lake query 11 has finished already (cancelled)"
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
    "criteria": {**_CRITERIA, "states": ["DLVD", "NDLV"]},
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


@extend_schema_serializer(component_name="LakeQuery")
class LakeQuerySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    # Text, not an enum: another "status" enum (action requests') would collide with it.
    status = serializers.CharField(help_text="queued, running, done, failed or cancelled")
    criteria = serializers.DictField()
    requester = serializers.CharField(source="requester.username")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    heartbeat_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    progress = serializers.IntegerField(help_text="0 to 100")
    scanned = serializers.IntegerField(help_text="messages looked at: every message in the lake")
    matched = serializers.IntegerField()
    upto = serializers.IntegerField(
        allow_null=True, help_text="the last events commit the query folded"
    )
    error = serializers.CharField()


@extend_schema_serializer(component_name="LakeQueryResultRow")
class ResultRowSerializer(serializers.Serializer):
    message_id = serializers.CharField()
    queue = serializers.CharField()
    state = serializers.CharField()
    delivery_count = serializers.IntegerField()
    sender = serializers.CharField(allow_null=True)
    conversation_id = serializers.CharField(allow_null=True)
    enqueued_at = serializers.DateTimeField(allow_null=True)
    body_size = serializers.IntegerField()
    reason = serializers.CharField(allow_null=True, help_text="of its latest event")
    updated = serializers.DateTimeField(help_text="time of its latest event")


QUERY_ID = OpenApiParameter(
    "query_id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The query's number."
)


def _bad_input(detail, errors):
    return Response({"detail": detail, "errors": errors}, status=status.HTTP_400_BAD_REQUEST)


class LakeQueryListApi(APIView):
    """GET: the newest queries you may see. POST: run a query (202: it is queued; follow it at
    /api/v1/lake-queries/<id>)."""

    permission_classes = [has_perms(VIEW_QUERIES)]
    # JSON only: the criteria hold lists, which a form says poorly.
    parser_classes = [JSONParser]

    @extend_schema_serializer(component_name="LakeQueryCriteria")
    class InputSerializer(serializers.Serializer):
        queues = serializers.ListField(child=serializers.CharField(), required=False)
        states = serializers.ListField(
            child=serializers.ChoiceField(choices=STATES), required=False
        )
        sender = serializers.CharField(required=False, allow_blank=True)
        conversation_id = serializers.CharField(required=False, allow_blank=True)
        message_id_prefix = serializers.CharField(required=False, allow_blank=True)
        enqueued_from = serializers.DateTimeField(required=False, allow_null=True)
        enqueued_to = serializers.DateTimeField(required=False, allow_null=True)
        # Whitespace is part of what is searched for: kept as sent.
        body_contains = serializers.CharField(
            required=False, allow_blank=True, trim_whitespace=False
        )
        body_regex = serializers.CharField(
            required=False,
            allow_blank=True,
            trim_whitespace=False,
            help_text="a Java regular expression, found anywhere in the body",
        )
        json_path = serializers.CharField(
            required=False, allow_blank=True, help_text="$.a.b or $.a[0].b"
        )
        json_equals = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
        header_name = serializers.CharField(required=False, allow_blank=True)
        header_value = serializers.CharField(
            required=False, allow_blank=True, trim_whitespace=False
        )

        def validate(self, data):
            unknown = sorted(set(self.initial_data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    f"unknown criterion {', '.join(map(repr, unknown))}"
                )
            return data

    @extend_schema_serializer(component_name="LakeQueryList")
    class OutputSerializer(serializers.Serializer):
        results = LakeQuerySerializer(many=True)

    @extend_schema(
        operation_id="lake_queries_list",
        summary="The newest lake queries you may see",
        description="The newest lake queries you may see, newest first, with their status and "
        "progress (those that searched bodies only if you may read bodies).",
        tags=TAGS,
        responses={200: answer(OutputSerializer, {"results": [_QUERY]}), **ERRORS},
    )
    def get(self, request):
        queries = selectors.lake_query_list(user=request.user)
        return Response(self.OutputSerializer({"results": queries}).data)

    @extend_schema(
        operation_id="lake_queries_create",
        summary="Run a lake query",
        description="Checks the criteria and queues the query (202); follow it at "
        "/api/v1/lake-queries/{id}. Body criteria need the permission to read bodies.",
        tags=TAGS,
        request=InputSerializer,
        examples=[sent(_CRITERIA, "French customers' orders")],
        responses={
            202: answer(LakeQuerySerializer, _QUEUED, "Queued."),
            400: BAD_INPUT,
            **ERRORS,
            403: refused(
                "You may not run queries, or search bodies without reading them.",
                "searching bodies reveals what they hold: it needs the permission to read bodies",
            ),
        },
    )
    def post(self, request):
        serializer = self.InputSerializer(data=request.data)
        if not serializer.is_valid():
            return _bad_input("the criteria are not valid", serializer.errors)
        try:
            query = services.lake_query_create(
                actor=request.user, criteria=serializer.validated_data
            )
        except ValidationError as exc:
            return _bad_input(exc.messages[0], {"criteria": exc.messages})
        return Response(LakeQuerySerializer(query).data, status=status.HTTP_202_ACCEPTED)


class LakeQueryDetailApi(APIView):
    """One query: its status and progress (what the query page polls)."""

    permission_classes = [has_perms(VIEW_QUERIES)]

    @extend_schema(
        operation_id="lake_queries_retrieve",
        summary="A lake query's status and progress",
        tags=TAGS,
        parameters=[QUERY_ID],
        responses={200: answer(LakeQuerySerializer, _QUERY), **ERRORS, 404: NOT_FOUND},
    )
    def get(self, request, query_id):
        return Response(LakeQuerySerializer(query_or_404(request.user, query_id)).data)


class LakeQueryResultsApi(APIView):
    """A finished query's result, by message id: pass `next` of one answer as `after` of the
    next request. Sorted by message_id."""

    permission_classes = [has_perms(VIEW_QUERIES)]

    class InputSerializer(serializers.Serializer):
        after = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
        limit = serializers.IntegerField(
            required=False, min_value=1, max_value=selectors.PAGE_SIZE_MAX
        )

    @extend_schema_serializer(component_name="LakeQueryResultPage")
    class OutputSerializer(serializers.Serializer):
        results = ResultRowSerializer(many=True)
        next = serializers.CharField(
            allow_null=True, help_text="pass as `after` for the next page; null at the end"
        )

    @extend_schema(
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
                OutputSerializer,
                {
                    "results": [
                        {
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
                    ],
                    "next": "demo-orders-000008",
                },
                "a page of the result, by message id",
            ),
            400: BAD_INPUT,
            **ERRORS,
            404: NOT_FOUND,
            409: NOT_DONE,
        },
    )
    def get(self, request, query_id):
        query = query_or_404(request.user, query_id)
        params = self.InputSerializer(data=request.query_params)
        if not params.is_valid():
            return _bad_input("the paging parameters are not valid", params.errors)
        if query.status != LakeQuery.DONE:
            return Response(
                {"detail": f"lake query {query.id} is {query.status}: it has no result yet"},
                status=status.HTTP_409_CONFLICT,
            )
        page = selectors.lake_query_results(
            query=query,
            after=params.validated_data.get("after") or None,
            limit=params.validated_data.get("limit") or selectors.PAGE_SIZE,
        )
        return Response(self.OutputSerializer({"results": page.rows, "next": page.next_after}).data)


class LakeQueryCancelApi(APIView):
    """Stop a query that has not finished (its requester, or someone who may stop any)."""

    permission_classes = [has_perms(VIEW_QUERIES)]

    @extend_schema(
        operation_id="lake_queries_cancel",
        summary="Cancel a lake query",
        tags=TAGS,
        parameters=[QUERY_ID],
        request=None,
        responses={
            200: answer(
                LakeQuerySerializer,
                {**_QUEUED, "status": "cancelled", "finished_at": "2026-11-27T07:18:46.366560Z"},
            ),
            **ERRORS,
            404: NOT_FOUND,
            409: FINISHED,
        },
    )
    def post(self, request, query_id):
        query = query_or_404(request.user, query_id)
        try:
            query = services.lake_query_cancel(actor=request.user, query=query)
        except ValidationError as exc:
            return Response({"detail": exc.messages[0]}, status=status.HTTP_409_CONFLICT)
        return Response(LakeQuerySerializer(query).data)
