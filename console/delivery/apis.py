"""/api/v1/poison-list: the shared poison list (R9) as an API of its own, for the console and for
applications outside the product (the AMPS pattern: read the list, skip what is on it, report
what you failed on).

How a consumer keeps a copy of the list current:
1. GET /api/v1/poison-list, page after page (`after` = the previous page's `next`), and keep the
   `cursor` of the FIRST page: it is read before that page, so no change falls between it and
   the pages.
2. Then, as often as it likes, GET /api/v1/poison-list/changes?since=<cursor>, apply the changes
   in order (they are idempotent: applying one twice changes nothing), and keep the answer's
   `cursor` for the next call; ask again at once while `more` is true.
A change is `added` (the id is listed with this reason and, if given, body hash; it replaces
what the copy held for that id), `removed` (the id is off the list), or `body_cleared` (the
entry stays listed by id but no longer poisons that body hash: a message with that body was
reprocessed). The client in static/clients/antidote_poison.py does all of this.

Refusals are {"detail": "<one readable sentence>"}, with the messages by field in "errors" for
input that is not valid (400); 401 without credentials, 403 without the permission.
"""

import re

from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api import (
    BAD_REQUEST,
    ERRORS,
    NOT_FOUND,
    JSONParser,
    answer,
    invalid_input,
    path_key,
    path_parameter,
    sent,
)
from console.delivery import selectors
from console.delivery.models import PoisonChange, PoisonEntry
from console.delivery.poison import poison_cursor, poison_remove, poison_report
from console.ingest.services import ID_MAX_LENGTH
from console.permissions import REMOVE_POISON, REPORT_POISON, VIEW_POISON_LIST, has_perms

PAGE = 500
PAGE_MAX = 1000
# Most ids, and most body hashes, that one check may ask about.
CHECK_MAX = 1000
REASON_MAX = 2000
QUEUE_MAX = PoisonEntry._meta.get_field("queue").max_length
_SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")


# --- Input ---------------------------------------------------------------------------------------


