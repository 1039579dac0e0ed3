"""The schema of /api/v1/'s read-model endpoints (console.browse.apis): their examples, and the
drf-spectacular decorations the views wear, one per operation."""

from django import forms
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers

from console.api import (
    BAD_FILTERS,
    ERRORS,
    NOT_FOUND,
    answer,
    moved_headers,
    path_parameter,
)
from console.browse.exports import BODY_COLUMN, MessageExportForm
from console.browse.forms import API_PAGE_SIZE_MAX, PAGE_SIZE, MessageFilterForm
from console.browse.serializers import (
    GroupDetailSerializer,
    GroupFilterSerializer,
    GroupSerializer,
    HeadersFilterSerializer,
    MessageDetailSerializer,
    MessageEntrySerializer,
    MessageHeadersSerializer,
    SearchFilterSerializer,
    StatsSerializer,
)
from console.notes.selectors import OWNER_HELP

# Ids are any printable text, "/" included; the routes take them whole ("<path:...>").
MESSAGE_ID_TEXT = "The message's id: any printable text, '/' included (percent-encoded)."


# The examples of /api/docs/.
_FINGERPRINT = "0b5baa0aee0ee9f1f5bd28204fd36cf44fa68eaf8a8722923519a6e34fbbae50"
_STACK = (
    "Traceback (most recent call last):\n"
    '  File "/srv/handlers/orders.py", line 81, in orders\n'
    "    _require(order, ORDER_FIELDS)\n"
    '  File "/srv/handlers/orders.py", line 72, in _require\n'
    '    raise PermanentFailure(f"missing field: {name}")\n'
    "workers.engine.handlers.PermanentFailure: missing field: order_id\n"
)
_GROUP = {
    "fingerprint": _FINGERPRINT,
    "queue": "orders",
    "exception_type": "PermanentFailure",
    "pattern": "permanent failure: missing field: order_id",
    "ndlv": 12,
    "wait": 0,
    "count": 14,
    "first_seen": "2026-11-27T06:55:44.944980Z",
    "last_seen": "2026-11-27T07:41:02.101200Z",
    "states": {"NDLV": 12, "DLVD": 2},
    "owner": "operator",
    "status": {
        "state": "acknowledged",
        "since": "2026-11-27T07:19:00.757285Z",
        "owner": "operator",
        "changed_by": "operator",
        "comment": "SHOP-231",
        "reopened": False,
    },
}


# What a parameter's label does not say.
_PARAMETER_HELP = {
    "after": "The `next` cursor of a page: the page after it.",
    "before": "The `previous` cursor of a page: the page before it. Not with `after`.",
    "candidate": "Only blacklist candidates (yes), or only messages that are not (no).",
    "sort": "A leading '-' sorts descending. By default -last_failure.",
    "page_size": f"Messages per page; {PAGE_SIZE} by default.",
    "owner": OWNER_HELP,
    "format": "The file's format: csv, or jsonl (JSON Lines, a message a line).",
    "bodies": f"1: each message's current body too, base64, as `{BODY_COLUMN}` (null or empty "
    "when the lake no longer has it). Needs the permission to read bodies (a 403 without it).",
}


def _form_parameters(form):
    """A form's fields as query parameters: the API takes the browser's filters, described once."""
    parameters = []
    for name, field in form.fields.items():
        if isinstance(field, forms.ChoiceField):
            schema = {"type": "string", "enum": [value for value, _ in field.choices if value]}
        elif isinstance(field, forms.DateTimeField):
            schema = {"type": "string", "format": "date-time"}
        elif isinstance(field, forms.IntegerField):
            schema = {"type": "integer", "minimum": field.min_value, "maximum": field.max_value}
        else:
            schema = {"type": "string", "maxLength": field.max_length}
        label = str(field.label or name.replace("_", " ")).capitalize()
        parameters.append(
            OpenApiParameter(
                name,
                schema,
                required=field.required,
                description=_PARAMETER_HELP.get(name, label),
            )
        )
    return parameters


