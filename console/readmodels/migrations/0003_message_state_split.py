"""What moves about an indexed message (state, run, delivery count, candidate, next attempt, last
event) leaves the wide index table for a narrow one, MessageState, that MessageIndex inherits
(see console.readmodels.models for why). The existing rows are carried over, then the columns and
the indexes on them leave the wide table; its own columns, rows and other indexes stay as they
are (its message_id column becomes the link to its MessageState row, with no constraint).

Backwards, the columns come back empty, so the index rows go: a full refresh rebuilds them."""

import django.db.models.deletion
from django.db import migrations, models

MOVED = ["state", "run_id", "delivery_count", "candidate", "next_attempt_at", "updated_at"]

CARRY = (
    "INSERT INTO readmodels_messagestate (message_id, {moved}, failure_at) "
    "SELECT message_id, {moved}, last_failure_at FROM readmodels_messageindex"
).format(moved=", ".join(MOVED))


def _pattern_index_drop(apps, schema_editor):
    """PostgreSQL gives a varchar primary key a second, varchar_pattern_ops index for LIKE; no
    query matches MessageState's ids, and every decision would pay for its entries."""
    if schema_editor.connection.vendor != "postgresql":
        return
    table = apps.get_model("readmodels", "MessageState")._meta.db_table
    name = schema_editor._create_index_name(table, ["message_id"], suffix="_like")
    # Deferred as Django defers creating it, to the end of this migration: after it.
    schema_editor.deferred_sql.append(f"DROP INDEX IF EXISTS {schema_editor.quote_name(name)}")


class Migration(migrations.Migration):
    dependencies = [("readmodels", "0002_in_flight_run_and_attention")]

    operations = [
        migrations.CreateModel(
            name="MessageState",
            fields=[
                (
                    "message_id",
                    models.CharField(max_length=200, primary_key=True, serialize=False),
                ),
                ("state", models.CharField(max_length=8)),
                ("run_id", models.CharField(blank=True, db_default="", max_length=64)),
                ("delivery_count", models.IntegerField(default=0)),
                ("candidate", models.BooleanField(default=False)),
                ("next_attempt_at", models.DateTimeField(blank=True, null=True)),
                ("updated_at", models.DateTimeField()),
                ("failure_at", models.DateTimeField(blank=True, null=True)),
            ],
            options={
                "indexes": [
                    models.Index(
                        fields=["state", "failure_at", "message_id"], name="ix_state_failure"
                    ),
                    models.Index(
                        condition=models.Q(("candidate", True)),
                        fields=["failure_at", "message_id"],
                        name="ix_candidate_failure",
                    ),
                    models.Index(
                        fields=["delivery_count", "message_id"], name="ix_delivery_count_id"
                    ),
                ],
            },
        ),
        migrations.RunPython(_pattern_index_drop, migrations.RunPython.noop),
        migrations.RunSQL(CARRY, migrations.RunSQL.noop),
        migrations.RemoveIndex(model_name="messageindex", name="ix_state"),
        migrations.RemoveIndex(model_name="messageindex", name="ix_candidate"),
        migrations.RemoveIndex(model_name="messageindex", name="ix_delivery_count"),
        *(migrations.RemoveField(model_name="messageindex", name=name) for name in MOVED),
        # Backwards, before the columns come back (NOT NULL, with nothing to fill them).
        migrations.RunSQL(
            migrations.RunSQL.noop,
            ["DELETE FROM readmodels_messageindex", "DELETE FROM readmodels_messagestate"],
        ),
        # The table keeps its message_id column (primary key and every index that ends with it);
        # only Django's picture of the model changes: a child of MessageState linked by it.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="MessageIndex"),
                migrations.CreateModel(
                    name="MessageIndex",
                    fields=[
                        (
                            "state_row",
                            models.OneToOneField(
                                db_column="message_id",
                                db_constraint=False,
                                on_delete=django.db.models.deletion.DO_NOTHING,
                                parent_link=True,
                                primary_key=True,
                                related_name="index_row",
                                serialize=False,
                                to="readmodels.messagestate",
                            ),
                        ),
                        ("queue", models.CharField(max_length=100)),
                        ("original_queue", models.CharField(max_length=100)),
                        ("first_failure_at", models.DateTimeField(blank=True, null=True)),
                        ("last_failure_at", models.DateTimeField(blank=True, null=True)),
                        ("reason", models.TextField(blank=True, default="")),
                        (
                            "exception_type",
                            models.CharField(blank=True, default="", max_length=200),
                        ),
                        ("group_id", models.CharField(blank=True, default="", max_length=64)),
                        ("sender", models.CharField(blank=True, default="", max_length=300)),
                        (
                            "conversation_id",
                            models.CharField(blank=True, default="", max_length=200),
                        ),
                        ("body_size", models.BigIntegerField(default=0)),
                        ("content_type", models.CharField(blank=True, default="", max_length=200)),
                        ("body_version", models.IntegerField(default=1)),
                        ("body_path", models.CharField(max_length=500)),
                        ("enqueued_at", models.DateTimeField()),
                    ],
                    options={
                        "permissions": [
                            (
                                "view_body",
                                "Can read message bodies (they may hold personal data)",
                            )
                        ],
                        "indexes": [
                            models.Index(
                                fields=["last_failure_at", "state_row"], name="ix_failure_id"
                            ),
                            models.Index(
                                fields=["queue", "last_failure_at", "state_row"], name="ix_queue"
                            ),
                            models.Index(
                                fields=["group_id", "last_failure_at", "state_row"],
                                name="ix_group",
                            ),
                            models.Index(
                                fields=["exception_type", "last_failure_at"], name="ix_exception"
                            ),
                            models.Index(fields=["sender", "last_failure_at"], name="ix_sender"),
                            models.Index(
                                fields=["conversation_id", "enqueued_at"], name="ix_conversation"
                            ),
                            models.Index(fields=["enqueued_at", "state_row"], name="ix_enqueued"),
                            models.Index(fields=["queue", "state_row"], name="ix_queue_id"),
                        ],
                    },
                    bases=("readmodels.messagestate",),
                ),
            ]
        ),
    ]
