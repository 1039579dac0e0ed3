from django.db import models


class MessageKey(models.Model):
    """Every message id the product has accepted, with its body's hash and where it lives.

    Ingest checks it to make re-sending idempotent and to refuse an id reused for another body;
    the console uses it to find a message's body file without scanning the lake."""

    message_id = models.CharField(max_length=200, primary_key=True)
    body_sha256 = models.CharField(max_length=64)
    queue = models.CharField(max_length=100)
    commit = models.ForeignKey("lake.LakeCommit", on_delete=models.PROTECT, related_name="+")
    ingested_at = models.DateTimeField()

    def __str__(self):
        return self.message_id


class InboxFile(models.Model):
    """One file taken from the inbox folder, and what became of its lines."""

    name = models.CharField(max_length=500)
    sha256 = models.CharField(max_length=64, unique=True)
    accepted = models.PositiveIntegerField(default=0)
    duplicates = models.PositiveIntegerField(default=0)
    rejected = models.PositiveIntegerField(default=0)
    errors = models.JSONField(default=list)
    processed_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return self.name
