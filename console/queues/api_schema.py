"""The schema of /api/v1/queues and of a queue's switches (console.queues.apis): their examples,
and the drf-spectacular decorations the views wear."""

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers

from console.api import BAD_FILTERS, ERRORS, NOT_FOUND, answer, path_parameter, sent
from console.queues.serializers import QueueOverviewSerializer, QueuePauseSerializer

# A queue's policy in the examples: the demo's orders queue.
_POLICY = {
    "handler": "workers.demo.handlers.orders",
    "max_failed_deliveries": 5,
    "exception_destination": "quarantine",
    "blocked_retry_timeout": 60,
    "backoff_every": 1,
    "backoff_delays": [60, 300, 900, 1800],
    "periodic_interval": 900,
    "on_permanent": "quarantine",
    "poison_match": "id_or_body",
    "disable_after": 0,
    "retention_days": 30,
    "handler_options": {},
}

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


queue_list = extend_schema(
    operation_id="queues_list",
    responses={
        200: answer(
            inline_serializer("QueueOverviewList", {"results": QueueOverviewSerializer(many=True)}),
            {
                "results": [
                    {
                        "name": "orders",
                        "exists": True,
                        "enabled": False,
                        "disabled_at": "2026-11-27T07:03:40.957512Z",
                        "disabled_reason": "5 failed attempts in a row",
                        "policy": _POLICY,
                        "counts": {"TBDL": 21, "WAIT": 1, "DLVD": 18, "NDLV": 1},
                        "total": 41,
                        "stats_at": "2026-11-27T06:56:57.296661Z",
                        "sources": [
                            {
                                "title": "RabbitMQ",
                                "detail": "orders.dlq (source orders-dlq)",
                                "last_at": "2026-11-27T06:55:12Z",
                            },
                            {"title": "API", "detail": "", "last_at": "2026-11-27T06:41:03Z"},
                        ],
                    }
                ]
            },
        ),
        **ERRORS,
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
