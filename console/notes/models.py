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
