"""/api/v1/notes and /api/v1/investigations: the notes on a message or a failure group (read,
add), and who is investigating it (read; take, hand over, release, set the ticket link). The
screens' permissions; the services check them again and record every change in the audit trail.

The kind comes first in the path, the target's id last and whole (ids hold "/"); the actions
come before the kind, so that no id can be read as one."""

from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api import (
    BAD_REQUEST,
    ERRORS,
    NOT_FOUND,
    JSONParser,
    ServiceRefusals,
    answer,
    path_key,
    path_parameter,
    sent,
)
from console.notes import selectors, services
from console.notes.models import GROUP, MESSAGE, NOTE_MAX, TICKET_URL_MAX
from console.permissions import INVESTIGATE, VIEW_NOTES, WRITE_NOTES, has_perms, needs_text

TAGS = ["notes and investigations"]
# The path's word for each kind.
KINDS = {"messages": MESSAGE, "groups": GROUP}
KIND = OpenApiParameter(
    "kind",
    {"type": "string", "enum": list(KINDS)},
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


def _target(kind, target_id):
    """(kind, id) of the path, or 404 for an unknown kind or target."""
    if kind not in KINDS:
        raise Http404("no such kind: messages or groups")
    kind = KINDS[kind]
    target_id = path_key(target_id, not_found="no such target")
    if not services.target_exists(kind=kind, target_id=target_id):
        raise Http404(f"no such {'message' if kind == MESSAGE else 'failure group'}")
    return kind, target_id


class NoteSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    author = serializers.CharField(source="author_name", help_text="the author's username")
    text = serializers.CharField(help_text="plain text, as typed (line breaks kept)")
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "Note"


class InvestigationSerializer(serializers.Serializer):
    owner = serializers.CharField(source="owner.username", help_text="who is investigating")
    since = serializers.DateTimeField(help_text="since when (taken or handed over)")
    ticket_url = serializers.CharField(help_text="a link to a ticket (http or https), or empty")

    class Meta:
        ref_name = "Investigation"


class InvestigationStateSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(list(KINDS))
    target_id = serializers.CharField()
    investigation = InvestigationSerializer(
        allow_null=True, help_text="its own investigation, or null"
    )
    owner = serializers.CharField(
        allow_null=True,
        help_text="who owns it: its own investigation's owner, or for a message, its failure "
        "group's owner when nobody took the message itself; null for nobody",
    )
    via_group = serializers.BooleanField(help_text="the owner is the failure group's owner")

    class Meta:
        ref_name = "InvestigationState"


def _state(kind_word, kind, target_id):
    own = selectors.investigation_get(kind=kind, target_id=target_id)
    effective, via_group = own, False
    if kind == MESSAGE and own is None:
        group_id = selectors.message_group_id(message_id=target_id)
        effective, via_group = selectors.message_investigation(
            message_id=target_id, group_id=group_id
        )
    return {
        "kind": kind_word,
        "target_id": target_id,
        "investigation": InvestigationSerializer(own).data if own else None,
        "owner": effective.owner.get_username() if effective else None,
        "via_group": via_group,
    }


class NoteListApi(ServiceRefusals, APIView):
    """The notes on a message or a failure group, newest first; and adding one. Notes are a
    record: none is edited or deleted."""

    permission_classes = [has_perms(VIEW_NOTES)]
    # JSON only, as the other writes: a form post of thousands of fields is no note.
    parser_classes = [JSONParser]

    class InputSerializer(serializers.Serializer):
        text = serializers.CharField(
            max_length=NOTE_MAX,
            trim_whitespace=False,
            help_text=f"Plain text, at most {NOTE_MAX:,} characters; shown as typed, never as "
            "markup.",
        )

        class Meta:
            ref_name = "NoteAdd"

    @extend_schema(
        operation_id="notes_list",
        description="The notes on a message or a failure group, newest first. Notes are a "
        "record: none is edited or deleted.",
        tags=TAGS,
        parameters=[KIND, TARGET],
        responses={
            200: answer(
                inline_serializer("NoteList", {"results": NoteSerializer(many=True)}),
                {"results": [_NOTE]},
            ),
            404: NOT_FOUND,
            **ERRORS,
        },
    )
    def get(self, request, kind, target_id):
        kind, target_id = _target(kind, target_id)
        notes = selectors.notes_list(kind=kind, target_id=target_id)
        return Response({"results": NoteSerializer(notes, many=True).data})

    @extend_schema(
        operation_id="notes_create",
        description="Add a note to a message or a failure group (the permission to write "
        "notes: operators and approvers). It is in the audit trail.",
        tags=TAGS,
        parameters=[KIND, TARGET],
        request=InputSerializer,
        examples=[sent({"text": _NOTE["text"]})],
        responses={
            201: answer(NoteSerializer, _NOTE),
            400: BAD_REQUEST,
            404: NOT_FOUND,
            **ERRORS,
        },
    )
    def post(self, request, kind, target_id):
        if not request.user.has_perm(WRITE_NOTES):
            self.permission_denied(request, message=needs_text([WRITE_NOTES]))
        kind, target_id = _target(kind, target_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        note = services.note_add(
            actor=request.user, kind=kind, target_id=target_id, text=data.validated_data["text"]
        )
        return Response(NoteSerializer(note).data, status=status.HTTP_201_CREATED)


class InvestigationApi(APIView):
    """Who is investigating a message or a failure group, since when, and its ticket link."""

    permission_classes = [has_perms(VIEW_NOTES)]

    @extend_schema(
        operation_id="investigations_retrieve",
        tags=TAGS,
        parameters=[KIND, TARGET],
        responses={
            200: answer(InvestigationStateSerializer, _TAKEN),
            404: NOT_FOUND,
            **ERRORS,
        },
    )
    def get(self, request, kind, target_id):
        word = kind
        kind, target_id = _target(kind, target_id)
        return Response(_state(word, kind, target_id))


class _InvestigationChangeApi(ServiceRefusals, APIView):
    """A change of an investigation: the service it calls, with the validated input."""

    permission_classes = [has_perms(VIEW_NOTES, INVESTIGATE)]
    parser_classes = [JSONParser]

    class InputSerializer(serializers.Serializer):
        pass

        class Meta:
            ref_name = "InvestigationChange"

    def change(self, *, actor, kind, target_id, data):
        raise NotImplementedError

    def post(self, request, kind, target_id):
        word = kind
        kind, target_id = _target(kind, target_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        self.change(actor=request.user, kind=kind, target_id=target_id, data=data.validated_data)
        return Response(_state(word, kind, target_id))


def _ticket_field(help_text):
    return serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=TICKET_URL_MAX,
        help_text=help_text,
    )


def _changed(example):
    return {
        200: answer(InvestigationStateSerializer, example, "Who is investigating it now."),
        400: BAD_REQUEST,
        404: NOT_FOUND,
        **ERRORS,
    }


class InvestigationTakeApi(_InvestigationChangeApi):
    class InputSerializer(serializers.Serializer):
        ticket_url = _ticket_field("A link to a ticket: an http:// or https:// URL. Optional.")

        class Meta:
            ref_name = "InvestigationTake"

    @extend_schema(
        operation_id="investigations_take",
        tags=TAGS,
        summary="Start investigating it: it must be nobody's yet (one owner at a time).",
        description="Start investigating a message or a failure group, with a ticket link if "
        "you like: it must be nobody's yet (one owner at a time; 400 otherwise).",
        parameters=[KIND, TARGET],
        request=InputSerializer,
        examples=[sent({"ticket_url": _TICKET})],
        responses=_changed(_TAKEN),
    )
    def post(self, request, kind, target_id):
        return super().post(request, kind, target_id)

    def change(self, *, actor, kind, target_id, data):
        services.investigation_take(
            actor=actor, kind=kind, target_id=target_id, ticket_url=data.get("ticket_url", "")
        )


class InvestigationHandOverApi(_InvestigationChangeApi):
    class InputSerializer(serializers.Serializer):
        to = serializers.CharField(
            max_length=150, help_text="The username of someone who may investigate."
        )

        class Meta:
            ref_name = "InvestigationHandOver"

    @extend_schema(
        operation_id="investigations_hand_over",
        tags=TAGS,
        summary="Give the investigation to someone else: its owner may, and an approver may "
        "for anyone's (403 otherwise).",
        description="Give the investigation to someone who may investigate: its owner may, and "
        "an approver may for anyone's (403 otherwise).",
        parameters=[KIND, TARGET],
        request=InputSerializer,
        examples=[sent({"to": "approver"})],
        responses=_changed(
            {
                **_TAKEN,
                "investigation": {**_TAKEN["investigation"], "owner": "approver"},
                "owner": "approver",
            }
        ),
    )
    def post(self, request, kind, target_id):
        return super().post(request, kind, target_id)

    def change(self, *, actor, kind, target_id, data):
        services.investigation_hand_over(actor=actor, kind=kind, target_id=target_id, to=data["to"])


class InvestigationReleaseApi(_InvestigationChangeApi):
    @extend_schema(
        operation_id="investigations_release",
        tags=TAGS,
        summary="Stop investigating it: its owner may, and an approver may for anyone's.",
        description="Stop investigating a message or a failure group: it is nobody's again. "
        "Its owner may, and an approver may for anyone's (403 otherwise).",
        parameters=[KIND, TARGET],
        request=None,
        responses=_changed(_NOBODY),
    )
    def post(self, request, kind, target_id):
        return super().post(request, kind, target_id)

    def change(self, *, actor, kind, target_id, data):
        services.investigation_release(actor=actor, kind=kind, target_id=target_id)


class InvestigationTicketApi(_InvestigationChangeApi):
    class InputSerializer(serializers.Serializer):
        ticket_url = _ticket_field("An http:// or https:// URL; empty to clear the link.")

        class Meta:
            ref_name = "InvestigationTicket"

    @extend_schema(
        operation_id="investigations_ticket",
        tags=TAGS,
        summary="Set, change or clear the investigation's ticket link: its owner may, and an "
        "approver may for anyone's.",
        description="Set, change or clear (an empty ticket_url) the investigation's ticket "
        "link: its owner may, and an approver may for anyone's (403 otherwise).",
        parameters=[KIND, TARGET],
        request=InputSerializer,
        examples=[sent({"ticket_url": "https://tickets.example.com/SHOP-232"})],
        responses=_changed(
            {
                **_TAKEN,
                "investigation": {
                    **_TAKEN["investigation"],
                    "ticket_url": "https://tickets.example.com/SHOP-232",
                },
            }
        ),
    )
    def post(self, request, kind, target_id):
        return super().post(request, kind, target_id)

    def change(self, *, actor, kind, target_id, data):
        services.investigation_ticket_set(
            actor=actor, kind=kind, target_id=target_id, ticket_url=data.get("ticket_url", "")
        )
