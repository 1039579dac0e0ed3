"""The shapes of a queue's switches in /api/v1/ (console.queues.apis)."""

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
