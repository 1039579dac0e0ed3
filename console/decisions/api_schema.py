"""The schema of /api/v1/requests and /api/v1/notifications (console.decisions.apis): the
examples /api/docs/ shows (what to send, and what comes back, for a reprocess of one message),
and the drf-spectacular decorations the views wear, one per operation."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers

from console.api import (
    BAD_REQUEST,
    ERRORS,
    NOT_FOUND,
    BadRequestSerializer,
    answer,
    page_answer,
)
from console.decisions.edit_serializers import PatchPreviewSerializer
from console.decisions.outcome_serializers import (
    NotificationFilterSerializer,
    NotificationSerializer,
    OutcomeFilterSerializer,
    OutcomeMessageSerializer,
    OutcomeSerializer,
)
from console.decisions.serializers import (
    BreakGlassSerializer,
    CommentSerializer,
    PatchPreviewInputSerializer,
    RequestCreateSerializer,
    RequestFilterSerializer,
    RequestQuerySerializer,
    RequestSerializer,
    RequestSummarySerializer,
    ReviewSerializer,
)

# --- Examples -------------------------------------------------------------------------------------


_IDS_SHA256 = "b6ea7519a1eb8b837875f920c738b146501f27b747f4fbf23097d70989cb4012"
_GROUP = "0b5baa0aee0ee9f1f5bd28204fd36cf44fa68eaf8a8722923519a6e34fbbae50"

CREATE = OpenApiExample(
    "Reprocess a failure group",
    value={
        "action": "reprocess",
        "scope": {"kind": "group", "group": _GROUP},
        "comment": "order_id is back in the shop's schema (SHOP-231)",
    },
    request_only=True,
)
CREATE_ELSEWHERE = OpenApiExample(
    "Reprocess to another RabbitMQ exchange and routing key",
    description="A redrive target of the request's own, instead of each message's origin (the "
    'default); a second person always approves it. Other brokers: {"subject": ...} (NATS), '
    '{"stream": ...} (Redis), {"url": "https://..."} (HTTP).',
    value={
        "action": "reprocess",
        "scope": {"kind": "group", "group": _GROUP},
        "target_queue": "orders.redrive",
        "redrive_target": {"exchange": "orders", "routing_key": "orders.retry"},
        "comment": "the new order service listens on orders.retry (SHOP-240)",
    },
    request_only=True,
)
_PATCH = [{"op": "add", "path": "/currency", "value": "EUR"}]
CREATE_BULK_EDIT = OpenApiExample(
    "Edit a failure group in bulk, then reprocess it",
    description="A JSON Patch (RFC 6902) of each message's body: each edited body is stored as a "
    "new version, the original kept. Preview it first (`POST /api/v1/requests/patch-preview`); "
    "a second person always approves it.",
    value={
        "action": "reprocess",
        "scope": {"kind": "group", "group": _GROUP},
        "patch": _PATCH,
        "comment": "the shop forgot the currency; every order of the group is in euros (SHOP-245)",
    },
    request_only=True,
)
CREATE_HEADERS = OpenApiExample(
    "Reprocess one message with its body and a header edited",
    value={
        "action": "reprocess",
        "scope": {"kind": "message", "id": "demo-orders-000008"},
        "edited_body": '{"order_id": "A-8", "currency": "EUR"}',
        "edited_headers": {"x-trace": "SHOP-245", "x-tenant": "shop"},
        "comment": "order_id and the trace were lost on the way (SHOP-245)",
    },
    request_only=True,
)
PREVIEW_ASKED = OpenApiExample(
    "Preview a bulk edit",
    value={"scope": {"kind": "group", "group": _GROUP}, "patch": _PATCH},
    request_only=True,
)
_PREVIEW_ROW = {
    "message_id": "demo-orders-000008",
    "queue": "orders",
    "content_type": "application/json",
    "body_version": 1,
    "applies": True,
    "refused": False,
    "reason": "",
    "size_before": 22,
    "size_after": 39,
    "diff": None,
}
PREVIEW = {
    "patch_sha256": "5d4b0fbd2cd0e8ba44a4a9ffdf4b3a2f0a6ff7b8e3a1a4a0f5f2f0d2e9f8c7b6",
    "rows": [
        _PREVIEW_ROW,
        {
            **_PREVIEW_ROW,
            "message_id": "demo-orders-000011",
            "applies": False,
            "reason": "the body is not JSON: Expecting value at line 1, column 1",
            "size_before": 9,
            "size_after": None,
        },
    ],
    "failing": 1,
    "refused": "",
}
COMMENT = OpenApiExample(
    "With a comment",
    value={"comment": "checked the sample: all 12 lack order_id"},
    request_only=True,
)
BREAK_GLASS = OpenApiExample(
    "Break the glass",
    value={
        "reason": "orders are piling up and the second approver is unreachable",
        "confirm": True,
    },
    request_only=True,
)
REVIEW = OpenApiExample(
    "Disagree",
    value={"agrees": False, "comment": "this could have waited an hour"},
    request_only=True,
)
_REFUSED = OpenApiExample(
    "Decided already", value={"detail": "request 7 is no longer waiting for approval"}
)

PROGRESS = {
    "percent": 0,
    "done": 0,
    "skipped": 0,
    "failed": 0,
    "chunks_done": 0,
    "chunks_total": 0,
    "siblings_ended": 0,
    "notifications": 0,
}
SUMMARY = {
    "id": 7,
    "action": "reprocess",
    "status": "pending",
    "count": 12,
    "ids_sha256": _IDS_SHA256,
    "requester": "operator",
    "created_at": "2026-11-27T07:16:36.993273Z",
    "comment": "order_id is back in the shop's schema (SHOP-231)",
    "needs_approval": True,
    "approval_reason": "It covers 12 messages, more than the 1 message one person may decide "
    "alone: a second person must approve it.",
    "decided_by": None,
    "decided_at": None,
    "expires_at": None,
    "progress": PROGRESS,
    "url": "/api/v1/requests/7",
}
REQUEST = OpenApiExample(
    "A pending request",
    value={
        **SUMMARY,
        "scope": {"kind": "group", "group": _GROUP},
        "target_queue": "",
        "redrive_target": None,
        "error_code": "",
        "error_description": "",
        "rate_limit": None,
        "canary": 0,
        "steps": [],
        "refailure_threshold": 0.0,
        "step_now": None,
        "progression": [],
        "edited_body_size": None,
        "edited_body_sha256": None,
        "edited_body_base64": None,
        "edited_headers": None,
        "header_changes": None,
        "patch": None,
        "patch_sha256": None,
        "patch_preview": [],
        "edit_failures": [],
        "breakdown": {"queues": {"orders": 12}, "groups": {_GROUP: 12}},
        "sample": [
            {
                "message_id": "demo-orders-000008",
                "queue": "orders",
                "reason": "permanent failure: missing field: order_id",
                "last_failure_at": "2026-11-27T06:55:44.944980Z",
            }
        ],
        "ids": "/api/v1/requests/7/ids",
        "outcome": None,
        "decision_comment": "",
        "break_glass_by": None,
        "break_glass_at": None,
        "break_glass_reason": "",
        "review_due_at": None,
        "review_overdue": False,
        "reviewed_by": None,
        "reviewed_at": None,
        "review_agrees": None,
        "review_comment": "",
        "started_at": None,
        "finished_at": None,
        "cancel_requested": False,
        "cancelled_by": None,
        "canary_result": "",
        "error": "",
        "audit": [
            {
                "seq": 396,
                "at": "2026-11-27T07:16:36.994204Z",
                "actor": "operator",
                "action": "request.created",
                "details": {"action": "reprocess", "count": 12, "ids_sha256": _IDS_SHA256},
            }
        ],
        "overlaps": [
            {"request": 5, "status": "approved", "shared": 2, "url": "/api/v1/requests/5"}
        ],
        "overlaps_total": 2,
        "overlaps_not_compared": 0,
        "overlaps_unknown": [],
    },
    response_only=True,
)
PAGE = {"results": [SUMMARY], "next_before": 6}
IDS = "demo-orders-000008\ndemo-orders-000011\ndemo-orders-000019\n"
OUTCOME = {
    "request": 7,
    "total": 12,
    "counts": {
        "delivered": 9,
        "failed_again": 2,
        "pending": 1,
        "final": 0,
        "gone": 0,
        "skipped": 0,
        "not_reached": 0,
    },
    "states": {"DLVD": 9, "NDLV": 2, "TBDL": 1},
    "reasons": [
        {
            "exception_type": "PermanentFailure",
            "group_id": _GROUP,
            "pattern": "permanent failure: missing field: order_id",
            "waiting": 0,
            "quarantined": 2,
        }
    ],
    "more_reasons": 0,
    "retryable": 2,
    "refreshed": {"id": 31, "finished_at": "2026-11-27T08:01:00Z", "upto_commit": 57},
    "unfolded_commits": 0,
    "unreadable_chunks": [],
}
OUTCOME_PAGE = {
    "results": [
        {
            "message_id": "demo-orders-000011",
            "indexed": True,
            "queue": "orders",
            "state": "NDLV",
            "delivery_count": 2,
            "last_failure_at": "2026-11-27T08:00:12Z",
            "exception_type": "PermanentFailure",
            "reason": "permanent failure: missing field: order_id",
        }
    ],
    "next_after": None,
}
NOTIFICATIONS = {
    "results": [
        {
            "message_id": "demo-payments-000003",
            "conversation_id": "conv-ORD-100003",
            "sender": "web-shop@shop.example",
            "code": "PAYMENT_REFUSED",
            "description": "the card issuer refused the payment; ask the customer for another card",
            "at": "2026-11-27T08:10:00Z",
            "run_id": "42",
        }
    ],
    "next_before": None,
}


# The examples the serializers show wherever they are a request's or an answer's body.
extend_schema_serializer(examples=[REQUEST])(RequestSerializer)
extend_schema_serializer(examples=[CREATE, CREATE_ELSEWHERE, CREATE_BULK_EDIT, CREATE_HEADERS])(
    RequestCreateSerializer
)
extend_schema_serializer(examples=[PREVIEW_ASKED])(PatchPreviewInputSerializer)
extend_schema_serializer(examples=[COMMENT])(CommentSerializer)
extend_schema_serializer(examples=[BREAK_GLASS])(BreakGlassSerializer)
extend_schema_serializer(examples=[REVIEW])(ReviewSerializer)

# --- Operations -----------------------------------------------------------------------------------


REFUSED = OpenApiResponse(
    BadRequestSerializer,
    description="The request is not in a state that allows this (already decided, finished...), "
    "or the input is not valid.",
    examples=[_REFUSED],
)


REQUEST_ID = OpenApiParameter(
    "request_id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The request's number."
)


request_list = extend_schema(
    operation_id="requests_list",
    description="The action requests, newest first, a page at a time (`before` from the "
    "previous answer's `next_before`); `show=waiting` for those waiting for your approval.",
    parameters=[RequestFilterSerializer],
    responses={
        200: page_answer(
            "ActionRequestPage",
            RequestSummarySerializer(many=True),
            PAGE,
            next_before=serializers.IntegerField(
                allow_null=True, help_text="`before` for the next (older) page."
            ),
        ),
        400: BAD_REQUEST,
        **ERRORS,
    },
)


request_create = extend_schema(
    operation_id="requests_create",
    description="Ask for an action (reprocess, fail, end with error) on a scope: one "
    "message, a selection, a failure group, the browser's filters or a lake query's result. "
    "The scope is frozen at once into the exact ids of the quarantined messages it matches. "
    "`needs_approval` and `approval_reason` say whether a second person must approve it "
    "(R17); otherwise it starts.",
    request=RequestCreateSerializer,
    responses={201: RequestSerializer, 400: BAD_REQUEST, **ERRORS},
)


request_patch_preview = extend_schema(
    operation_id="requests_patch_preview",
    request=PatchPreviewInputSerializer,
    responses={200: answer(PatchPreviewSerializer, PREVIEW), 400: BAD_REQUEST, **ERRORS},
)


request_detail = extend_schema(
    operation_id="requests_retrieve",
    parameters=[REQUEST_ID, RequestQuerySerializer],
    responses={200: RequestSerializer, 400: BAD_REQUEST, 404: NOT_FOUND, **ERRORS},
)


def _decision(operation_id, description=None, request=CommentSerializer, status=200):
    """The schema of a decision on one request: `request` in, the request as it is now out, or
    REFUSED. No `description`: the view's docstring."""
    return extend_schema(
        operation_id=operation_id,
        description=description,
        parameters=[REQUEST_ID],
        request=request,
        responses={status: RequestSerializer, 400: REFUSED, 404: NOT_FOUND, **ERRORS},
    )


