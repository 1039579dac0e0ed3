"""/api/v1/runs: every background run (delivery runs, refreshes, compactions, purges) with its
state, heartbeat, position and timings, for administrators: the runs in progress first, each
marked stuck (its heartbeat is older than LEASE_SECONDS) or slow (it has run longer than that and
still beats), then the finished ones, newest first, a page at a time.

Refusals are {"detail": "<one readable sentence>"}, with {"errors": {parameter: [message]}}
too for filters that are not valid (400); 401 without credentials, 403 without the permission."""

from django.conf import settings
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api import BAD_FILTERS, ERRORS, bad_filters, page_answer
from console.permissions import VIEW_RUNS, has_perms
from console.runs import selectors
from console.runs.forms import CURSOR_MAX, KIND_CHOICES, STATE_CHOICES

DESCRIPTION = " ".join(__doc__.split("\n\n")[0].split())


def _seconds(delta):
    return round(delta.total_seconds(), 3) if delta is not None else None


@extend_schema_serializer(component_name="Run")
class RunSerializer(serializers.Serializer):
    kind = serializers.CharField(help_text="delivery, refresh, compaction or purge")
    id = serializers.IntegerField(help_text="The run's number among those of its kind.")
    # Text, not an enum: another "state" enum (messages') would collide with it.
    state = serializers.CharField(
        help_text="delivery: running, committed, failed or crashed; refresh: running, committed "
        "or failed; compaction: running, committed, skipped or failed; purge: queued, running, "
        "done or failed."
    )
    variant = serializers.CharField(
        help_text='compaction: "state" or "history"; purge: "purge" or "preview"; refresh: '
        '"full" or "incremental"; delivery: "".'
    )
    active = serializers.BooleanField(help_text="In progress: running, or a purge queued.")
    stuck = serializers.BooleanField(
        help_text="Running, and its heartbeat is older than LEASE_SECONDS: its worker stopped."
    )
    slow = serializers.BooleanField(
        help_text="Running for longer than LEASE_SECONDS, and its heartbeat is fresh: it works."
    )
    worker = serializers.CharField(help_text="Who runs or ran it (host:process); may be empty.")
    started_at = serializers.DateTimeField(allow_null=True)
    heartbeat_at = serializers.DateTimeField(allow_null=True)
    heartbeat_age_seconds = serializers.FloatField(
        allow_null=True, help_text="How long ago its heartbeat last beat, as of the answer."
    )
    finished_at = serializers.DateTimeField(allow_null=True)
    duration_seconds = serializers.FloatField(
        allow_null=True, help_text="From start to finish; so far, while it runs."
    )
    position = serializers.CharField(help_text="Its position, in a few words.")
    from_commit = serializers.IntegerField(
        allow_null=True, help_text="refresh: it folds the events commits after this one."
    )
    upto_commit = serializers.IntegerField(
        allow_null=True,
        help_text="refresh: ... up to and with this one; compaction: the last events commit it "
        "covers; purge: the last events commit it read.",
    )
    queues = serializers.ListField(
        child=serializers.CharField(),
        help_text="delivery: the queues it holds or held; purge: the queue it was limited to.",
    )
    claimed = serializers.IntegerField(allow_null=True, help_text="delivery: messages claimed.")
    did = serializers.CharField(help_text="What it did, in a few words.")
    outcomes = serializers.DictField(
        child=serializers.IntegerField(), help_text="delivery: messages by the state they went to."
    )
    changed = serializers.IntegerField(allow_null=True, help_text="refresh: rows changed.")
    purged = serializers.IntegerField(
        allow_null=True, help_text="purge: messages purged (a preview: that would be)."
    )
    rows = serializers.IntegerField(allow_null=True, help_text="compaction: rows written.")
    note = serializers.CharField(help_text="compaction: why it was skipped.")
    error = serializers.CharField(help_text="Why it failed; empty if it did not.")

    def to_representation(self, run):
        data = super().to_representation(run)
        data["heartbeat_age_seconds"] = _seconds(run.heartbeat_age)
        data["duration_seconds"] = _seconds(run.duration)
        return data


class RunListApi(APIView):
    """The runs in progress first (on the first page), then the finished ones, newest first."""

    permission_classes = [has_perms(VIEW_RUNS)]

    @extend_schema_serializer(component_name="RunFilters")
    class FilterSerializer(serializers.Serializer):
        kind = serializers.ChoiceField(choices=KIND_CHOICES[1:], required=False)
        state = serializers.ChoiceField(
            choices=STATE_CHOICES[1:],
            required=False,
            help_text="A state, or stuck or slow (running runs so marked).",
        )
        before = serializers.CharField(
            required=False, max_length=CURSOR_MAX, help_text="The previous page's `next_before`."
        )
        page_size = serializers.IntegerField(
            required=False,
            min_value=1,
            max_value=selectors.PAGE_SIZE_MAX,
            help_text=f"Finished runs per page; {selectors.PAGE_SIZE} by default.",
        )

        def validate_before(self, value):
            try:
                selectors.cursor_parse(value)
            except selectors.BadCursor as exc:
                raise serializers.ValidationError(str(exc)) from None
            return value

    @extend_schema(
        operation_id="runs_list",
        summary="Background runs: delivery runs, refreshes, compactions and purges",
        description=DESCRIPTION,
        tags=["runs"],
        parameters=[FilterSerializer],
        responses={
            200: page_answer(
                "RunPage",
                RunSerializer(many=True),
                {
                    "results": [
                        {
                            "kind": "delivery",
                            "id": 41,
                            "state": "running",
                            "variant": "",
                            "active": True,
                            "stuck": False,
                            "slow": True,
                            "worker": "spark@web-1:4242",
                            "started_at": "2026-11-27T06:55:44.610000Z",
                            "heartbeat_at": "2026-11-27T07:01:14.610000Z",
                            "heartbeat_age_seconds": 2.5,
                            "finished_at": None,
                            "duration_seconds": 332.5,
                            "position": "delivering: 6 of 12 partitions",
                            "from_commit": None,
                            "upto_commit": None,
                            "queues": ["orders"],
                            "claimed": 5000,
                            "did": "",
                            "outcomes": {},
                            "changed": None,
                            "purged": None,
                            "rows": None,
                            "note": "",
                            "error": "",
                        }
                    ],
                    "next_before": "delivery:40,refresh:12,compaction:3,purge:2",
                    "lease_seconds": 300,
                },
                next_before=serializers.CharField(
                    allow_null=True, help_text="`before` for the next (older) page."
                ),
                lease_seconds=serializers.IntegerField(
                    help_text="A running run whose heartbeat is older is stuck."
                ),
            ),
            400: BAD_FILTERS,
            **ERRORS,
        },
    )
    def get(self, request):
        filters = self.FilterSerializer(data=request.query_params)
        if not filters.is_valid():
            return bad_filters(filters.errors)
        data = filters.validated_data
        page = selectors.runs_page(
            kind=data.get("kind", ""),
            state=data.get("state", ""),
            before=data.get("before"),
            size=data.get("page_size") or selectors.PAGE_SIZE,
        )
        return Response(
            {
                "results": RunSerializer(page.rows, many=True).data,
                "next_before": page.next_before,
                "lease_seconds": settings.LEASE_SECONDS,
            }
        )
