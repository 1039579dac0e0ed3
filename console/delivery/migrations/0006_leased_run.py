from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("delivery", "0005_finished_index"),
    ]

    operations = [
        migrations.AlterField(
            model_name="deliveryrun",
            name="heartbeat_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="deliveryrun",
            name="started_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