request_approve = _decision(
    "requests_approve",
    "Approve the frozen set exactly as it is. Four eyes: the requester gets 403.",
)


request_reject = _decision(
    "requests_reject", "Reject a pending request; the comment (why) is required."
)


request_withdraw = _decision(
    "requests_withdraw", "The requester takes back a request that has not started."
)


request_cancel = _decision(
    "requests_cancel",
    "The requester or an approver stops an approved or running request: at once if it has "
    "not started or waits for its canary, otherwise before its next chunk.",
)


request_break_glass = _decision(
    "requests_break_glass",
    "Approve a pending request alone and start it: an approver or an administrator "
    "(its requester too), only when an administrator has turned BREAK_GLASS on (403 "
    "otherwise). The reason is required, and `confirm` must be true.",
    request=BreakGlassSerializer,
)


request_review = _decision(
    "requests_review",
    "Someone else's review of a break-glass decision, once: an approver or an "
    "administrator who neither broke the glass nor asked for the request.",
    request=ReviewSerializer,
)


request_ids = extend_schema(
    operation_id="requests_ids",
    parameters=[REQUEST_ID],
    responses={
        (200, "text/plain"): answer(OpenApiTypes.STR, IDS, "One id a line."),
        404: NOT_FOUND,
        **ERRORS,
    },
)


request_outcome = extend_schema(
    operation_id="requests_outcome",
    parameters=[REQUEST_ID],
    responses={200: answer(OutcomeSerializer, OUTCOME), 404: NOT_FOUND, **ERRORS},
)


request_outcome_messages = extend_schema(
    operation_id="requests_outcome_messages",
    parameters=[REQUEST_ID, OutcomeFilterSerializer],
    responses={
        200: page_answer(
            "ActionRequestOutcomePage",
            OutcomeMessageSerializer(many=True),
            OUTCOME_PAGE,
            next_after=serializers.IntegerField(
                allow_null=True, help_text="`after` for the next page."
            ),
        ),
        400: BAD_REQUEST,
        404: NOT_FOUND,
        **ERRORS,
    },
)


request_retry = _decision("requests_retry", status=201)


notification_list = extend_schema(
    operation_id="notifications_list",
    parameters=[NotificationFilterSerializer],
    responses={
        200: page_answer(
            "ErrorNotificationPage",
            NotificationSerializer(many=True),
            NOTIFICATIONS,
            next_before=serializers.CharField(
                allow_null=True, help_text="`before` for the next (older) page."
            ),
        ),
        400: BAD_REQUEST,
        **ERRORS,
    },
)
