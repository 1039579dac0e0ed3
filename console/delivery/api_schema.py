"""How /api/v1/poison-list stands in the OpenAPI document: each operation's decoration, with the
examples /api/docs/ shows. Each operation's description is its view's docstring followed by how
to keep a copy of the list current, so these decorations take the docstring."""

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers

from console.api import BAD_REQUEST, ERRORS, NOT_FOUND, answer, path_parameter, sent
from console.delivery import serializers as s

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
_MESSAGE_ID = path_parameter("message_id", "The message's id.", "order-1")


def _operation(operation_id, answers, **more):
    """An operation's decoration, made from its view's docstring (see _described)."""

    def decoration(doc):
        return extend_schema(
            operation_id=operation_id,
            description=_described(doc),
            responses={**answers, **ERRORS},
            **more,
        )

    return decoration


poison_list = _operation(
    "poison_list",
    {
        200: answer(
            inline_serializer(
                "PoisonListPage",
                {
                    "results": s.EntrySerializer(many=True),
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
    },
    parameters=[s.PoisonListFilterSerializer],
)

poison_changes = _operation(
    "poison_list_changes",
    {
        200: answer(
            inline_serializer(
                "PoisonChangePage",
                {
                    "results": s.ChangeSerializer(many=True),
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
    },
    parameters=[s.PoisonChangesFilterSerializer],
)


def _found(name, key, help_text=None):
    """The schema of the list of `key`s a check found on the list, each with its reason."""
    # Made in this order, the fields are listed in it.
    found = serializers.CharField()
    reason = serializers.CharField(help_text=help_text) if help_text else serializers.CharField()
    return inline_serializer(name, {key: found, "reason": reason}, many=True)


poison_check = _operation(
    "poison_list_check",
    {
        200: answer(
            inline_serializer(
                "PoisonCheckResult",
                {
                    "ids": _found("PoisonedId", "message_id"),
                    "body_sha256": _found(
                        "PoisonedBody",
                        "body_sha256",
                        "The reason of the newest entry with that body.",
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
    },
    request=s.PoisonCheckSerializer,
    examples=[sent({"ids": ["order-7", "order-8"], "body_sha256": [_BODY]})],
)

poison_report = _operation(
    "poison_list_report",
    {201: answer(s.EntrySerializer, _ENTRY, "The entry, as now listed."), 400: BAD_REQUEST},
    request=s.PoisonReportSerializer,
    examples=[sent(_REPORT)],
)

# Applied as is: the view's docstring speaks of its removal too.
poison_entry = _operation(
    "poison_list_entry",
    {200: answer(s.EntrySerializer, _ENTRY), 404: NOT_FOUND},
    parameters=[_MESSAGE_ID],
)(
    "One entry of the list, by its message id: its reason, body hash, queue, and who put it "
    "there; 404 when the id is not on the list."
)


def poison_remove(doc):
    # The view's docstring speaks of reading the entry too.
    return _operation(
        "poison_list_remove",
        {204: OpenApiResponse(description="Taken off the list."), 404: NOT_FOUND},
        parameters=[_MESSAGE_ID],
    )(doc.replace("read it, or (administrators) ", ""))
