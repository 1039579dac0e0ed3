"""/api/v1/: the console's read models, and one message (its state and history, its body), with
the screens' permissions. Reading changes nothing (R12); reading a body is audited."""

from datetime import UTC, datetime

from django import forms
from django.core.exceptions import ValidationError
from django.http import Http404
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import exceptions, serializers
from rest_framework.permissions import SAFE_METHODS
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api import (
    BAD_FILTERS,
    ERRORS,
    NOT_FOUND,
    Moved,
    answer,
    bad_filters,
    moved_headers,
    path_key,
    path_parameter,
    sent,
)
from console.browse import selectors
from console.browse.body import raw_body_response
from console.browse.exports import (
    BODIES_REFUSED,
    BODY_COLUMN,
    MessageExportForm,
    message_export_response,
)
from console.browse.forms import API_PAGE_SIZE_MAX, PAGE_SIZE, MessageFilterForm
from console.browse.freshness import counts_staleness
from console.browse.headers import (
    HEADER_NAME_SHOWN,
    HEADER_VALUE_SHOWN,
    HEADERS_PAGE,
    HEADERS_PAGE_BYTES,
    HEADERS_PAGE_MAX,
    HEADERS_SHOWN,
    HeadersUnreadable,
    headers_page,
)
from console.browse.search import QUERY_MAX, search
from console.browse.services import message_body_read
from console.ingest.apis import MaySendMessages, MessagesIngestApi
from console.ingest.demo import demo_progress
from console.notes.models import GROUP, MESSAGE
from console.notes.selectors import OWNER_HELP, investigations_attach, owner_filter_clean
from console.permissions import (
    CHANGE_QUEUE,
    VIEW_BODY,
    VIEW_GROUPS,
    VIEW_MESSAGES,
    VIEW_NOTES,
    VIEW_QUEUES,
    VIEW_STATS,
    has_perms,
)
from console.queues.models import Queue
from console.queues.selectors import source_status_list
from console.queues.services import PAUSE_REASON_MAX, queue_pause, queue_reenable
from workers.brokers.dead_letters import KIND_NAMES as DEAD_LETTER_KINDS
from workers.engine.states import FLOW_QUARANTINED, FLOWS

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
}
_POLICY = {
    "handler": "workers.demo.handlers.orders",
    "max_failed_deliveries": 5,
    "exception_destination": "quarantine",
    "blocked_retry_timeout": 60,
    "backoff_every": 1,
    "backoff_delays": [60, 300, 900, 1800],
    "periodic_interval": 900,
    "on_permanent": "quarantine",
    "poison_match": "id_or_body",
    "disable_after": 0,
    "retention_days": 30,
    "handler_options": {},
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


@extend_schema_field({"type": "string", "nullable": True})
class _OwnerField(serializers.Field):
    """The username of whoever investigates the row (console.notes.selectors.
    investigations_attach went over it), or None."""

    def to_representation(self, value):
        investigation = getattr(value, "investigation", None)
        return investigation.owner.get_username() if investigation else None


@extend_schema_field({"type": "object", "additionalProperties": {"type": "integer"}})
class _StateCounts(serializers.Field):
    """[(state, n)] as {"NDLV": 3, ...}, in lifecycle order."""

    def to_representation(self, value):
        return dict(value)


class _MessageEntrySerializer(serializers.Serializer):
    id = serializers.CharField(source="message_id")
    queue = serializers.CharField()
    original_queue = serializers.CharField()
    state = serializers.CharField()
    delivery_count = serializers.IntegerField()
    candidate = serializers.BooleanField()
    next_attempt_at = serializers.DateTimeField(allow_null=True)
    first_failure_at = serializers.DateTimeField(allow_null=True)
    last_failure_at = serializers.DateTimeField(allow_null=True)
    reason = serializers.CharField()
    exception_type = serializers.CharField()
    group = serializers.CharField(source="group_id")
    sender = serializers.CharField()
    conversation_id = serializers.CharField()
    body_size = serializers.IntegerField()
    content_type = serializers.CharField()
    enqueued_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    owner = _OwnerField(
        source="*",
        help_text="Who is investigating it (its own owner, else its failure group's), or "
        "null; null too without the permission to read notes.",
    )

    class Meta:
        ref_name = "MessageIndexEntry"


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
                    "results": _MessageEntrySerializer(many=True),
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


def _message_list(request):
    """The answer of GET /api/v1/messages (and of its old path, /api/v1/index/messages)."""
    form = MessageFilterForm(
        request.query_params, page_size_max=API_PAGE_SIZE_MAX, user=request.user
    )
    if not form.is_valid():
        return bad_filters(form.errors)
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
        return bad_filters({"cursor": [str(exc)]})
    count = selectors.message_match_count(filters=filters)
    if request.user.has_perm(VIEW_NOTES):
        investigations_attach(page.rows, kind=MESSAGE)
    return Response(
        {
            "results": _MessageEntrySerializer(page.rows, many=True).data,
            "next": page.next_cursor,
            "previous": page.prev_cursor,
            "sort": page.sort,
            "count": {"value": count.count, "more": count.more, "source": count.source},
        }
    )


class MessagesApi(MessagesIngestApi):
    """/api/v1/messages, where a REST client looks for messages: GET lists them (the quarantine
    browser), POST sends messages in (console.ingest.apis). Each method has its permission: a
    producer's service account (the application role) sends and sees nothing; a person sends
    only into the queues they may send into by hand."""

    def get_permissions(self):
        if self.request.method in SAFE_METHODS:
            return [has_perms(VIEW_MESSAGES)()]
        return [MaySendMessages()]

    @extend_schema(operation_id="messages_list", description=_MESSAGE_LIST_TEXT, **_MESSAGE_LIST)
    def get(self, request):
        return _message_list(request)


class MessageIndexApi(Moved, APIView):
    """The message list's old path: it answers as before, and says where it moved."""

    permission_classes = [has_perms(VIEW_MESSAGES)]
    moved_to = "/api/v1/messages"
    moved_on = datetime(2026, 11, 27, tzinfo=UTC)

    @extend_schema(
        operation_id="messages_index",
        deprecated=True,
        description="Deprecated: moved to `GET /api/v1/messages`, which answers the same (the "
        "same filters, pages and permission). This path still answers, with a `Deprecation` "
        'header (RFC 9745) and a `Link` to the new path (`rel="successor-version"`).',
        **{**_MESSAGE_LIST, "parameters": [*_MESSAGE_LIST["parameters"], *moved_headers()]},
    )
    def get(self, request):
        return _message_list(request)


class MessageExportApi(APIView):
    """Every message the quarantine browser's filters match, in its order (`sort`), as one
    streamed file: CSV or JSON Lines, with the fields `GET /api/v1/messages` gives each message, and
    with `bodies=1` its current body, base64. CSV cells that start with =, +, -, @, a tab or a
    carriage return are prefixed with a quote, which shows as text and runs nothing (take it off
    a body cell before decoding). The export is recorded in the audit trail before the file
    streams."""

    permission_classes = [has_perms(VIEW_MESSAGES)]

    def perform_content_negotiation(self, request, force=False):
        # The file's format is the `format` parameter, which DRF would otherwise take for a
        # renderer's and answer 404 for: JSON only for a refusal.
        return super().perform_content_negotiation(request, force=True)

    @extend_schema(
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
    def get(self, request):
        form = MessageExportForm(request.query_params, user=request.user)
        if not form.is_valid():
            return bad_filters(form.errors)
        if form.wants_bodies and not request.user.has_perm(VIEW_BODY):
            raise exceptions.PermissionDenied(BODIES_REFUSED)
        return message_export_response(actor=request.user, via="api", **form.export())


class _GroupSerializer(serializers.Serializer):
    fingerprint = serializers.CharField()
    queue = serializers.CharField()
    exception_type = serializers.CharField()
    pattern = serializers.CharField()
    ndlv = serializers.IntegerField(help_text="Members quarantined: someone must decide.")
    wait = serializers.IntegerField(help_text="Members waiting for a retry.")
    count = serializers.IntegerField(help_text="All its members, resolved ones too.")
    first_seen = serializers.DateTimeField(allow_null=True)
    last_seen = serializers.DateTimeField(allow_null=True)
    states = serializers.DictField(child=serializers.IntegerField())
    owner = _OwnerField(
        source="*",
        help_text="Who is investigating it, or null (always null in search results, and "
        "without the permission to read notes).",
    )

    class Meta:
        ref_name = "FailureGroup"


class GroupListApi(APIView):
    """Failure groups by what needs attention now: most quarantined members first, then most
    waiting ones. Groups whose members need nobody any more only with `resolved`."""

    permission_classes = [has_perms(VIEW_GROUPS)]

    class FilterSerializer(serializers.Serializer):
        queue = serializers.CharField(required=False, allow_blank=True, max_length=100)
        resolved = serializers.BooleanField(
            required=False,
            default=False,
            help_text="Also groups none of whose members is NDLV or WAIT.",
        )
        owner = serializers.CharField(
            required=False, allow_blank=True, max_length=150, help_text=OWNER_HELP
        )

    @extend_schema(
        operation_id="groups_list",
        parameters=[FilterSerializer],
        responses={
            200: answer(
                inline_serializer("FailureGroupList", {"results": _GroupSerializer(many=True)}),
                {"results": [_GROUP]},
            ),
            400: BAD_FILTERS,
            **ERRORS,
        },
    )
    def get(self, request):
        filters = self.FilterSerializer(data=request.query_params)
        if not filters.is_valid():
            return bad_filters(filters.errors)
        try:
            owner = owner_filter_clean(filters.validated_data.get("owner"), user=request.user)
        except ValidationError as exc:
            return bad_filters({"owner": exc.messages})
        groups = selectors.group_list(
            queue=filters.validated_data.get("queue") or None,
            resolved=filters.validated_data["resolved"],
            owner=owner or None,
        )
        if request.user.has_perm(VIEW_NOTES):
            investigations_attach(groups, kind=GROUP)
        return Response({"results": _GroupSerializer(groups, many=True).data})


def _count(match):
    if match is None:
        return None
    return {"count": match.count, "more": match.more}


class SearchApi(APIView):
    """The console's search box: what a query finds. `message_id` is set when it names one message
    (its whole id, or the beginning of only one id when nothing else matches); otherwise the ids
    that start with it, how many messages have it in their last failure's reason, as their sender
    or their conversation (counts stop at 1,000: `more` says so), and the failure groups and
    queues whose names hold it. Reasons, groups and queues from 3 characters on."""

    permission_classes = [has_perms(VIEW_MESSAGES)]

    class FilterSerializer(serializers.Serializer):
        q = serializers.CharField(max_length=QUERY_MAX, help_text="What to look for.")

    _Count = inline_serializer(
        "SearchCount",
        {"count": serializers.IntegerField(), "more": serializers.BooleanField()},
        allow_null=True,
    )

    @extend_schema(
        operation_id="search",
        parameters=[FilterSerializer],
        responses={
            200: answer(
                inline_serializer(
                    "SearchResult",
                    {
                        "query": serializers.CharField(),
                        "message_id": serializers.CharField(allow_null=True),
                        "message_ids": serializers.ListField(child=serializers.CharField()),
                        "more_message_ids": serializers.BooleanField(),
                        "reasons": _Count,
                        "senders": _Count,
                        "conversations": _Count,
                        "groups": _GroupSerializer(many=True),
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
    def get(self, request):
        filters = self.FilterSerializer(data=request.query_params)
        if not filters.is_valid():
            return bad_filters(filters.errors)
        result = search(
            query=filters.validated_data["q"], groups=request.user.has_perm(VIEW_GROUPS)
        )
        return Response(
            {
                "query": result.query,
                "message_id": result.go_to,
                "message_ids": result.ids,
                "more_message_ids": result.more_ids,
                "reasons": _count(result.reasons),
                "senders": _count(result.senders),
                "conversations": _count(result.conversations),
                "groups": _GroupSerializer(result.groups, many=True).data,
                "queues": result.queues,
            }
        )


class GroupDetailApi(APIView):
    """One failure group, by its fingerprint: its members' counts by state, its pattern, and a
    sample member with its reason and stack trace."""

    permission_classes = [has_perms(VIEW_GROUPS)]

    class OutputSerializer(_GroupSerializer):
        frames = serializers.CharField()
        sample_message_id = serializers.CharField()
        sample_reason = serializers.CharField()
        sample_stack = serializers.CharField()

        class Meta:
            ref_name = "FailureGroupDetail"

    @extend_schema(
        operation_id="groups_retrieve",
        parameters=[path_parameter("fingerprint", "The failure group's fingerprint.", "f" * 64)],
        responses={
            200: answer(
                OutputSerializer,
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
    def get(self, request, fingerprint):
        group = selectors.group_get(
            fingerprint=path_key(fingerprint, not_found="no such failure group")
        )
        if group is None:
            raise Http404("no such failure group")
        if request.user.has_perm(VIEW_NOTES):
            investigations_attach([group], kind=GROUP)
        return Response(self.OutputSerializer(group).data)


class QueueListApi(APIView):
    """Every queue, and every queue name the statistics still hold (`exists` false: it was
    deleted): enabled or not (and why not), its delivery policy, and its messages by state."""

    permission_classes = [has_perms(VIEW_QUEUES, VIEW_STATS)]

    class OutputSerializer(serializers.Serializer):
        name = serializers.CharField()
        exists = serializers.SerializerMethodField()
        enabled = serializers.SerializerMethodField()
        disabled_at = serializers.DateTimeField(
            source="queue.disabled_at", default=None, allow_null=True
        )
        disabled_reason = serializers.CharField(source="queue.disabled_reason", default="")
        policy = serializers.SerializerMethodField()
        counts = _StateCounts()
        total = serializers.IntegerField()
        stats_at = serializers.DateTimeField(allow_null=True)

        class Meta:
            ref_name = "QueueOverview"

        @extend_schema_field(OpenApiTypes.BOOL)
        def get_exists(self, overview):
            return overview.queue is not None

        @extend_schema_field({"type": "boolean", "nullable": True})
        def get_enabled(self, overview):
            return overview.queue.enabled if overview.queue else None

        @extend_schema_field(
            {
                "type": "object",
                "additionalProperties": True,
                "description": "The queue's delivery policy; empty if the queue no longer exists.",
            }
        )
        def get_policy(self, overview):
            return dict(overview.policy)

    @extend_schema(
        operation_id="queues_list",
        responses={
            200: answer(
                inline_serializer("QueueOverviewList", {"results": OutputSerializer(many=True)}),
                {
                    "results": [
                        {
                            "name": "orders",
                            "exists": True,
                            "enabled": False,
                            "disabled_at": "2026-11-27T07:03:40.957512Z",
                            "disabled_reason": "5 failed attempts in a row",
                            "policy": _POLICY,
                            "counts": {"TBDL": 21, "WAIT": 1, "DLVD": 18, "NDLV": 1},
                            "total": 41,
                            "stats_at": "2026-11-27T06:56:57.296661Z",
                        }
                    ]
                },
            ),
            **ERRORS,
        },
    )
    def get(self, request):
        return Response(
            {"results": self.OutputSerializer(selectors.queue_overview(), many=True).data}
        )


def _queue_switched(name, unchanged):
    """The answer of a queue's enable or pause: its name, whether it is enabled now, whether this
    call changed it."""
    return inline_serializer(
        name,
        {
            "name": serializers.CharField(),
            "enabled": serializers.BooleanField(),
            "changed": serializers.BooleanField(help_text=unchanged),
        },
    )


class QueueEnableApi(APIView):
    """R11: an administrator re-enables a queue the engine disabled."""

    permission_classes = [has_perms(CHANGE_QUEUE)]

    @extend_schema(
        operation_id="queues_enable",
        parameters=[path_parameter("name", "The queue's name.", "orders")],
        request=None,
        responses={
            200: answer(
                _queue_switched("QueueEnabled", "False if the queue was enabled already."),
                {"name": "orders", "enabled": True, "changed": True},
            ),
            404: NOT_FOUND,
            **ERRORS,
        },
    )
    def post(self, request, name):
        queue = Queue.objects.filter(name=path_key(name, not_found="no such queue")).first()
        if queue is None:
            raise Http404("no such queue")
        changed = False
        if not queue.enabled:
            changed = queue_reenable(queue_ids=[queue.id], actor=request.user) == 1
        return Response({"name": queue.name, "enabled": True, "changed": changed})


class QueuePauseApi(APIView):
    """An administrator stops delivery to a queue by hand, until it is re-enabled (`enable`)."""

    permission_classes = [has_perms(CHANGE_QUEUE)]

    class InputSerializer(serializers.Serializer):
        reason = serializers.CharField(
            required=False, allow_blank=True, max_length=PAUSE_REASON_MAX, help_text="Why."
        )

    @extend_schema(
        operation_id="queues_pause",
        parameters=[path_parameter("name", "The queue's name.", "orders")],
        request=InputSerializer,
        examples=[sent({"reason": "the warehouse is moving its stock system tonight"})],
        responses={
            200: answer(
                _queue_switched("QueuePaused", "False if the queue was disabled already."),
                {"name": "orders", "enabled": False, "changed": True},
            ),
            400: BAD_FILTERS,
            404: NOT_FOUND,
            **ERRORS,
        },
    )
    def post(self, request, name):
        queue = Queue.objects.filter(name=path_key(name, not_found="no such queue")).first()
        if queue is None:
            raise Http404("no such queue")
        data = self.InputSerializer(data=request.data)
        if not data.is_valid():
            return bad_filters(data.errors)
        changed = queue_pause(
            queue=queue, actor=request.user, reason=data.validated_data.get("reason", "")
        )
        return Response({"name": queue.name, "enabled": False, "changed": changed})


class StatsApi(APIView):
    """The dashboard's numbers."""

    permission_classes = [has_perms(VIEW_STATS)]

    @extend_schema(
        operation_id="stats_retrieve",
        responses={
            200: answer(
                inline_serializer(
                    "Stats",
                    {
                        "totals": _StateCounts(help_text="Messages per state, all queues."),
                        "queues": serializers.DictField(
                            child=_StateCounts(), help_text="Messages per state, per queue."
                        ),
                        "quarantined": serializers.IntegerField(),
                        "delivered_after_failure": inline_serializer(
                            "DeliveredAfterFailure",
                            {
                                "count": serializers.IntegerField(),
                                "more": serializers.BooleanField(),
                            },
                            help_text="Of the DLVD messages, those that failed at least once (the "
                            "ones the message list holds); the count stops at 10,000 (`more`).",
                        ),
                        "updated_at": serializers.DateTimeField(allow_null=True),
                        "disabled_queues": inline_serializer(
                            "DisabledQueue",
                            {
                                "name": serializers.CharField(),
                                "disabled_at": serializers.DateTimeField(allow_null=True),
                                "reason": serializers.CharField(),
                            },
                            many=True,
                        ),
                        "top_groups": _GroupSerializer(many=True),
                        "inflow": inline_serializer(
                            "InflowHour",
                            {
                                "hour": serializers.DateTimeField(),
                                "count": serializers.IntegerField(),
                            },
                            many=True,
                        ),
                        "flows": inline_serializer(
                            "FlowHour",
                            {
                                "hour": serializers.DateTimeField(),
                                **{flow: serializers.IntegerField() for flow in FLOWS},
                            },
                            many=True,
                            help_text="Per hour, all queues together, over the inflow's hours: "
                            "messages that entered quarantine, left it (a decision), were "
                            "delivered, and failed attempts.",
                        ),
                        "sources": inline_serializer(
                            "SourceStatus",
                            {
                                "name": serializers.CharField(),
                                "kind": serializers.CharField(help_text="rabbitmq, nats or redis"),
                                "kind_title": serializers.CharField(
                                    help_text="The kind for people: RabbitMQ, NATS JetStream, "
                                    "Redis Streams"
                                ),
                                "broker_queue": serializers.CharField(
                                    help_text="What is drained: the RabbitMQ queue, the "
                                    "JetStream stream, the Redis stream key"
                                ),
                                "queue": serializers.CharField(),
                                "redrive_queue": serializers.CharField(allow_null=True),
                                "enabled": serializers.BooleanField(),
                                "state": serializers.CharField(
                                    help_text="starting, connecting, consuming, down, stopped, "
                                    "disabled, or 'not running' (no heartbeat for a minute)"
                                ),
                                "state_since": serializers.DateTimeField(allow_null=True),
                                "last_error": serializers.CharField(),
                                "retry_at": serializers.DateTimeField(
                                    allow_null=True,
                                    help_text="While down: when it connects again (the backoff "
                                    "doubles from 1 s to a minute)",
                                ),
                                "heartbeat_at": serializers.DateTimeField(allow_null=True),
                                "drained": serializers.IntegerField(),
                                "refused": serializers.IntegerField(),
                                "last_drained_at": serializers.DateTimeField(allow_null=True),
                                "lag": serializers.IntegerField(
                                    allow_null=True,
                                    help_text="Dead letters waiting on the broker when it last "
                                    "said; null before it has",
                                ),
                                "lag_at": serializers.DateTimeField(allow_null=True),
                                "connected_to": serializers.CharField(
                                    help_text="Where the consumer last connected (no secret)"
                                ),
                                "parking": serializers.CharField(
                                    help_text="Where refused messages are set aside on the broker"
                                ),
                            },
                            many=True,
                            help_text="The broker sources drained and what their consumers do.",
                        ),
                        "counts_check": inline_serializer(
                            "CountsCheck",
                            {
                                "status": serializers.CharField(
                                    help_text="running, clean, drift, repaired, busy or failed"
                                ),
                                "finished_at": serializers.DateTimeField(allow_null=True),
                                "differences": serializers.IntegerField(),
                            },
                            allow_null=True,
                            help_text="The newest check of these counts against a recount from "
                            "the lake (manage.py counts_verify; daily): how many differed. Null "
                            "before the first.",
                        ),
                        "stale": inline_serializer(
                            "Staleness",
                            {
                                "reason": serializers.CharField(
                                    help_text="not_run (no refresh ran since), running (one is "
                                    "running, for long), held (another writer holds the read "
                                    "models) or failed (the last refresh failed)"
                                ),
                                "waiting_since": serializers.DateTimeField(
                                    help_text="When the oldest change the counts lack was made."
                                ),
                                "text": serializers.CharField(help_text="The same, in words."),
                            },
                            allow_null=True,
                            help_text="Why the counts lag behind the lake, when a change has "
                            "waited several refresh intervals for one; null while they are "
                            "current (however old updated_at is: they change only with the "
                            "messages).",
                        ),
                        "demo": inline_serializer(
                            "DemoFill",
                            {
                                "total": serializers.IntegerField(),
                                "sent": serializers.IntegerField(),
                                "filling": serializers.BooleanField(),
                                "waiting": serializers.BooleanField(
                                    help_text="nothing sent for a while: the default worker is not "
                                    "running"
                                ),
                                "filled_at": serializers.DateTimeField(allow_null=True),
                            },
                            allow_null=True,
                            help_text="The demo's messages as `make run` sends them, a chunk every "
                            "few seconds: how many of how many so far. Null when no demo fills "
                            "(nor finished in the last minutes).",
                        ),
                    },
                ),
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
    def get(self, request):
        stats = selectors.dashboard_stats()
        flows = selectors.flow_series()
        series = flows[FLOW_QUARANTINED]
        groups = selectors.group_list(limit=selectors.TOP_GROUPS)
        return Response(
            {
                "totals": dict(stats["totals"]),
                "queues": {name: dict(counts) for name, counts in stats["per_queue"]},
                "quarantined": stats["quarantined"],
                "delivered_after_failure": _count(stats["delivered_after_failure"]),
                "updated_at": stats["updated_at"],
                "disabled_queues": [
                    {"name": q.name, "disabled_at": q.disabled_at, "reason": q.disabled_reason}
                    for q in selectors.queues_disabled()
                ],
                "top_groups": _GroupSerializer(groups, many=True).data,
                "inflow": [{"hour": hour, "count": n} for hour, n in series],
                "flows": [
                    {"hour": hour, **{flow: flows[flow][i][1] for flow in FLOWS}}
                    for i, (hour, _) in enumerate(series)
                ],
                "sources": [s.as_dict() for s in source_status_list()],
                "counts_check": selectors.counts_check_latest(),
                "demo": demo_progress(),
                "stale": _staleness(counts_staleness(now=timezone.now())),
            }
        )


def _staleness(stale):
    if stale is None:
        return None
    return {"reason": stale.reason, "waiting_since": stale.waiting_since, "text": stale.text}


class MessageBodyApi(APIView):
    """A message's current body, as bytes, with the raw download's headers."""

    permission_classes = [has_perms(VIEW_MESSAGES, VIEW_BODY)]

    def perform_content_negotiation(self, request, force=False):
        # The body is bytes whatever the client accepts (JSON only for a refusal): a client that
        # asks for application/octet-stream gets it, not a 406.
        return super().perform_content_negotiation(request, force=True)

    @extend_schema(
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
    def get(self, request, message_id):
        found = message_body_read(
            actor=request.user,
            message_id=path_key(message_id, not_found="no such message"),
            via="api",
        )
        if found is None:
            raise Http404("no such message")
        return raw_body_response(found[0], message_id=message_id)


class _EventSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    from_state = serializers.CharField(allow_null=True)
    to_state = serializers.CharField()
    queue = serializers.CharField()
    attempt = serializers.IntegerField()
    delivery_count = serializers.IntegerField()
    candidate = serializers.BooleanField()
    next_attempt_at = serializers.DateTimeField(allow_null=True)
    actor = serializers.CharField(allow_null=True)
    run_id = serializers.CharField(allow_null=True)
    reason = serializers.CharField(allow_null=True)
    exception_type = serializers.CharField(allow_null=True)
    stack = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "MessageEvent"


class _HeadersShownSerializer(serializers.Serializer):
    count = serializers.IntegerField(help_text="How many headers the message has.")
    size = serializers.IntegerField(help_text="Their names' and values' bytes (UTF-8).")
    shown = serializers.IntegerField(help_text="How many are in `headers`.")
    more = serializers.IntegerField(help_text="How many are left out of `headers`.")
    more_bytes = serializers.IntegerField(help_text="The bytes of those left out.")
    cut = serializers.ListField(
        child=serializers.CharField(), help_text="The headers in `headers` whose value is cut."
    )
    complete = serializers.BooleanField(
        help_text="Whether `headers` holds every header whole (if not: GET .../headers)."
    )

    class Meta:
        ref_name = "HeadersShown"


class MessageHeadersApi(APIView):
    """A message's headers, whole, a page at a time in the order they are stored: what the
    message's detail shows only the start of when it has many or long ones. Reading changes
    nothing (R12)."""

    permission_classes = [has_perms(VIEW_MESSAGES)]

    class FilterSerializer(serializers.Serializer):
        offset = serializers.IntegerField(
            required=False, default=0, min_value=0, help_text="The first header's place, from 0."
        )
        limit = serializers.IntegerField(
            required=False,
            default=HEADERS_PAGE,
            min_value=1,
            max_value=HEADERS_PAGE_MAX,
            help_text=f"Most headers in the page; a page also stops before {HEADERS_PAGE_BYTES:,} "
            "bytes (it holds at least one header, however long).",
        )

    class OutputSerializer(serializers.Serializer):
        headers = serializers.DictField(
            child=serializers.CharField(), help_text="Whole, in the order stored."
        )
        offset = serializers.IntegerField()
        count = serializers.IntegerField(help_text="How many headers the message has.")
        next = serializers.IntegerField(
            allow_null=True, help_text="The offset of the next page; null after the last."
        )

        class Meta:
            ref_name = "MessageHeaders"

    @extend_schema(
        operation_id="messages_headers",
        parameters=[
            path_parameter("message_id", MESSAGE_ID_TEXT, "order-1"),
            FilterSerializer,
        ],
        responses={
            200: answer(
                OutputSerializer,
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
    def get(self, request, message_id):
        filters = self.FilterSerializer(data=request.query_params)
        if not filters.is_valid():
            return bad_filters(filters.errors)
        text = selectors.message_headers_text(
            message_id=path_key(message_id, not_found="no such message")
        )
        if text is None:
            raise Http404("no such message")
        try:
            page = headers_page(text, **filters.validated_data)
        except HeadersUnreadable as exc:
            raise exceptions.APIException(str(exc)) from None
        return Response(
            {"headers": page.headers, "offset": page.offset, "count": page.count, "next": page.next}
        )


class MessageDetailApi(APIView):
    """A message's state, delivery count, candidate flag, next attempt time, reason and history.
    Reading changes nothing (R12)."""

    permission_classes = [has_perms(VIEW_MESSAGES)]

    class OutputSerializer(serializers.Serializer):
        id = serializers.CharField()
        queue = serializers.CharField()
        original_queue = serializers.CharField()
        state = serializers.CharField(allow_null=True)
        in_flight = inline_serializer(
            "InFlight",
            {
                "run": serializers.CharField(help_text="The delivery run that holds it."),
                "since": serializers.DateTimeField(help_text="When that run took it (R1)."),
            },
            allow_null=True,
            help_text="While the message is DLNG: which run is delivering it, since when.",
        )
        delivery_count = serializers.IntegerField()
        blacklist_candidate = serializers.BooleanField()
        batch_limit = serializers.IntegerField(allow_null=True)
        next_attempt_at = serializers.DateTimeField(allow_null=True)
        reason = serializers.CharField(allow_null=True)
        exception_type = serializers.CharField(allow_null=True)
        on_poison_list = serializers.BooleanField()
        # Null once the body is purged (R15) or compacted away before the next refresh.
        body_sha256 = serializers.CharField(allow_null=True)
        body_size = serializers.IntegerField(allow_null=True)
        content_type = serializers.CharField(allow_null=True)
        headers = serializers.SerializerMethodField()
        headers_shown = serializers.SerializerMethodField()
        dead_letter = inline_serializer(
            "DeadLetter",
            {
                "kind": serializers.CharField(help_text=", ".join(DEAD_LETTER_KINDS)),
                "origin": serializers.CharField(help_text="Where it died, in one line."),
                "exception_type": serializers.CharField(),
                "reason": serializers.CharField(),
                "stack": serializers.CharField(allow_null=True),
                "original_queue": serializers.CharField(allow_null=True),
                "original_exchange": serializers.CharField(allow_null=True),
                "original_routing_keys": serializers.ListField(child=serializers.CharField()),
                "count": serializers.IntegerField(allow_null=True),
                "details": serializers.DictField(child=serializers.CharField()),
            },
            allow_null=True,
            help_text="Why the message died before it reached Antidote, from its dead-letter "
            "headers (RabbitMQ's x-death, Kafka Connect's, Kafka Streams' or Spring Kafka's) or "
            "the origin a NATS or Redis Streams source recorded; null if none.",
        )
        conversation_id = serializers.CharField(allow_null=True)
        sender = serializers.CharField(allow_null=True)
        enqueued_at = serializers.DateTimeField(allow_null=True)
        history = _EventSerializer(many=True)

        class Meta:
            ref_name = "MessageDetail"

        @extend_schema_field(
            {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": f"At most {HEADERS_SHOWN} headers, the first as stored, by name; "
                f"a name cut to {HEADER_NAME_SHOWN:,} characters, a value to "
                f"{HEADER_VALUE_SHOWN:,}. `headers_shown` says what is left out; "
                "GET /api/v1/messages/{id}/headers gives them whole.",
            }
        )
        def get_headers(self, obj):
            return {row.name: row.value for row in obj["headers"].rows}

        @extend_schema_field(_HeadersShownSerializer)
        def get_headers_shown(self, obj):
            shown = obj["headers"]
            return {
                "count": shown.count,
                "size": shown.size,
                "shown": len(shown.rows),
                "more": shown.more,
                "more_bytes": shown.more_bytes,
                "cut": shown.cut,
                "complete": shown.complete,
            }

    @extend_schema(
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
                OutputSerializer,
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
                    "body_sha256": "4aff43377204f61702960936de12770"
                    "1a3b56a3235423a4ab282f994255276e0",
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
    def get(self, request, message_id):
        detail = selectors.message_detail(
            message_id=path_key(message_id, not_found="no such message")
        )
        if detail is None:
            raise Http404("no such message")
        return Response(self.OutputSerializer(detail).data)
