"""The shapes of /api/v1/purges: a purge (or preview), what it purged by queue, and what running
one takes."""

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers


@extend_schema_serializer(component_name="PurgeQueueCount")
class QueueCountSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    sha256 = serializers.CharField(help_text="SHA-256 of the queue's ids, sorted, one a line")


@extend_schema_serializer(component_name="Purge")
class PurgeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    # Text, not an enum: another "status" enum (action requests') would collide with it.
    status = serializers.CharField(help_text="queued, running, done or failed")
    dry_run = serializers.BooleanField(help_text="a preview: counts what would go, changes nothing")
    queue = serializers.CharField(help_text="the queue it was limited to; empty for every queue")
    requested_by = serializers.CharField(help_text='a username, "system" or "manage.py purge"')
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    heartbeat_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    now = serializers.DateTimeField(
        allow_null=True,
        help_text="the clock it purged by: messages final before now - retention_days went",
    )
    total = serializers.IntegerField(help_text="messages purged (or, for a preview, purgeable)")
    ids_sha256 = serializers.CharField(help_text="SHA-256 of the ids, sorted, one a line")
    counts = serializers.DictField(child=QueueCountSerializer(), help_text="by queue")
    events_upto = serializers.IntegerField(allow_null=True, help_text="last events commit read")
    messages_upto = serializers.IntegerField(allow_null=True, help_text="last messages commit read")
    lake_changes = serializers.DictField(
        child=serializers.DictField(child=serializers.IntegerField()),
        help_text="lake commits rewritten and retired, by dataset",
    )
    dirs_deleted_at = serializers.DateTimeField(
        allow_null=True, help_text="when the directories it swapped out were deleted"
    )
    error = serializers.CharField()


@extend_schema_serializer(component_name="PurgeRequest")
class PurgeRequestSerializer(serializers.Serializer):
    dry_run = serializers.BooleanField(
        required=False, default=False, help_text="only count and hash what would go"
    )
    queue = serializers.CharField(
        required=False, allow_blank=True, default="", help_text="only this queue's messages"
    )


@extend_schema_serializer(component_name="PurgeList")
class PurgeListSerializer(serializers.Serializer):
    results = PurgeSerializer(many=True)
