"""The read models move here from console.browse, tables and permissions with them: the tables are
renamed (their rows, indexes and constraints kept) and the permissions' content types follow, so
a role that held "browse.view_body" holds "readmodels.view_body" with the same grant."""

from django.db import migrations, models

MODELS = ["failuregroup", "messageindex", "quarantineinflow", "queuestat", "refreshrun"]


def _rename(old, new):
    return [
        migrations.RunSQL(
            f"ALTER TABLE {old}_{model} RENAME TO {new}_{model}",
            f"ALTER TABLE {new}_{model} RENAME TO {old}_{model}",
        )
        for model in MODELS
    ]


def _content_types(old, new):
    def move(apps, schema_editor):
        ContentType = apps.get_model("contenttypes", "ContentType")
        ContentType.objects.using(schema_editor.connection.alias).filter(
            app_label=old, model__in=MODELS
        ).update(app_label=new)

    return move


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("browse", "0003_reason_trigram_index"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                *_rename("browse", "readmodels"),
                migrations.RunPython(
                    _content_types("browse", "readmodels"), _content_types("readmodels", "browse")
                ),
            ],
            state_operations=[
                migrations.CreateModel(
                    name='QueueStat',
                    fields=[
                        ('queue', models.CharField(max_length=100, primary_key=True, serialize=False)),
                        ('counts', models.JSONField(default=dict)),
                        ('updated_at', models.DateTimeField()),
                    ],
                ),
                migrations.CreateModel(
                    name='FailureGroup',
                    fields=[
                        ('fingerprint', models.CharField(max_length=64, primary_key=True, serialize=False)),
                        ('queue', models.CharField(max_length=100)),
                        ('exception_type', models.CharField(blank=True, default='', max_length=200)),
                        ('pattern', models.TextField(blank=True, default='')),
                        ('frames', models.TextField(blank=True, default='')),
                        ('sample_message_id', models.CharField(blank=True, default='', max_length=200)),
                        ('sample_reason', models.TextField(blank=True, default='')),
                        ('sample_stack', models.TextField(blank=True, default='')),
                        ('count', models.BigIntegerField(default=0)),
                        ('first_seen', models.DateTimeField(blank=True, null=True)),
                        ('last_seen', models.DateTimeField(blank=True, null=True)),
                        ('states', models.JSONField(default=dict)),
                    ],
                    options={
                        'indexes': [models.Index(fields=['count'], name='ix_group_count')],
                    },
                ),
                migrations.CreateModel(
                    name='MessageIndex',
                    fields=[
                        ('message_id', models.CharField(max_length=200, primary_key=True, serialize=False)),
                        ('queue', models.CharField(max_length=100)),
                        ('original_queue', models.CharField(max_length=100)),
                        ('state', models.CharField(max_length=8)),
                        ('delivery_count', models.IntegerField(default=0)),
                        ('candidate', models.BooleanField(default=False)),
                        ('next_attempt_at', models.DateTimeField(blank=True, null=True)),
                        ('first_failure_at', models.DateTimeField(blank=True, null=True)),
                        ('last_failure_at', models.DateTimeField(blank=True, null=True)),
                        ('reason', models.TextField(blank=True, default='')),
                        ('exception_type', models.CharField(blank=True, default='', max_length=200)),
                        ('group_id', models.CharField(blank=True, default='', max_length=64)),
                        ('sender', models.CharField(blank=True, default='', max_length=300)),
                        ('conversation_id', models.CharField(blank=True, default='', max_length=200)),
                        ('body_size', models.BigIntegerField(default=0)),
                        ('content_type', models.CharField(blank=True, default='', max_length=200)),
                        ('body_version', models.IntegerField(default=1)),
                        ('body_path', models.CharField(max_length=500)),
                        ('enqueued_at', models.DateTimeField()),
                        ('updated_at', models.DateTimeField()),
                    ],
                    options={
                        'permissions': [('view_body', 'Can read message bodies (they may hold personal data)')],
                        'indexes': [models.Index(fields=['last_failure_at', 'message_id'], name='ix_failure_id'), models.Index(fields=['state', 'last_failure_at', 'message_id'], name='ix_state'), models.Index(fields=['queue', 'last_failure_at', 'message_id'], name='ix_queue'), models.Index(fields=['group_id', 'last_failure_at', 'message_id'], name='ix_group'), models.Index(fields=['exception_type', 'last_failure_at'], name='ix_exception'), models.Index(fields=['sender', 'last_failure_at'], name='ix_sender'), models.Index(fields=['conversation_id', 'enqueued_at'], name='ix_conversation'), models.Index(fields=['candidate', 'last_failure_at'], name='ix_candidate'), models.Index(fields=['enqueued_at', 'message_id'], name='ix_enqueued'), models.Index(fields=['queue', 'message_id'], name='ix_queue_id'), models.Index(fields=['delivery_count', 'message_id'], name='ix_delivery_count')],
                    },
                ),
                migrations.CreateModel(
                    name='QuarantineInflow',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('queue', models.CharField(max_length=100)),
                        ('hour', models.DateTimeField()),
                        ('count', models.BigIntegerField(default=0)),
                    ],
                    options={
                        'indexes': [models.Index(fields=['hour'], name='ix_inflow_hour')],
                        'constraints': [models.UniqueConstraint(fields=('queue', 'hour'), name='one_inflow_per_queue_hour')],
                    },
                ),
                migrations.CreateModel(
                    name='RefreshRun',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('status', models.CharField(choices=[('running', 'running'), ('committed', 'committed'), ('failed', 'failed')], default='running', max_length=12)),
                        ('lock', models.CharField(default='refresh', editable=False, max_length=20)),
                        ('full', models.BooleanField(default=False)),
                        ('from_commit', models.BigIntegerField(blank=True, null=True)),
                        ('upto_commit', models.BigIntegerField(blank=True, null=True)),
                        ('started_at', models.DateTimeField()),
                        ('heartbeat_at', models.DateTimeField()),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('changed', models.BigIntegerField(default=0)),
                        ('error', models.TextField(blank=True, default='')),
                    ],
                    options={
                        'ordering': ['-id'],
                        'indexes': [models.Index(fields=['status', 'id'], name='ix_refresh_status')],
                        'constraints': [models.UniqueConstraint(condition=models.Q(('status', 'running')), fields=('lock',), name='one_running_refresh')],
                    },
                ),
            ],
        ),
    ]
