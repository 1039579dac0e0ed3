from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("lake", "0009_handed_back"),
    ]

    operations = [
        migrations.AlterField(
            model_name="compactionrun",
            name="heartbeat_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="compactionrun",
            name="started_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
