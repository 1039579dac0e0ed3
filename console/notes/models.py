"""What people write down about a quarantined message or a failure group while they look into
it: notes (a record: never edited or deleted), and who is investigating it ("under
investigation": one owner at a time, since when, and an optional ticket link).

Both name their target by kind and id, not by a foreign key: the read models they point at
(MessageIndex, FailureGroup) are bulk-loaded and rebuilt by the refresh, and a note must outlive
a row that a refresh or a purge drops (as the audit trail does)."""

from django.conf import settings
from django.db import models

MESSAGE = "message"
GROUP = "group"
KINDS = [(MESSAGE, "message"), (GROUP, "failure group")]

NOTE_MAX = 5000  # characters: a paragraph or a pasted stack trace, not a document
TICKET_URL_MAX = 500


class Note(models.Model):
    kind = models.CharField(max_length=8, choices=KINDS)
    target_id = models.CharField(max_length=200)  # a message id or a group's fingerprint
    # The author's name is kept: it outlives the account, as the audit trail's actor does.
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    author_name = models.CharField(max_length=150)
    text = models.TextField()
    created_at = models.DateTimeField()

    class Meta:
        indexes = [
            models.Index(fields=["kind", "target_id", "-created_at"], name="ix_note_target"),
        ]

    def __str__(self):
        return f"note {self.pk} on {self.kind} {self.target_id}"


class Investigation(models.Model):
    """Someone is looking into a message or a group: taken, handed over, released (deleted:
    the audit trail keeps who had it and when)."""

    kind = models.CharField(max_length=8, choices=KINDS)
    target_id = models.CharField(max_length=200)
    # PROTECT: an account that still owns investigations hands them over before it goes, rather
    # than have them vanish unrecorded.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="investigations"
    )
    since = models.DateTimeField()
    ticket_url = models.CharField(max_length=TICKET_URL_MAX, blank=True, default="")

    class Meta:
        constraints = [
            # One owner at a time: a second "take" loses on this, whichever process runs it.
            models.UniqueConstraint(fields=["kind", "target_id"], name="one_owner_per_target"),
        ]
        indexes = [
            # "Owned by X": the owner's targets of a kind, read from the index alone.
            models.Index(fields=["owner", "kind", "target_id"], name="ix_investigation_owner"),
        ]
        permissions = [
            ("reassign_investigation", "Can hand over or release someone else's investigation")
        ]

    def __str__(self):
        return f"{self.kind} {self.target_id} under investigation by {self.owner_id}"


# A failure group's lifecycle: where people have put it. A group no one has moved is open.
OPEN = "open"
ACKNOWLEDGED = "acknowledged"
RESOLVED = "resolved"
IGNORED = "ignored"
GROUP_STATES = [
    (OPEN, "open"),
    (ACKNOWLEDGED, "acknowledged"),
    (RESOLVED, "resolved"),
    (IGNORED, "ignored (muted)"),
]
COMMENT_MAX = 1000


class GroupMove(models.Model):
    """A move of a group's lifecycle, as its status keeps the last one and its changes each:
    who made it (a username, or "refresh" for a reopen), with what comment."""

    changed_by = models.CharField(max_length=150)
    comment = models.CharField(max_length=COMMENT_MAX, blank=True, default="")
    # Open again because a failure came after it was resolved (not by a person's hand).
    reopened = models.BooleanField(default=False)

    class Meta:
        abstract = True


class GroupStatus(GroupMove):
    """Where a failure group stands: acknowledged (someone owns it), resolved (a fix is out: a
    new failure of its pattern reopens it), ignored (muted: its failures still land and count,
    but raise no alert and stay off the dashboard's top list), or open again.

    By fingerprint, not a foreign key, like notes: the FailureGroup rows are rebuilt by a full
    refresh and dropped when a group empties, and a group that fills again keeps its state."""

    fingerprint = models.CharField(max_length=64, primary_key=True)
    state = models.CharField(max_length=12, choices=GROUP_STATES)
    since = models.DateTimeField()
    # Who acknowledged it (kept by name too, as the audit trail keeps actors).
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    owner_name = models.CharField(max_length=150, blank=True, default="")

    class Meta:
        indexes = [models.Index(fields=["state", "fingerprint"], name="ix_group_status_state")]

    def __str__(self):
        return f"group {self.fingerprint} {self.state}"


class GroupStatusChange(GroupMove):
    """One move of a group's lifecycle: how long each state lasted is read from these."""

    fingerprint = models.CharField(max_length=64)
    from_state = models.CharField(max_length=12, choices=GROUP_STATES)
    to_state = models.CharField(max_length=12, choices=GROUP_STATES)
    at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["fingerprint", "at"], name="ix_group_change_at")]

    def __str__(self):
        return f"group {self.fingerprint}: {self.from_state} -> {self.to_state}"