_MESSAGE_LIST_EXAMPLE = OpenApiExample(
    "A page",
    value={
        "results": [
            {
                "id": "demo-shipping-000014",
                "queue": "shipping",
                "original_queue": "shipping",
                "state": "NDLV",
                "delivery_count": 5,
                "candidate": False,
                "next_attempt_at": None,
                "first_failure_at": "2026-11-27T06:55:45.002047Z",
                "last_failure_at": "2026-11-27T07:40:45.002047Z",
                "reason": "carrier API unavailable: BLUEJAY",
                "exception_type": "CarrierApiUnavailable",
                "group": "b0634495e1c976c92fe7bd9cfbd7ed1693b5e9831a6f6c4303c87066e8a4ba37",
                "sender": "mobile-orders@shop.example",
                "conversation_id": "conv-ORD-100025",
                "body_size": 121,
                "content_type": "application/json",
                "enqueued_at": "2026-11-27T06:55:32.984224Z",
                "updated_at": "2026-11-27T07:40:45.002047Z",
                "owner": "operator",
            }
        ],
        "next": "WyItbGFzdF9mYWlsdXJlIiwiMjAyNi0xMS0yN1QwNzo0MDo0NSJd:1xWqA8:nb9V7R7h",
        "previous": None,
        "sort": "-last_failure",
        "count": {"value": 36, "more": False, "source": "index"},
    },
    response_only=True,
)

_MESSAGE_LIST = {
    "parameters": _form_parameters(MessageFilterForm(page_size_max=API_PAGE_SIZE_MAX)),
    "responses": {
        200: OpenApiResponse(
            inline_serializer(
                "MessageIndexPage",
                {
                    "results": MessageEntrySerializer(many=True),
                    "next": serializers.CharField(
                        allow_null=True, help_text="`after` for the next page."
                    ),
                    "previous": serializers.CharField(
                        allow_null=True, help_text="`before` for the previous page."
                    ),
                    "sort": serializers.CharField(),
                    "count": inline_serializer(
                        "MessageMatchCount",
                        {
                            "value": serializers.IntegerField(),
                            "more": serializers.BooleanField(
                                help_text="There are more than `value` (the count was capped)."
                            ),
                            "source": serializers.ChoiceField(["index", "stats"]),
                        },
                    ),
                },
            ),
            description="A page of messages, and how many match.",
            examples=[_MESSAGE_LIST_EXAMPLE],
        ),
        400: BAD_FILTERS,
        **ERRORS,
    },
}
_MESSAGE_LIST_TEXT = (
    "The quarantine browser, for programs: the messages the console's filters match (the same "
    "as the Messages screen's), a page at a time by keyset. Pass `next` (or `previous`) from "
    "an answer as `after` (or `before`) for the next (or previous) page; `count` says how many "
    "match. Needs the permission to see messages."
)


message_list = extend_schema(
    operation_id="messages_list", description=_MESSAGE_LIST_TEXT, **_MESSAGE_LIST
)


message_index = extend_schema(
    operation_id="messages_index",
    deprecated=True,
    description="Deprecated: moved to `GET /api/v1/messages`, which answers the same (the "
    "same filters, pages and permission). This path still answers, with a `Deprecation` "
    'header (RFC 9745) and a `Link` to the new path (`rel="successor-version"`).',
    **{**_MESSAGE_LIST, "parameters": [*_MESSAGE_LIST["parameters"], *moved_headers()]},
)


message_export = extend_schema(
    operation_id="messages_index_export",
    parameters=_form_parameters(MessageExportForm()),
    responses={
        (200, "text/csv"): answer(
            OpenApiTypes.STR,
            "id,queue,original_queue,state,delivery_count,candidate,next_attempt_at,"
            "first_failure_at,last_failure_at,reason,exception_type,group,sender,"
            "conversation_id,body_size,content_type,enqueued_at,updated_at,owner\r\n"
            "demo-orders-000008,orders,orders,NDLV,1,false,,2026-11-27T06:55:44.944980Z,"
            "2026-11-27T06:55:44.944980Z,permanent failure: missing field: order_id,"
            f"PermanentFailure,{_FINGERPRINT},pos-amsterdam-03@stores.shop.example,"
            "conv-ORD-100007,302,application/json,2026-11-27T06:55:32.984224Z,"
            "2026-11-27T06:55:44.944980Z,operator\r\n",
            "format=csv: a header row, then a message a row.",
        ),
        (200, "application/x-ndjson"): answer(
            OpenApiTypes.STR,
            '{"id": "demo-orders-000008", "queue": "orders", "state": "NDLV", '
            '"delivery_count": 1, "reason": "permanent failure: missing field: order_id", '
            '"body_size": 302, "...": "the other fields, as in GET /api/v1/messages"}\n',
            "format=jsonl: a JSON object a line, a message each.",
        ),
        400: BAD_FILTERS,
        **ERRORS,
    },
)


