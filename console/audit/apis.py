"""/api/v1/audit: the audit trail, with the screen's filters and permissions, and its CSV export."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api import BAD_FILTERS, ERRORS, answer, bad_filters
from console.audit import selectors
from console.audit.exports import audit_csv_response
from console.audit.forms import API_PAGE_SIZE_MAX, filters_error
from console.permissions import EXPORT_AUDIT, VIEW_AUDIT, has_perms


class _FilterSerializer(serializers.Serializer):
    actor = serializers.CharField(
        required=False, allow_blank=True, max_length=150, help_text="The actor, exactly."
    )
    actor_contains = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=150,
        help_text="A part of the actor's name, in any case.",
    )
    action = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=61,
        help_text='The action, exactly; or a prefix when it ends in "." or "*" ("request.").',
    )
    target_type = serializers.CharField(required=False, allow_blank=True, max_length=60)
    target_id = serializers.CharField(required=False, allow_blank=True, max_length=300)
    since = serializers.DateTimeField(required=False, help_text="Entries at or after this time.")
    until = serializers.DateTimeField(required=False, help_text="Entries before this time.")

    def validate(self, data):
        error = filters_error(data)
        if error:
            raise serializers.ValidationError(error)
        return data


class _EntrySerializer(serializers.Serializer):
    seq = serializers.IntegerField()
    at = serializers.DateTimeField()
    actor = serializers.CharField()
    action = serializers.CharField()
    target_type = serializers.CharField()
    target_id = serializers.CharField()
    details = serializers.JSONField()
    prev_hash = serializers.CharField()
    hash = serializers.CharField()

    class Meta:
        ref_name = "AuditEntry"


_ENTRY = {
    "seq": 396,
    "at": "2026-11-27T07:16:36.994204Z",
    "actor": "operator",
    "action": "request.created",
    "target_type": "request",
    "target_id": "1",
    "details": {
        "action": "reprocess",
        "count": 1,
        "ids_sha256": "b6ea7519a1eb8b837875f920c738b146501f27b747f4fbf23097d70989cb4012",
        "scope": {"kind": "message", "id": "demo-orders-000008"},
        "comment": "order_id is back in the schema",
    },
    "prev_hash": "6d9b808d02174337f397366cd4fcb4ecb2b87a2b0343703d8d6ebfd34218eabe",
    "hash": "6de443cb1569fefd1aeaf80a03da76df96d412896acdf7832b847d6c58d28b07",
}
_CSV = (
    "seq,at,actor,action,target_type,target_id,details,prev_hash,hash\r\n"
    "396,2026-11-27T07:16:36.994204+00:00,operator,request.created,request,1,"
    '"{""action"": ""reprocess"", ""count"": 1}",6d9b808d...,6de443cb...\r\n'
)


class AuditListApi(APIView):
    """The audit trail, newest first, by keyset on seq. Pass `after` (or `before`) from the
    previous answer's `next` (or `previous`) for the older (or newer) page."""

    permission_classes = [has_perms(VIEW_AUDIT)]

    class InputSerializer(_FilterSerializer):
        after = serializers.IntegerField(
            required=False, min_value=0, help_text="Entries older than this seq."
        )
        before = serializers.IntegerField(
            required=False, min_value=0, help_text="Entries newer than this seq."
        )
        page_size = serializers.IntegerField(
            required=False, min_value=1, max_value=API_PAGE_SIZE_MAX, default=selectors.PAGE_SIZE
        )

    class OutputSerializer(serializers.Serializer):
        results = _EntrySerializer(many=True, source="rows")
        next = serializers.IntegerField(
            source="next_cursor", allow_null=True, help_text="`after` for the next (older) page."
        )
        previous = serializers.IntegerField(
            source="prev_cursor",
            allow_null=True,
            help_text="`before` for the previous (newer) page.",
        )

        class Meta:
            ref_name = "AuditPage"

    @extend_schema(
        operation_id="audit_list",
        parameters=[InputSerializer],
        responses={
            200: answer(OutputSerializer, {"results": [_ENTRY], "next": 395, "previous": None}),
            400: BAD_FILTERS,
            **ERRORS,
        },
    )
    def get(self, request):
        params = self.InputSerializer(data=request.query_params)
        if not params.is_valid():
            return bad_filters(params.errors)
        data = params.validated_data
        page = selectors.audit_page(
            filters=selectors.filters_from(data),
            after=data.get("after"),
            before=data.get("before"),
            size=data["page_size"],
        )
        return Response(self.OutputSerializer(page).data)


class AuditExportApi(APIView):
    """Every matching entry as CSV, oldest first: seq, at, actor, action, target_type, target_id,
    details (JSON), prev_hash, hash. The export itself is recorded in the trail first."""

    permission_classes = [has_perms(VIEW_AUDIT, EXPORT_AUDIT)]

    def perform_content_negotiation(self, request, force=False):
        # The export is CSV whatever the client accepts (JSON only for a refusal): a client that
        # asks for text/csv gets it, not a 406.
        return super().perform_content_negotiation(request, force=True)

    @extend_schema(
        operation_id="audit_export",
        parameters=[_FilterSerializer],
        responses={
            (200, "text/csv"): OpenApiResponse(
                OpenApiTypes.STR,
                description="The matching entries, as an attachment.",
                examples=[OpenApiExample("CSV", value=_CSV)],
            ),
            400: BAD_FILTERS,
            **ERRORS,
        },
    )
    def get(self, request):
        params = _FilterSerializer(data=request.query_params)
        if not params.is_valid():
            return bad_filters(params.errors)
        filters = selectors.filters_from(params.validated_data)
        return audit_csv_response(actor=request.user, filters=filters, via="api")
