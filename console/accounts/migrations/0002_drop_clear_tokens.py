"""DRF's authtoken kept every API token in clear, in authtoken_token: the app is gone, the tokens
no longer open anything (people and applications make new ones), and the table is dropped so
that no copy of them outlives the upgrade, in the database or in its backups from now on."""

from django.db import migrations

OLD_TABLE = "authtoken_token"


def _drop_clear_tokens(apps, schema_editor):
    connection = schema_editor.connection
    if OLD_TABLE not in connection.introspection.table_names():
        return  # a database made after the change never had it
    schema_editor.execute(f"DROP TABLE {schema_editor.quote_name(OLD_TABLE)}")
    # Were authtoken installed again, its migrations would make the table afresh.
    schema_editor.execute(
        "DELETE FROM django_migrations WHERE app = %s", params=["authtoken"]
    )


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_initial")]

    operations = [
        migrations.RunPython(_drop_clear_tokens, reverse_code=migrations.RunPython.noop),
    ]
