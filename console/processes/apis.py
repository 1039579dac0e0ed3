"""/api/v1/processes: every process of the deployment (the web, the spark worker, the default
worker, beat and the broker sources' consumer) with its host, pid, start, last heartbeat and
current work, alive, stale (no heartbeat for HEARTBEAT_STALE_SECONDS) or stopped (it said so as
it ended); each broker source's consumer thread; and the kinds expected (but the web) that have
no alive process, in words. For administrators, as the Runs page.

Refusals are {"detail": "<one readable sentence>"}; 401 without credentials, 403 without the
permission."""

from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_serializer, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api import ERRORS, answer
from console.permissions import VIEW_RUNS, has_perms
from console.processes import selectors
from console.processes.models import KINDS

DESCRIPTION = " ".join(__doc__.split("\n\n")[0].split())


@extend_schema_serializer(component_name="Process")
class ProcessSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=KINDS, help_text="As the Procfile names it.")
    host = serializers.CharField()
    pid = serializers.IntegerField()
    state = serializers.ChoiceField(choices=selectors.STATES)
    started_at = serializers.DateTimeField()
    heartbeat_at = serializers.DateTimeField(source="beat_at")
    heartbeat_age_seconds = serializers.SerializerMethodField(
        help_text="How long ago it last beat, as of the answer."
    )
    stopped_at = serializers.DateTimeField(allow_null=True)
    current = serializers.CharField(help_text="What it works on, as of its last heartbeat.")

    def get_heartbeat_age_seconds(self, process) -> float:
        return round(process.age.total_seconds(), 3)


@extend_schema_serializer(component_name="SourceConsumer")
class ConsumerSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The broker source.")
    kind = serializers.CharField(help_text="rabbitmq, nats or redis")
    queue = serializers.CharField(help_text="The Antidote queue it drains into.")
    enabled = serializers.BooleanField()
    state = serializers.CharField(
        help_text="starting, connecting, consuming, down, stopped, disabled, or not running "
        "(no heartbeat lately)."
    )
    heartbeat_at = serializers.DateTimeField(allow_null=True)
    connected_to = serializers.CharField(help_text="Where it last connected; no secret.")


@extend_schema_serializer(component_name="ProcessMissing")
class MissingSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=KINDS)
    text = serializers.CharField(help_text="What it means, in a sentence.")


class ProcessListApi(APIView):
    permission_classes = [has_perms(VIEW_RUNS)]

    @extend_schema(
        operation_id="processes_list",
        summary="Processes: web, workers, beat and broker consumers, with their heartbeats",
        description=DESCRIPTION,
        tags=["processes"],
        responses={
            200: answer(
                inline_serializer(
                    "ProcessList",
                    {
                        "results": ProcessSerializer(many=True),
                        "consumers": ConsumerSerializer(many=True),
                        "missing": MissingSerializer(many=True),
                        "stale_seconds": serializers.IntegerField(
                            help_text="A process whose heartbeat is older is stale."
                        ),
                    },
                ),
                {
                    "results": [
                        {
                            "kind": "spark",
                            "host": "worker-1",
                            "pid": 4242,
                            "state": "alive",
                            "started_at": "2026-11-27T06:55:44.610000Z",
                            "heartbeat_at": "2026-11-27T07:01:14.610000Z",
                            "heartbeat_age_seconds": 2.5,
                            "stopped_at": None,
                            "current": "delivery run orders",
                        }
                    ],
                    "consumers": [
                        {
                            "name": "orders-dlq",
                            "kind": "rabbitmq",
                            "queue": "orders-dead",
                            "enabled": True,
                            "state": "consuming",
                            "heartbeat_at": "2026-11-27T07:01:12.100000Z",
                            "connected_to": "RabbitMQ at rabbit:5672, vhost '/'",
                        }
                    ],
                    "missing": [
                        {
                            "kind": "beat",
                            "text": "No scheduler (beat) has reported for 2 min 5 s: nothing "
                            "is scheduled: no delivery run, refresh or sweep starts. Start the "
                            "Procfile's beat process.",
                        }
                    ],
                    "stale_seconds": 30,
                },
            ),
            **ERRORS,
        },
    )
    def get(self, request):
        now = timezone.now()
        return Response(
            {
                "results": ProcessSerializer(selectors.process_list(now=now), many=True).data,
                "consumers": ConsumerSerializer(selectors.consumer_list(now=now), many=True).data,
                "missing": MissingSerializer(selectors.process_warnings(now=now), many=True).data,
                "stale_seconds": selectors.stale_seconds(),
            }
        )
