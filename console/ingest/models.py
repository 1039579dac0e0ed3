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


class Demo(models.Model):
    """What `manage.py seed_demo` did in this database: one row, made by its first run.

    The demo's messages are ingested at once, or sent by the default worker a chunk at a time
    (`seed_demo --background`, as `make run` does) while the dashboard says how far it is:
    `total` messages, `sent` so far (accepted, or already there), `fill_started_at` set for such
    a fill only, `filled_at` once it is over. `rabbitmq_fed_at`, `nats_fed_at`, `redis_fed_at`:
    when this database's demo fed that broker's demo. The broker remembers it too, but a new
    database (var/ deleted to start over) must feed it again, or its broker-fed queue stays
    empty."""

    ONE = 1  # the primary key of the one row

    orders = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    sent = models.PositiveIntegerField(default=0)
    fill_started_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    filled_at = models.DateTimeField(null=True, blank=True)
    rabbitmq_fed_at = models.DateTimeField(null=True, blank=True)
    nats_fed_at = models.DateTimeField(null=True, blank=True)
    redis_fed_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"demo: {self.sent} of {self.total} sent"
