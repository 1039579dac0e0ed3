# A canary of N becomes the one-step progression [N] with a re-failure threshold of 0 (none of its
# messages may fail again), which is what a canary meant. A request waiting for its canary keeps
# waiting: its chunk 0 is its first step, numbered as before.

from django.db import migrations, models


def canary_to_steps(apps, schema_editor):
    ActionRequest = apps.get_model("decisions", "ActionRequest")
    rows = ActionRequest.objects.filter(canary__gt=0).values_list(
        "id", "canary", "status", "canary_result"
    )
    for request_id, canary, status, result in rows.iterator():
        # A canary that was judged keeps its verdict: a request it let go is not watched again.
        results = []
        if result and status in ("running", "done", "cancelled"):
            results = [{"step": 1, "verdict": "passed"}]
        elif result and status == "failed":
            results = [{"step": 1, "verdict": "failed"}]
        ActionRequest.objects.filter(id=request_id).update(
            steps=[canary], refailure_threshold=0, step_results=results
        )


def steps_to_canary(apps, schema_editor):
    ActionRequest = apps.get_model("decisions", "ActionRequest")
    for request_id, steps in ActionRequest.objects.values_list("id", "steps").iterator():
        if steps:
            ActionRequest.objects.filter(id=request_id).update(canary=steps[0])


class Migration(migrations.Migration):
    dependencies = [
        ("decisions", "0004_selection"),
    ]

    operations = [
        migrations.AddField(
            model_name="actionrequest",
            name="steps",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name="actionrequest",
            name="refailure_threshold",
            field=models.FloatField(default=0),
        ),
        migrations.AddField(
            model_name="actionrequest",
            name="step_results",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.RunPython(canary_to_steps, steps_to_canary),
        migrations.RemoveField(
            model_name="actionrequest",
            name="canary",
        ),
    ]
