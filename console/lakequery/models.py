"""Lake queries: a search of every message in the lake (not only the indexed ones), by metadata
and by body, run as a Spark job on the spark worker. The row holds the query's state and a
heartbeat like a delivery run's (ARCHITECTURE: tasks may be lost, work may not); its result is a
Parquet directory in the lake that becomes visible when the row records it as DONE."""

from django.db import models
from django.utils.dateparse import parse_datetime

from console import leases
from console.glossary import code_title
from console.model_fields import person
from console.moments import moment_text


class LakeQuery(leases.LeasedRun):
    QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"
    STATUSES = [(s, s) for s in (QUEUED, RUNNING, DONE, FAILED, CANCELLED)]
    # Statuses a query never leaves.
    FINAL = (DONE, FAILED, CANCELLED)
    ACTIVE, FINISHED = (QUEUED, RUNNING), FINAL
    lease_by_beats = True

    # What it asks: messages that match criteria (a search), or why a failure group's messages
    # fail (workers.jobs.failure_traits: what sets them apart from the deliveries).
    SEARCH, WHY = "search", "why"
    KINDS = [(SEARCH, "search"), (WHY, "why do these fail")]
    kind = models.CharField(max_length=10, choices=KINDS, default=SEARCH)

    requester = person()
    created_at = models.DateTimeField(auto_now_add=True)
    # As cleaned by console.lakequery.criteria.lake_query_criteria_clean (JSON: times as text).
    criteria = models.JSONField()
    # The criteria read bodies: seeing the query (and which messages it found) needs the
    # permission to read bodies too.
    body_criteria = models.BooleanField(default=False)
    status = leases.status_field(STATUSES, default=QUEUED)
    enqueued_at = models.DateTimeField(null=True, blank=True)  # last handed to the broker
    attempts = models.PositiveIntegerField(default=0)  # claims so far
    progress = models.PositiveSmallIntegerField(default=0)  # 0-100, from Spark's status tracker
    scanned = models.BigIntegerField(default=0)  # messages looked at: every message in the lake
    matched = models.BigIntegerField(default=0)
    result_path = models.CharField(max_length=500, blank=True, default="")  # lake relative dir
    upto = models.BigIntegerField(null=True, blank=True)  # last events commit folded
    # A "why" query's answer (WhyResult.as_dict): how many messages it read on each side, and
    # its findings, best first.
    analysis = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["status", "id"], name="ix_lake_query_status")]

    def __str__(self):
        return f"lake query {self.id} ({self.status})"

    @property
    def final(self):
        return self.status in self.FINAL

    @property
    def criteria_shown(self):
        """[(name, value as people read it)]: lists joined with commas, states by their titles,
        times (stored as ISO text) as every screen writes them."""
        return [(name, _criterion_text(name, value)) for name, value in self.criteria.items()]


def _criterion_text(name, value):
    if name == "states":
        return ", ".join(code_title(state) for state in value)
    if isinstance(value, list):
        return ", ".join(value)
    if name in ("enqueued_from", "enqueued_to", "since", "until") and (
        moment := parse_datetime(str(value))
    ):
        return moment_text(moment)
    return str(value)


leases.register("lake_query", LakeQuery, title="lake query")