group_list = extend_schema(
    operation_id="groups_list",
    parameters=[GroupFilterSerializer],
    responses={
        200: answer(
            inline_serializer("FailureGroupList", {"results": GroupSerializer(many=True)}),
            {"results": [_GROUP]},
        ),
        400: BAD_FILTERS,
        **ERRORS,
    },
)


_COUNT = inline_serializer(
    "SearchCount",
    {"count": serializers.IntegerField(), "more": serializers.BooleanField()},
    allow_null=True,
)


search = extend_schema(
    operation_id="search",
    parameters=[SearchFilterSerializer],
    responses={
        200: answer(
            inline_serializer(
                "SearchResult",
                {
                    "query": serializers.CharField(),
                    "message_id": serializers.CharField(allow_null=True),
                    "message_ids": serializers.ListField(child=serializers.CharField()),
                    "more_message_ids": serializers.BooleanField(),
                    "reasons": _COUNT,
                    "senders": _COUNT,
                    "conversations": _COUNT,
                    "groups": GroupSerializer(many=True),
                    "queues": serializers.ListField(child=serializers.CharField()),
                },
            ),
            {
                "query": "missing field",
                "message_id": None,
                "message_ids": [],
                "more_message_ids": False,
                "reasons": {"count": 12, "more": False},
                "senders": {"count": 0, "more": False},
                "conversations": {"count": 0, "more": False},
                "groups": [_GROUP],
                "queues": [],
            },
        ),
        400: BAD_FILTERS,
        **ERRORS,
    },
)


group_detail = extend_schema(
    operation_id="groups_retrieve",
    parameters=[path_parameter("fingerprint", "The failure group's fingerprint.", "f" * 64)],
    responses={
        200: answer(
            GroupDetailSerializer,
            {
                **_GROUP,
                "frames": "handlers.py:orders; handlers.py:_require",
                "sample_message_id": "demo-orders-000008",
                "sample_reason": "permanent failure: missing field: order_id",
                "sample_stack": _STACK,
            },
        ),
        404: NOT_FOUND,
        **ERRORS,
    },
)


stats = extend_schema(
    operation_id="stats_retrieve",
    responses={
        200: answer(
            StatsSerializer,
            {
                "totals": {"TBDL": 26, "WAIT": 9, "DLVD": 52, "NDLV": 12},
                "queues": {
                    "orders": {"TBDL": 21, "WAIT": 1, "DLVD": 18, "NDLV": 12},
                    "shipping": {"WAIT": 8, "DLVD": 34, "TBDL": 5},
                },
                "quarantined": 12,
                "delivered_after_failure": {"count": 3, "more": False},
                "updated_at": "2026-11-27T06:56:57.296661Z",
                "disabled_queues": [
                    {
                        "name": "orders",
                        "disabled_at": "2026-11-27T07:03:40.957512Z",
                        "reason": "5 failed attempts in a row",
                    }
                ],
                "top_groups": [_GROUP],
                "muted_groups": 0,
                "inflow": [
                    {"hour": "2026-11-27T05:00:00Z", "count": 0},
                    {"hour": "2026-11-27T06:00:00Z", "count": 12},
                ],
                "flows": [
                    {
                        "hour": "2026-11-27T06:00:00Z",
                        "quarantined": 12,
                        "released": 0,
                        "delivered": 52,
                        "failed": 31,
                    }
                ],
                "sources": [
                    {
                        "name": "orders-dlq",
                        "kind": "rabbitmq",
                        "kind_title": "RabbitMQ",
                        "broker_queue": "orders.dlq",
                        "queue": "orders-dead",
                        "redrive_queue": "orders-redrive",
                        "enabled": True,
                        "state": "consuming",
                        "state_since": "2026-11-27T06:50:00Z",
                        "last_error": "",
                        "retry_at": None,
                        "heartbeat_at": "2026-11-27T07:00:00Z",
                        "drained": 120,
                        "refused": 0,
                        "last_drained_at": "2026-11-27T06:59:58Z",
                        "lag": 0,
                        "lag_at": "2026-11-27T07:00:00Z",
                        "connected_to": "RabbitMQ at 127.0.0.1:5672, vhost '/'",
                        "parking": "orders.dlq.antidote-refused",
                    }
                ],
                "counts_check": {
                    "status": "clean",
                    "finished_at": "2026-11-27T03:10:00Z",
                    "differences": 0,
                },
                "demo": None,
                "stale": None,
            },
        ),
        **ERRORS,
    },
)


