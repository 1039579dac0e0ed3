"""The read models moved to console.readmodels (its 0001 renames the tables): only the state
forgets them here."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("browse", "0003_reason_trigram_index"),
        ("readmodels", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(
                    name='FailureGroup',
                ),
                migrations.DeleteModel(
                    name='MessageIndex',
                ),
                migrations.DeleteModel(
                    name='QuarantineInflow',
                ),
                migrations.DeleteModel(
                    name='QueueStat',
                ),
                migrations.DeleteModel(
                    name='RefreshRun',
                ),
            ],
        ),
    ]
