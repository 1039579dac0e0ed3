"""Each process of the deployment (the web, the spark worker, the default worker, beat, the
broker sources' consumer) as it last reported: a row per process, beaten every HEARTBEAT_SECONDS
by a thread of its own (console.processes.beating)."""

from django.db import models

WEB, SPARK, WORKER, BEAT, SOURCES = "web", "spark", "worker", "beat", "sources"
# The kinds of process, as the Procfile names them, in the order the Processes page lists them.
KINDS = (WEB, SPARK, WORKER, BEAT, SOURCES)
KIND_TITLES = {
    WEB: "web process",
    SPARK: "spark worker",
    WORKER: "default worker",
    BEAT: "scheduler (beat)",
    SOURCES: "broker sources' consumer",
}
CURRENT_MAX = 500


class ProcessBeat(models.Model):
    kind = models.CharField(max_length=20, choices=[(k, KIND_TITLES[k]) for k in KINDS])
    host = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    beat_at = models.DateTimeField(db_index=True)
    # Set when the process ended cleanly; a process killed leaves it empty and goes stale.
    stopped_at = models.DateTimeField(null=True, blank=True)
    # What it works on now, in a few words ("delivery run orders"), as of its last beat.
    current = models.CharField(max_length=CURRENT_MAX, blank=True, default="")

    class Meta:
        ordering = ["kind", "host", "pid"]
        constraints = [
            # A container restarted in its pod is the same host and pid 1 again: the same row.
            models.UniqueConstraint(fields=["host", "pid", "kind"], name="process_beat_unique")
        ]

    def __str__(self):
        return f"{self.kind} {self.host}:{self.pid}"
