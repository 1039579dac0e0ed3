"""What delivery runs counted, kept beyond their rows: the metrics' counters (console.metrics)
sum the runs, and old runs are forgotten (console.runs.services.runs_forget), so their part of
each sum is folded into a total first. A counter that went down when rows were deleted would be
read by Prometheus as a restart."""

from django.db import models


class RunFold(models.Model):
    """How far the runs are folded: every delivery run that finished before `upto` is counted in
    RunTotal, and none after it. One row, named after what it folds."""

    DELIVERY = "delivery"

    name = models.CharField(max_length=20, primary_key=True)
    upto = models.DateTimeField()

    def __str__(self):
        return f"{self.name} runs folded up to {self.upto:%Y-%m-%d %H:%M:%S}"


class RunTotal(models.Model):
    """One counter's sum over the folded runs: `metric` (console.runs.totals names them) and its
    label's value ("" for none)."""

    metric = models.CharField(max_length=60)
    # A queue's name (up to 100) and a bucket's bound, for the handlers' durations.
    label = models.CharField(max_length=200, blank=True, default="")
    value = models.FloatField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["metric", "label"], name="one_total_per_metric_label")
        ]

    def __str__(self):
        return f"{self.metric}{{{self.label}}} {self.value}"
