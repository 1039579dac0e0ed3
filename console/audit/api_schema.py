"""How /api/v1/audit stands in the OpenAPI document: each operation's decoration, with the
examples /api/docs/ shows."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema

from console.api import BAD_FILTERS, ERRORS, answer
from console.audit import serializers as s

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


audit_list = extend_schema(
    operation_id="audit_list",
    parameters=[s.PageFilterSerializer],
    responses={
        200: answer(s.PageSerializer, {"results": [_ENTRY], "next": 395, "previous": None}),
        400: BAD_FILTERS,
        **ERRORS,
    },
)

audit_export = extend_schema(
    operation_id="audit_export",
    parameters=[s.FilterSerializer],
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
