"""Webhooks name only variables alerts may read (console.envnames, R19). A webhook saved before
that rule whose secret_env names another (SECRET_KEY, DATABASE_URL, a broker's URL...) is
disabled here, saying why, rather than left to send it on: an administrator names a variable
under ANTIDOTE_ALERT_ (or one listed in ALERTS_SECRET_ENV_ALLOWED) and enables it again. What
it still had to send fails when it comes due, with the same reason."""

from django.db import migrations, models

# The formats whose secret_env is read (console.alerts.models.Webhook.WITH_SECRET).
WITH_SECRET = ("generic", "pagerduty")


def disable_refused(apps, schema_editor):
    from console.envnames import alert_secret_refusal

    Webhook = apps.get_model("alerts", "Webhook")
    for hook in Webhook.objects.filter(active=True, format__in=WITH_SECRET).exclude(secret_env=""):
        refusal = alert_secret_refusal(hook.secret_env)
        if refusal:
            Webhook.objects.filter(pk=hook.pk).update(
                active=False, disabled_reason=f"its secret_env is refused: {refusal}"[:500]
            )


class Migration(migrations.Migration):
    dependencies = [
        ("alerts", "0005_webhook_formats"),
    ]

    operations = [
        migrations.AddField(
            model_name="webhook",
            name="disabled_reason",
            field=models.CharField(blank=True, default="", max_length=500),
        ),
        migrations.RunPython(disable_refused, migrations.RunPython.noop),
    ]
