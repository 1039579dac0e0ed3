"""/api/v1/notes and /api/v1/investigations: the notes on a message or a failure group (read,
add), and who is investigating it (read; take, hand over, release, set the ticket link);
/api/v1/groups/<fingerprint>/status: a failure group's lifecycle (read; move). The
screens' permissions; the services check them again and record every change in the audit trail.

The kind comes first in the path, the target's id last and whole (ids hold "/"); the actions
come before the kind, so that no id can be read as one."""

from django.http import Http404
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api import JSONParser, ServiceRefusals, path_key, valid_input
from console.notes import api_schema, lifecycle, selectors, serializers, services
from console.notes.models import MESSAGE
from console.permissions import (
    INVESTIGATE,
    VIEW_GROUPS,
    VIEW_NOTES,
    WRITE_NOTES,
    has_perms,
    needs_text,
)


def _target(kind, target_id):
    """(kind, id) of the path, or 404 for an unknown kind or target."""
    if kind not in serializers.KINDS:
        raise Http404("no such kind: messages or groups")
    kind = serializers.KINDS[kind]
    target_id = path_key(target_id, not_found="no such target")
    if not services.target_exists(kind=kind, target_id=target_id):
        raise Http404(f"no such {'message' if kind == MESSAGE else 'failure group'}")
    return kind, target_id


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
        "investigation": serializers.InvestigationSerializer(own).data if own else None,
        "owner": effective.owner.get_username() if effective else None,
        "via_group": via_group,
    }


class NoteListApi(ServiceRefusals, APIView):
    """The notes on a message or a failure group, newest first; and adding one. Notes are a
    record: none is edited or deleted."""

    permission_classes = [has_perms(VIEW_NOTES)]
    # JSON only, as the other writes: a form post of thousands of fields is no note.
    parser_classes = [JSONParser]

    @api_schema.note_list
    def get(self, request, kind, target_id):
        kind, target_id = _target(kind, target_id)
        notes = selectors.notes_list(kind=kind, target_id=target_id)
        return Response({"results": serializers.NoteSerializer(notes, many=True).data})

    @api_schema.note_create
    def post(self, request, kind, target_id):
        if not request.user.has_perm(WRITE_NOTES):
            self.permission_denied(request, message=needs_text([WRITE_NOTES]))
        kind, target_id = _target(kind, target_id)
        data = valid_input(serializers.NoteAddSerializer, request.data)
        note = services.note_add(
            actor=request.user, kind=kind, target_id=target_id, text=data["text"]
        )
        return Response(serializers.NoteSerializer(note).data, status=status.HTTP_201_CREATED)


class InvestigationApi(APIView):
    """Who is investigating a message or a failure group, since when, and its ticket link."""

    permission_classes = [has_perms(VIEW_NOTES)]

    @api_schema.investigation
    def get(self, request, kind, target_id):
        word = kind
        kind, target_id = _target(kind, target_id)
        return Response(_state(word, kind, target_id))


class _InvestigationChangeApi(ServiceRefusals, APIView):
    """A change of an investigation: the service it calls, with the validated input."""

    permission_classes = [has_perms(VIEW_NOTES, INVESTIGATE)]
    parser_classes = [JSONParser]
    input_serializer = serializers.InvestigationReleaseSerializer

    def change(self, *, actor, kind, target_id, data):
        raise NotImplementedError

    def post(self, request, kind, target_id):
        word = kind
        kind, target_id = _target(kind, target_id)
        data = valid_input(self.input_serializer, request.data)
        self.change(actor=request.user, kind=kind, target_id=target_id, data=data)
        return Response(_state(word, kind, target_id))


class InvestigationTakeApi(_InvestigationChangeApi):
    input_serializer = serializers.InvestigationTakeSerializer

    @api_schema.investigation_take
    def post(self, request, kind, target_id):
        return super().post(request, kind, target_id)

    def change(self, *, actor, kind, target_id, data):
        services.investigation_take(
            actor=actor, kind=kind, target_id=target_id, ticket_url=data.get("ticket_url", "")
        )


class InvestigationHandOverApi(_InvestigationChangeApi):
    input_serializer = serializers.InvestigationHandOverSerializer

    @api_schema.investigation_hand_over
    def post(self, request, kind, target_id):
        return super().post(request, kind, target_id)

    def change(self, *, actor, kind, target_id, data):
        services.investigation_hand_over(actor=actor, kind=kind, target_id=target_id, to=data["to"])


class InvestigationReleaseApi(_InvestigationChangeApi):
    @api_schema.investigation_release
    def post(self, request, kind, target_id):
        return super().post(request, kind, target_id)

    def change(self, *, actor, kind, target_id, data):
        services.investigation_release(actor=actor, kind=kind, target_id=target_id)


class InvestigationTicketApi(_InvestigationChangeApi):
    input_serializer = serializers.InvestigationTicketSerializer

    @api_schema.investigation_ticket
    def post(self, request, kind, target_id):
        return super().post(request, kind, target_id)

    def change(self, *, actor, kind, target_id, data):
        services.investigation_ticket_set(
            actor=actor, kind=kind, target_id=target_id, ticket_url=data.get("ticket_url", "")
        )


class GroupStatusApi(ServiceRefusals, APIView):
    """A failure group's lifecycle: where it stands and how long it stood in each state; and
    moving it (acknowledge, resolve, ignore, open again)."""

    permission_classes = [has_perms(VIEW_GROUPS)]
    parser_classes = [JSONParser]

    @staticmethod
    def _answer(fingerprint):
        group = lifecycle.failure_group(fingerprint=fingerprint)
        if group is None:
            raise Http404("no such failure group")
        return Response(
            serializers.GroupLifecycleSerializer(
                {
                    "fingerprint": fingerprint,
                    "status": lifecycle.group_status(fingerprint=fingerprint),
                    "lifecycle": lifecycle.group_lifecycle(
                        fingerprint=fingerprint, first_seen=group.first_seen
                    ),
                }
            ).data
        )

    @api_schema.group_lifecycle
    def get(self, request, fingerprint):
        return self._answer(path_key(fingerprint, not_found="no such failure group"))

    @api_schema.group_status_set
    def post(self, request, fingerprint):
        if not request.user.has_perm(INVESTIGATE):
            self.permission_denied(request, message=needs_text([INVESTIGATE]))
        fingerprint = path_key(fingerprint, not_found="no such failure group")
        if lifecycle.failure_group(fingerprint=fingerprint) is None:
            raise Http404("no such failure group")
        data = valid_input(serializers.GroupStatusChangeSerializer, request.data)
        lifecycle.group_status_set(
            actor=request.user,
            fingerprint=fingerprint,
            state=data["state"],
            comment=data.get("comment", ""),
        )
        return self._answer(fingerprint)
