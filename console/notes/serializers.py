"""The shapes of /api/v1/notes and /api/v1/investigations: a note, an investigation, who owns
a target, and what adding a note or changing an investigation sends."""

from rest_framework import serializers

from console.api import optional_comment
from console.notes.lifecycle import STATE_NAMES
from console.notes.models import COMMENT_MAX, GROUP, MESSAGE, NOTE_MAX, TICKET_URL_MAX

# The path's word for each kind.
KINDS = {"messages": MESSAGE, "groups": GROUP}


class NoteSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    author = serializers.CharField(source="author_name", help_text="the author's username")
    text = serializers.CharField(help_text="plain text, as typed (line breaks kept)")
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "Note"


class NoteAddSerializer(serializers.Serializer):
    text = serializers.CharField(
        max_length=NOTE_MAX,
        trim_whitespace=False,
        help_text=f"Plain text, at most {NOTE_MAX:,} characters; shown as typed, never as markup.",
    )

    class Meta:
        ref_name = "NoteAdd"


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


# --- What a change of an investigation sends ------------------------------------------------------


# Releasing takes no input.
class InvestigationReleaseSerializer(serializers.Serializer):
    pass


def _ticket_field(help_text):
    return serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=TICKET_URL_MAX,
        help_text=help_text,
    )


class InvestigationTakeSerializer(serializers.Serializer):
    ticket_url = _ticket_field("A link to a ticket: an http:// or https:// URL. Optional.")

    class Meta:
        ref_name = "InvestigationTake"


class InvestigationHandOverSerializer(serializers.Serializer):
    to = serializers.CharField(
        max_length=150, help_text="The username of someone who may investigate."
    )

    class Meta:
        ref_name = "InvestigationHandOver"


class InvestigationTicketSerializer(serializers.Serializer):
    ticket_url = _ticket_field("An http:// or https:// URL; empty to clear the link.")

    class Meta:
        ref_name = "InvestigationTicket"


# --- A failure group's lifecycle (console.notes.lifecycle) ----------------------------------------


class GroupStatusSerializer(serializers.Serializer):
    state = serializers.ChoiceField(
        list(STATE_NAMES),
        help_text="open, acknowledged (someone owns it), resolved (a fix is out: a new failure "
        "reopens it), ignored (muted: no alert, off the dashboard's top list, still counted)",
    )
    since = serializers.DateTimeField(
        allow_null=True, help_text="since when; null for a group no one has moved"
    )
    owner = serializers.CharField(help_text="who acknowledged it (acknowledged only), or empty")
    changed_by = serializers.CharField(
        help_text="who moved it last: a username, or 'refresh' for a reopen on a new failure"
    )
    comment = serializers.CharField(help_text="what they said, plain text, or empty")
    reopened = serializers.BooleanField(
        help_text="open again because a failure came after it was resolved"
    )

    class Meta:
        ref_name = "GroupStatus"


class GroupPeriodSerializer(serializers.Serializer):
    state = serializers.ChoiceField(list(STATE_NAMES))
    since = serializers.DateTimeField(allow_null=True, help_text="null: before it was first seen")
    until = serializers.DateTimeField(allow_null=True, help_text="null: it still stands")
    seconds = serializers.SerializerMethodField(help_text="how long it lasted (so far)")
    changed_by = serializers.CharField()
    comment = serializers.CharField()
    reopened = serializers.BooleanField()

    class Meta:
        ref_name = "GroupStatusPeriod"

    def get_seconds(self, period) -> float | None:
        lasted = period.lasted
        return None if lasted is None else round(lasted.total_seconds(), 3)


class GroupLifecycleSerializer(serializers.Serializer):
    fingerprint = serializers.CharField()
    status = GroupStatusSerializer()
    lifecycle = GroupPeriodSerializer(many=True, help_text="each state it stood in, oldest first")

    class Meta:
        ref_name = "GroupLifecycle"


class GroupStatusChangeSerializer(serializers.Serializer):
    state = serializers.ChoiceField(list(STATE_NAMES), help_text="where to move it")
    comment = optional_comment(
        COMMENT_MAX, help_text="why, in plain text (a ticket, the release that fixes it)"
    )

    class Meta:
        ref_name = "GroupStatusChange"
