"""The schema of a queue's switches in /api/v1/ (console.queues.apis): their examples, and the
drf-spectacular decorations the views wear."""

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers

from console.api import BAD_FILTERS, ERRORS, NOT_FOUND, answer, path_parameter, sent
from console.queues.serializers import QueuePauseSerializer

_NAME = path_parameter("name", "The queue's name.", "orders")


def _switched(name, unchanged):
    """The answer of a queue's enable or pause: its name, whether it is enabled now, whether this
    call changed it."""
    return inline_serializer(
        name,
        {
            "name": serializers.CharField(),
            "enabled": serializers.BooleanField(),
            "changed": serializers.BooleanField(help_text=unchanged),
        },
    )


queue_enable = extend_schema(
    operation_id="queues_enable",
    parameters=[_NAME],
    request=None,
    responses={
        200: answer(
            _switched("QueueEnabled", "False if the queue was enabled already."),
            {"name": "orders", "enabled": True, "changed": True},
        ),
        404: NOT_FOUND,
        **ERRORS,
    },
)

queue_pause = extend_schema(
    operation_id="queues_pause",
    parameters=[_NAME],
    request=QueuePauseSerializer,
    examples=[sent({"reason": "the warehouse is moving its stock system tonight"})],
    responses={
        200: answer(
            _switched("QueuePaused", "False if the queue was disabled already."),
            {"name": "orders", "enabled": False, "changed": True},
        ),
        400: BAD_FILTERS,
        404: NOT_FOUND,
        **ERRORS,
    },
)