message_body = extend_schema(
    operation_id="messages_body",
    parameters=[path_parameter("message_id", MESSAGE_ID_TEXT, "order-1")],
    responses={
        (200, "application/octet-stream"): answer(
            OpenApiTypes.BINARY,
            '{"customer": {"id": "C-5934", "country": "DE"}, "items": [{"sku": "SKU-1002", '
            '"qty": 2}], "currency": "EUR"}',
            "The body, as an attachment.",
        ),
        404: NOT_FOUND,
        **ERRORS,
    },
)


message_headers = extend_schema(
    operation_id="messages_headers",
    parameters=[
        path_parameter("message_id", MESSAGE_ID_TEXT, "order-1"),
        HeadersFilterSerializer,
    ],
    responses={
        200: answer(
            MessageHeadersSerializer,
            {
                "headers": {"schema": "order/v3", "trace_id": "7ca993ebae12d99a"},
                "offset": 0,
                "count": 2,
                "next": None,
            },
        ),
        400: BAD_FILTERS,
        404: NOT_FOUND,
        **ERRORS,
    },
)


message_detail = extend_schema(
    operation_id="messages_retrieve",
    parameters=[
        path_parameter(
            "message_id",
            f"{MESSAGE_ID_TEXT} (An id that ends in '/body' or '/headers' reads as the "
            "body or the headers of the message before it.)",
            "order-1",
        )
    ],
    responses={
        200: answer(
            MessageDetailSerializer,
            {
                "id": "demo-orders-000008",
                "queue": "orders",
                "original_queue": "orders",
                "state": "NDLV",
                "in_flight": None,
                "delivery_count": 1,
                "blacklist_candidate": False,
                "batch_limit": None,
                "next_attempt_at": None,
                "reason": "permanent failure: missing field: order_id",
                "exception_type": "PermanentFailure",
                "on_poison_list": True,
                "body_sha256": "4aff43377204f61702960936de127701a3b56a3235423a4ab282f994255276e0",
                "body_size": 302,
                "content_type": "application/json",
                "headers": {"schema": "order/v3", "trace_id": "7ca993ebae12d99a"},
                "headers_shown": {
                    "count": 2,
                    "size": 38,
                    "shown": 2,
                    "more": 0,
                    "more_bytes": 0,
                    "cut": [],
                    "complete": True,
                },
                "dead_letter": None,
                "conversation_id": "conv-ORD-100007",
                "sender": "pos-amsterdam-03@stores.shop.example",
                "enqueued_at": "2026-11-27T06:55:32.984224Z",
                "history": [
                    {
                        "at": "2026-11-27T06:55:32.984224Z",
                        "from_state": None,
                        "to_state": "TBDL",
                        "queue": "orders",
                        "attempt": 0,
                        "delivery_count": 0,
                        "candidate": False,
                        "next_attempt_at": None,
                        "actor": "api:shop-producer",
                        "run_id": None,
                        "reason": "ingested",
                        "exception_type": None,
                        "stack": None,
                    },
                    {
                        "at": "2026-11-27T06:55:44.944980Z",
                        "from_state": "DLNG",
                        "to_state": "NDLV",
                        "queue": "orders",
                        "attempt": 1,
                        "delivery_count": 1,
                        "candidate": False,
                        "next_attempt_at": None,
                        "actor": "spark-1/run 1",
                        "run_id": "1",
                        "reason": "permanent failure: missing field: order_id",
                        "exception_type": "PermanentFailure",
                        "stack": _STACK,
                    },
                ],
            },
        ),
        404: NOT_FOUND,
        **ERRORS,
    },
)
