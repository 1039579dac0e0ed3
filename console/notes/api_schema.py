"""How /api/v1/notes and /api/v1/investigations stand in the OpenAPI document: each operation's
decoration, with the examples /api/docs/ shows."""

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer

from console.api import BAD_REQUEST, ERRORS, NOT_FOUND, answer, path_parameter, sent
from console.notes import serializers as s

TAGS = ["notes and investigations"]
KIND = OpenApiParameter(
    "kind",
    {"type": "string", "enum": list(s.KINDS)},
    OpenApiParameter.PATH,
    description="What the target is: a message, or a failure group.",
)
TARGET = path_parameter(
    "target_id",
    "The message's id (any printable text, '/' included, percent-encoded) or the failure "
    "group's fingerprint.",
    "order-1",
)

# The examples of /api/docs/.
_NOTE = {
    "id": 1,
    "author": "operator",
    "text": "order_id went missing after the 2.3 release of the shop",
    "created_at": "2026-11-27T07:19:00.681885Z",
}
_TICKET = "https://tickets.example.com/SHOP-231"
_TAKEN = {
    "kind": "messages",
    "target_id": "demo-orders-000008",
    "investigation": {
        "owner": "operator",
        "since": "2026-11-27T07:19:00.757285Z",
        "ticket_url": _TICKET,
    },
    "owner": "operator",
    "via_group": False,
}
_NOBODY = {**_TAKEN, "investigation": None, "owner": None}


def _taken(**investigation):
    """_TAKEN with the investigation changed so."""
    return {**_TAKEN, "investigation": {**_TAKEN["investigation"], **investigation}}


def _on_target(answers, **more):
    """An operation on one message's or failure group's notes or investigation: it may answer
    `answers`, 404 for an unknown target, and the errors every operation may."""
    return extend_schema(
        tags=TAGS,
        parameters=[KIND, TARGET],
        responses={**answers, 404: NOT_FOUND, **ERRORS},
        **more,
    )


note_list = _on_target(
    {
        200: answer(
            inline_serializer("NoteList", {"results": s.NoteSerializer(many=True)}),
            {"results": [_NOTE]},
        )
    },
    operation_id="notes_list",
    description="The notes on a message or a failure group, newest first. Notes are a "
    "record: none is edited or deleted.",
)

note_create = _on_target(
    {201: answer(s.NoteSerializer, _NOTE), 400: BAD_REQUEST},
    operation_id="notes_create",
    description="Add a note to a message or a failure group (the permission to write "
    "notes: operators and approvers). It is in the audit trail.",
    request=s.NoteAddSerializer,
    examples=[sent({"text": _NOTE["text"]})],
)

investigation = _on_target(
    {200: answer(s.InvestigationStateSerializer, _TAKEN)},
    operation_id="investigations_retrieve",
)


def _change(operation_id, summary, description, request, example, answered):
    """A change of an investigation: it answers who is investigating the target now."""
    return _on_target(
        {
            200: answer(s.InvestigationStateSerializer, answered, "Who is investigating it now."),
            400: BAD_REQUEST,
        },
        operation_id=operation_id,
        summary=summary,
        description=description,
        request=request,
        examples=[sent(example)] if example else None,
    )


investigation_take = _change(
    "investigations_take",
    "Start investigating it: it must be nobody's yet (one owner at a time).",
    "Start investigating a message or a failure group, with a ticket link if "
    "you like: it must be nobody's yet (one owner at a time; 400 otherwise).",
    s.InvestigationTakeSerializer,
    {"ticket_url": _TICKET},
    _TAKEN,
)

investigation_hand_over = _change(
    "investigations_hand_over",
    "Give the investigation to someone else: its owner may, and an approver may "
    "for anyone's (403 otherwise).",
    "Give the investigation to someone who may investigate: its owner may, and "
    "an approver may for anyone's (403 otherwise).",
    s.InvestigationHandOverSerializer,
    {"to": "approver"},
    {**_taken(owner="approver"), "owner": "approver"},
)

investigation_release = _change(
    "investigations_release",
    "Stop investigating it: its owner may, and an approver may for anyone's.",
    "Stop investigating a message or a failure group: it is nobody's again. "
    "Its owner may, and an approver may for anyone's (403 otherwise).",
    None,
    None,
    _NOBODY,
)

investigation_ticket = _change(
    "investigations_ticket",
    "Set, change or clear the investigation's ticket link: its owner may, and an "
    "approver may for anyone's.",
    "Set, change or clear (an empty ticket_url) the investigation's ticket "
    "link: its owner may, and an approver may for anyone's (403 otherwise).",
    s.InvestigationTicketSerializer,
    {"ticket_url": "https://tickets.example.com/SHOP-232"},
    _taken(ticket_url="https://tickets.example.com/SHOP-232"),
)


# --- A failure group's lifecycle ------------------------------------------------------------------

FINGERPRINT = path_parameter("fingerprint", "The failure group's fingerprint.", "f" * 64)
_ACKNOWLEDGED = {
    "state": "acknowledged",
    "since": "2026-11-27T07:19:00.757285Z",
    "owner": "operator",
    "changed_by": "operator",
    "comment": "SHOP-231: order_id went missing in the shop's 2.3 release",
    "reopened": False,
}
_LIFECYCLE = {
    "fingerprint": "f" * 64,
    "status": _ACKNOWLEDGED,
    "lifecycle": [
        {
            "state": "open",
            "since": "2026-11-27T07:02:11Z",
            "until": "2026-11-27T07:19:00.757285Z",
            "seconds": 1009.757,
            "changed_by": "",
            "comment": "",
            "reopened": False,
        },
        {
            "state": "acknowledged",
            "since": "2026-11-27T07:19:00.757285Z",
            "until": None,
            "seconds": 420.0,
            "changed_by": "operator",
            "comment": _ACKNOWLEDGED["comment"],
            "reopened": False,
        },
    ],
}


def _on_group(answers, **more):
    return extend_schema(
        tags=TAGS,
        parameters=[FINGERPRINT],
        responses={**answers, 404: NOT_FOUND, **ERRORS},
        **more,
    )


group_lifecycle = _on_group(
    {200: answer(s.GroupLifecycleSerializer, _LIFECYCLE)},
    operation_id="groups_status_retrieve",
    description="Where a failure group stands (open, acknowledged, resolved, ignored) and how "
    "long it stood in each state.",
)

group_status_set = _on_group(
    {200: answer(s.GroupLifecycleSerializer, _LIFECYCLE, "Where it stands now."), 400: BAD_REQUEST},
    operation_id="groups_status_set",
    description="Move a failure group (the permission to investigate: operators and approvers): "
    "acknowledge it (you own it), resolve it (a fix is out: a new failure reopens it and alerts), "
    "ignore it (muted: its failures land and count, with no alert and off the dashboard's top "
    "list), or open it again. 400 when it is in that state already. In the audit trail.",
    request=s.GroupStatusChangeSerializer,
    examples=[sent({"state": "acknowledged", "comment": _ACKNOWLEDGED["comment"]})],
)