class _MessageIdField(serializers.CharField):
    """A message id as ingest takes them: 1 to 200 printable characters."""

    def __init__(self, **kwargs):
        kwargs.setdefault("min_length", 1)
        super().__init__(max_length=ID_MAX_LENGTH, trim_whitespace=False, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not value.isprintable():
            raise serializers.ValidationError("must be printable text")
        return value


class _Sha256Field(serializers.CharField):
    """A SHA-256 in hex: 64 hex digits, upper or lower case, answered in lower case."""

    def __init__(self, **kwargs):
        super().__init__(max_length=64, trim_whitespace=False, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if value and not _SHA256.match(value):
            raise serializers.ValidationError("must be a SHA-256: 64 hexadecimal digits")
        return value.lower()


class _PoisonListApi(APIView):
    parser_classes = [JSONParser]

    def handle_exception(self, exc):
        if isinstance(exc, exceptions.ValidationError):
            return invalid_input(exc)
        return super().handle_exception(exc)


def _valid(serializer_class, data):
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


# --- Output --------------------------------------------------------------------------------------


class _EntrySerializer(serializers.Serializer):
    message_id = serializers.CharField()
    body_sha256 = serializers.CharField(help_text="Empty when no body hash is listed with it.")
    queue = serializers.CharField()
    reason = serializers.CharField()
    source = serializers.CharField(help_text='"engine", or the user name that reported it.')
    added_at = serializers.DateTimeField()

    class Meta:
        ref_name = "PoisonEntry"


class _ChangeSerializer(serializers.Serializer):
    cursor = serializers.IntegerField(source="id")
    kind = serializers.ChoiceField(choices=PoisonChange.KINDS)
    message_id = serializers.CharField()
    body_sha256 = serializers.CharField(
        help_text="added: the entry's hash (may be empty); removed: the hash that went with it; "
        "body_cleared: the hash that no longer poisons."
    )
    queue = serializers.CharField()
    reason = serializers.CharField(help_text="added: the entry's reason; otherwise why.")
    source = serializers.CharField(help_text="Who made the change.")
    at = serializers.DateTimeField()

    class Meta:
        ref_name = "PoisonChange"


_CURSOR_HELP = "The change log's cursor: ask /api/v1/poison-list/changes from it."

KEEPING_A_COPY = """

Keeping a copy of the list current: read GET /api/v1/poison-list page after page and keep the
`cursor` of the first page; then poll GET /api/v1/poison-list/changes?since=<cursor>, apply the
changes in order (`added`: the id is listed, with this reason and body hash, replacing what the
copy held for it; `removed`: the id is off the list; `body_cleared`: the entry stays, but its
body hash no longer poisons), keep the answer's `cursor`, and ask again at once while `more` is
true. Applying a change twice changes nothing."""


def _described(doc):
    """An operation's description: its view's docstring, and how to keep a copy current."""
    return " ".join(doc.split()) + KEEPING_A_COPY


# The examples of /api/docs/.
_BODY = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
_REPORT = {
    "message_id": "order-7",
    "reason": "ValueError: unknown currency XBT",
    "queue": "orders",
    "body_sha256": _BODY,
}
_ENTRY = {**_REPORT, "source": "shop-consumer", "added_at": "2026-11-27T07:19:22.588668Z"}


# --- Endpoints -----------------------------------------------------------------------------------


class PoisonListApi(_PoisonListApi):
    """The poison list, by message id, a page at a time. Keep the `cursor` of the first page and,
    once every page is read, follow /api/v1/poison-list/changes from it: the changes made while
    the pages were read are there."""

    permission_classes = [has_perms(VIEW_POISON_LIST)]

    class FilterSerializer(serializers.Serializer):
        after = _MessageIdField(required=False, help_text="The previous page's `next`.")
        limit = serializers.IntegerField(
            required=False, min_value=1, max_value=PAGE_MAX, help_text=f"{PAGE} by default."
        )

    @extend_schema(
        operation_id="poison_list",
        # The docstring of the class being defined.
        description=_described(__doc__),
        parameters=[FilterSerializer],
        responses={
            200: answer(
                inline_serializer(
                    "PoisonListPage",
                    {
                        "results": _EntrySerializer(many=True),
                        "next": serializers.CharField(
                            allow_null=True,
                            help_text="`after` for the next page; null on the last.",
                        ),
                        "cursor": serializers.IntegerField(help_text=_CURSOR_HELP),
                    },
                ),
                {"results": [_ENTRY], "next": "order-7", "cursor": 21},
            ),
            400: BAD_REQUEST,
            **ERRORS,
        },
    )
    def get(self, request):
        query = _valid(self.FilterSerializer, request.query_params)
        # Read before the page: a change made after it is in the changes since it.
        cursor = poison_cursor()
        entries, following = selectors.poison_page(
            after=query.get("after"), limit=query.get("limit") or PAGE
        )
        return Response(
            {
                "results": _EntrySerializer(entries, many=True).data,
                "next": following,
                "cursor": cursor,
            }
        )


class PoisonChangesApi(_PoisonListApi):
    """The changes of the poison list after a cursor, oldest first. Apply them in order, keep the
    answer's `cursor`, and ask again at once while `more` is true."""

    permission_classes = [has_perms(VIEW_POISON_LIST)]

    class FilterSerializer(serializers.Serializer):
        since = serializers.IntegerField(
            min_value=0,
            max_value=2**63 - 1,
            help_text="A cursor from the list or a previous answer; 0 for every change.",
        )
        limit = serializers.IntegerField(
            required=False, min_value=1, max_value=PAGE_MAX, help_text=f"{PAGE} by default."
        )

    @extend_schema(
        operation_id="poison_list_changes",
        # The docstring of the class being defined.
        description=_described(__doc__),
        parameters=[FilterSerializer],
        responses={
            200: answer(
                inline_serializer(
                    "PoisonChangePage",
                    {
                        "results": _ChangeSerializer(many=True),
                        "cursor": serializers.IntegerField(
                            help_text="`since` for the next call: the last change's cursor, or "
                            "`since` itself when there was none."
                        ),
                        "more": serializers.BooleanField(help_text="More changes are waiting."),
                    },
                ),
                {
                    "results": [
                        {
                            "cursor": 21,
                            "kind": "added",
                            "message_id": "order-7",
                            "body_sha256": _BODY,
                            "queue": "orders",
                            "reason": "ValueError: unknown currency XBT",
                            "source": "shop-consumer",
                            "at": "2026-11-27T07:19:22.588668Z",
                        },
                        {
                            "cursor": 22,
                            "kind": "removed",
                            "message_id": "demo-orders-000008",
                            "body_sha256": "",
                            "queue": "orders",
                            "reason": "removed by admin",
                            "source": "admin",
                            "at": "2026-11-27T07:20:56.231457Z",
                        },
                    ],
                    "cursor": 22,
                    "more": False,
                },
            ),
            400: BAD_REQUEST,
            **ERRORS,
        },
    )
    def get(self, request):
        query = _valid(self.FilterSerializer, request.query_params)
        changes, cursor, more = selectors.poison_changes(
            since=query["since"], limit=query.get("limit") or PAGE
        )
        return Response(
            {"results": _ChangeSerializer(changes, many=True).data, "cursor": cursor, "more": more}
        )


class PoisonCheckApi(_PoisonListApi):
    """Which of these message ids and body hashes (SHA-256 of the body's bytes) are on the list,
    in one call; only those that are come back. An application with no copy of the list asks
    this before it processes a batch."""

    permission_classes = [has_perms(VIEW_POISON_LIST)]

    class InputSerializer(serializers.Serializer):
        ids = serializers.ListField(
            child=_MessageIdField(), required=False, max_length=CHECK_MAX, default=list
        )
        body_sha256 = serializers.ListField(
            child=_Sha256Field(min_length=64),
            required=False,
            max_length=CHECK_MAX,
            default=list,
        )

        class Meta:
            ref_name = "PoisonCheck"

    @extend_schema(
        operation_id="poison_list_check",
        # The docstring of the class being defined.
        description=_described(__doc__),
        request=InputSerializer,
        examples=[sent({"ids": ["order-7", "order-8"], "body_sha256": [_BODY]})],
        responses={
            200: answer(
                inline_serializer(
                    "PoisonCheckResult",
                    {
                        "ids": inline_serializer(
                            "PoisonedId",
                            {
                                "message_id": serializers.CharField(),
                                "reason": serializers.CharField(),
                            },
                            many=True,
                        ),
                        "body_sha256": inline_serializer(
                            "PoisonedBody",
                            {
                                "body_sha256": serializers.CharField(),
                                "reason": serializers.CharField(
                                    help_text="The reason of the newest entry with that body."
                                ),
                            },
                            many=True,
                        ),
                    },
                ),
                {
                    "ids": [{"message_id": "order-7", "reason": _REPORT["reason"]}],
                    "body_sha256": [{"body_sha256": _BODY, "reason": _REPORT["reason"]}],
                },
                "Those that are on the list.",
            ),
            400: BAD_REQUEST,
            **ERRORS,
        },
    )
    def post(self, request):
        data = _valid(self.InputSerializer, request.data)
        listed, bodies = selectors.poison_check(ids=data["ids"], hashes=data["body_sha256"])
        return Response(
            {
                "ids": [
                    {"message_id": i, "reason": listed[i]}
                    for i in dict.fromkeys(data["ids"])
                    if i in listed
                ],
                "body_sha256": [
                    {"body_sha256": h, "reason": bodies[h]}
                    for h in dict.fromkeys(data["body_sha256"])
                    if h in bodies
                ],
            }
        )


class PoisonReportApi(_PoisonListApi):
    """Report a message this application failed on: it goes on the list (or its entry is
    replaced) with the caller's user name as its source, and the report is in the audit trail.
    Delivery runs already running see it before their next batch. Without `body_sha256`, an
    entry already listed for the id keeps its body hash."""

    permission_classes = [has_perms(REPORT_POISON)]

    class InputSerializer(serializers.Serializer):
        message_id = _MessageIdField()
        reason = serializers.CharField(max_length=REASON_MAX, help_text="Why it failed.")
        queue = serializers.CharField(
            required=False, allow_blank=True, max_length=QUEUE_MAX, default=""
        )
        body_sha256 = _Sha256Field(
            required=False,
            allow_blank=True,
            default="",
            help_text="SHA-256 of the body's bytes, in hex: the body poisons too on queues that "
            "match by body.",
        )

        class Meta:
            ref_name = "PoisonReport"

    @extend_schema(
        operation_id="poison_list_report",
        # The docstring of the class being defined.
        description=_described(__doc__),
        request=InputSerializer,
        examples=[sent(_REPORT)],
        responses={
            201: answer(_EntrySerializer, _ENTRY, "The entry, as now listed."),
            400: BAD_REQUEST,
            **ERRORS,
        },
    )
    def post(self, request):
        data = _valid(self.InputSerializer, request.data)
        entry, _ = poison_report(actor=request.user, **data)
        return Response(_EntrySerializer(entry).data, status=status.HTTP_201_CREATED)


class PoisonEntryApi(_PoisonListApi):
    """One entry of the list: read it, or (administrators) take it off the list. Removing it
    does not touch the message, which stays quarantined if it is; other entries with the same
    body hash keep it. The removal is in the audit trail."""

    def get_permissions(self):
        perm = REMOVE_POISON if self.request.method == "DELETE" else VIEW_POISON_LIST
        return [has_perms(perm)()]

    def _message_id(self, message_id):
        return path_key(message_id, not_found="not on the poison list")

    @extend_schema(
        operation_id="poison_list_entry",
        description=_described(
            "One entry of the list, by its message id: its reason, body hash, queue, and who "
            "put it there; 404 when the id is not on the list."
        ),
        parameters=[path_parameter("message_id", "The message's id.", "order-1")],
        responses={200: answer(_EntrySerializer, _ENTRY), 404: NOT_FOUND, **ERRORS},
    )
    def get(self, request, message_id):
        entry = selectors.poison_entry_get(message_id=self._message_id(message_id))
        if entry is None:
            raise Http404("not on the poison list")
        return Response(_EntrySerializer(entry).data)

    @extend_schema(
        operation_id="poison_list_remove",
        # The docstring of the class being defined.
        description=_described(__doc__.replace("read it, or (administrators) ", "")),
        parameters=[path_parameter("message_id", "The message's id.", "order-1")],
        responses={
            204: OpenApiResponse(description="Taken off the list."),
            404: NOT_FOUND,
            **ERRORS,
        },
    )
    def delete(self, request, message_id):
        if poison_remove(actor=request.user, message_id=self._message_id(message_id)) is None:
            raise Http404("not on the poison list")
        return Response(status=status.HTTP_204_NO_CONTENT)
