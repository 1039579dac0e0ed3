from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("readmodels", "0010_queue_oldest_quarantined"),
    ]

    operations = [
        migrations.AddField(
            model_name="countscheck",
            name="worker",
            field=models.CharField(blank=True, default="", max_length=200),
        ),
        migrations.AlterField(
            model_name="countscheck",
            name="started_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="refreshrun",
            name="heartbeat_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="refreshrun",
            name="started_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
