from django.db import migrations, models

SCHEMES = [("sha256", "SHA-256, unkeyed (before keyed hashes)"), ("hmac-sha256", "HMAC-SHA256")]


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0001_initial"),
    ]

    operations = [
        # The entries already written carry unkeyed hashes: they are marked so; entries written
        # from now on are keyed (the field's default, which Django applies, not the database).
        migrations.AddField(
            model_name="auditentry",
            name="scheme",
            field=models.CharField(choices=SCHEMES, default="sha256", max_length=12),
        ),
        migrations.AlterField(
            model_name="auditentry",
            name="scheme",
            field=models.CharField(choices=SCHEMES, default="hmac-sha256", max_length=12),
        ),
        migrations.AddField(
            model_name="auditentry",
            name="key_id",
            field=models.CharField(blank=True, default="", max_length=8),
        ),
    ]
