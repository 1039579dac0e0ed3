"""The shapes of /api/v1/queues and of a queue's switches (console.queues.apis)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from console.queues.services import PAUSE_REASON_MAX


class QueuePauseSerializer(serializers.Serializer):
    reason = serializers.CharField(
        required=False, allow_blank=True, max_length=PAUSE_REASON_MAX, help_text="Why."
    )

    class Meta:
        # The schema's name for it since the endpoint shipped ("InputRequest"): clients
        # generated from the schema keep their class.
        ref_name = "Input"


@extend_schema_field({"type": "object", "additionalProperties": {"type": "integer"}})
class StateCounts(serializers.Field):
    """[(state, n)] as {"NDLV": 3, ...}, in lifecycle order."""

    def to_representation(self, value):
        return dict(value)


class QueueSourceSerializer(serializers.Serializer):
    title = serializers.CharField(
        help_text='Where messages come from, for people: "RabbitMQ", "NATS JetStream", '
        '"Redis Streams", "API", "API, by hand", "inbox folder", ...'
    )
    detail = serializers.CharField(
        help_text="For a broker source: what it drains, and its name; empty otherwise."
    )
    last_at = serializers.DateTimeField(
        allow_null=True, help_text="When messages last came in this way; null when not noted."
    )

    class Meta:
        ref_name = "QueueSource"


class QueueOverviewSerializer(serializers.Serializer):
    name = serializers.CharField()
    exists = serializers.SerializerMethodField()
    enabled = serializers.SerializerMethodField()
    disabled_at = serializers.DateTimeField(
        source="queue.disabled_at", default=None, allow_null=True
    )
    disabled_reason = serializers.CharField(source="queue.disabled_reason", default="")
    policy = serializers.SerializerMethodField()
    counts = StateCounts()
    total = serializers.IntegerField()
    stats_at = serializers.DateTimeField(allow_null=True)
    sources = QueueSourceSerializer(
        many=True,
        help_text="Where the queue's messages come from: its broker sources as configured, "
        "then the other ways messages came in (the API, by hand, the inbox folder).",
    )

    class Meta:
        ref_name = "QueueOverview"

    @extend_schema_field(OpenApiTypes.BOOL)
    def get_exists(self, overview):
        return overview.queue is not None

    @extend_schema_field({"type": "boolean", "nullable": True})
    def get_enabled(self, overview):
        return overview.queue.enabled if overview.queue else None

    @extend_schema_field(
        {
            "type": "object",
            "additionalProperties": True,
            "description": "The queue's delivery policy; empty if the queue no longer exists.",
        }
    )
    def get_policy(self, overview):
        return dict(overview.policy)
