"""On PostgreSQL, a trigram index so "text in the reason" (icontains: UPPER(reason) LIKE
UPPER('%...%')) is answered from an index instead of reading every row. SQLite has no such index;
there the filter scans, which its smaller deployments afford."""

from django.db import migrations

CREATE = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    'CREATE INDEX IF NOT EXISTS ix_reason_trgm ON browse_messageindex '
    'USING gin (UPPER("reason"::text) gin_trgm_ops)',
]
DROP = ["DROP INDEX IF EXISTS ix_reason_trgm"]


def _run(statements):
    def apply(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        with schema_editor.connection.cursor() as cursor:
            for sql in statements:
                cursor.execute(sql)

    return apply


class Migration(migrations.Migration):
    dependencies = [("browse", "0002_sort_indexes")]

    operations = [migrations.RunPython(_run(CREATE), _run(DROP))]
