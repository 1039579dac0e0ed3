"""The shapes of /api/v1/'s read-model answers (messages, failure groups, the dashboard's
numbers) as DRF serializers; the queues' list is console.queues.serializers'. The schema's
examples and decorations are in console.browse.api_schema; the views in console.browse.apis."""

from drf_spectacular.utils import extend_schema_field, inline_serializer
from rest_framework import serializers

from console.browse.headers import (
    HEADER_NAME_SHOWN,
    HEADER_VALUE_SHOWN,
    HEADERS_PAGE,
    HEADERS_PAGE_BYTES,
    HEADERS_PAGE_MAX,
    HEADERS_SHOWN,
)
from console.browse.search import QUERY_MAX
from console.notes.lifecycle import STATE_NAMES
from console.notes.selectors import OWNER_HELP
from console.notes.serializers import GroupStatusSerializer
from console.queues.serializers import StateCounts
from workers.brokers.dead_letters import KIND_NAMES as DEAD_LETTER_KINDS
from workers.engine.states import FLOWS


@extend_schema_field({"type": "string", "nullable": True})
class OwnerField(serializers.Field):
    """The username of whoever investigates the row (console.notes.selectors.
    investigations_attach went over it), or None."""

    def to_representation(self, value):
        investigation = getattr(value, "investigation", None)
        return investigation.owner.get_username() if investigation else None


class MessageEntrySerializer(serializers.Serializer):
    id = serializers.CharField(source="message_id")
    queue = serializers.CharField()
    original_queue = serializers.CharField()
    state = serializers.CharField()
    delivery_count = serializers.IntegerField()
    candidate = serializers.BooleanField()
    next_attempt_at = serializers.DateTimeField(allow_null=True)
    first_failure_at = serializers.DateTimeField(allow_null=True)
    last_failure_at = serializers.DateTimeField(allow_null=True)
    reason = serializers.CharField()
    exception_type = serializers.CharField()
    group = serializers.CharField(source="group_id")
    sender = serializers.CharField()
    conversation_id = serializers.CharField()
    body_size = serializers.IntegerField()
    content_type = serializers.CharField()
    enqueued_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    owner = OwnerField(
        source="*",
        help_text="Who is investigating it (its own owner, else its failure group's), or "
        "null; null too without the permission to read notes.",
    )

    class Meta:
        ref_name = "MessageIndexEntry"


class GroupSerializer(serializers.Serializer):
    fingerprint = serializers.CharField()
    queue = serializers.CharField()
    exception_type = serializers.CharField()
    pattern = serializers.CharField()
    ndlv = serializers.IntegerField(help_text="Members quarantined: someone must decide.")
    wait = serializers.IntegerField(help_text="Members waiting for a retry.")
    count = serializers.IntegerField(help_text="All its members, resolved ones too.")
    first_seen = serializers.DateTimeField(allow_null=True)
    last_seen = serializers.DateTimeField(allow_null=True)
    states = serializers.DictField(child=serializers.IntegerField())
    owner = OwnerField(
        source="*",
        help_text="Who is investigating it, or null (always null in search results, and "
        "without the permission to read notes).",
    )
    status = GroupStatusSerializer(
        allow_null=True,
        default=None,
        help_text="Where it stands in its lifecycle (open, acknowledged, resolved, ignored); "
        "null in search results.",
    )

    class Meta:
        ref_name = "FailureGroup"


class GroupFilterSerializer(serializers.Serializer):
    queue = serializers.CharField(required=False, allow_blank=True, max_length=100)
    resolved = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Also groups none of whose members is NDLV or WAIT.",
    )
    owner = serializers.CharField(
        required=False, allow_blank=True, max_length=150, help_text=OWNER_HELP
    )
    status = serializers.ChoiceField(
        list(STATE_NAMES),
        required=False,
        help_text="Only the groups in this state of their lifecycle.",
    )


class GroupDetailSerializer(GroupSerializer):
    frames = serializers.CharField()
    sample_message_id = serializers.CharField()
    sample_reason = serializers.CharField()
    sample_stack = serializers.CharField()

    class Meta:
        ref_name = "FailureGroupDetail"


class SearchFilterSerializer(serializers.Serializer):
    q = serializers.CharField(max_length=QUERY_MAX, help_text="What to look for.")


# The dashboard's numbers (GET /api/v1/stats). No docstring: it would show in the schema.
class StatsSerializer(serializers.Serializer):
    totals = StateCounts(help_text="Messages per state, all queues.")
    queues = serializers.DictField(child=StateCounts(), help_text="Messages per state, per queue.")
    quarantined = serializers.IntegerField()
    delivered_after_failure = inline_serializer(
        "DeliveredAfterFailure",
        {
            "count": serializers.IntegerField(),
            "more": serializers.BooleanField(),
        },
        help_text="Of the DLVD messages, those that failed at least once (the "
        "ones the message list holds); the count stops at 10,000 (`more`).",
    )
    updated_at = serializers.DateTimeField(allow_null=True)
    disabled_queues = inline_serializer(
        "DisabledQueue",
        {
            "name": serializers.CharField(),
            "disabled_at": serializers.DateTimeField(allow_null=True),
            "reason": serializers.CharField(),
        },
        many=True,
    )
    top_groups = GroupSerializer(
        many=True, help_text="Those that need attention, muted ones left out."
    )
    muted_groups = serializers.IntegerField(
        help_text="Groups people muted (ignored) whose members still need attention: counted, "
        "not listed."
    )
    inflow = inline_serializer(
        "InflowHour",
        {
            "hour": serializers.DateTimeField(),
            "count": serializers.IntegerField(),
        },
        many=True,
    )
    flows = inline_serializer(
        "FlowHour",
        {
            "hour": serializers.DateTimeField(),
            **{flow: serializers.IntegerField() for flow in FLOWS},
        },
        many=True,
        help_text="Per hour, all queues together, over the inflow's hours: "
        "messages that entered quarantine, left it (a decision), were "
        "delivered, and failed attempts.",
    )
    sources = inline_serializer(
        "SourceStatus",
        {
            "name": serializers.CharField(),
            "kind": serializers.CharField(help_text="rabbitmq, nats or redis"),
            "kind_title": serializers.CharField(
                help_text="The kind for people: RabbitMQ, NATS JetStream, Redis Streams"
            ),
            "broker_queue": serializers.CharField(
                help_text="What is drained: the RabbitMQ queue, the "
                "JetStream stream, the Redis stream key"
            ),
            "queue": serializers.CharField(),
            "redrive_queue": serializers.CharField(allow_null=True),
            "enabled": serializers.BooleanField(),
            "state": serializers.CharField(
                help_text="starting, connecting, consuming, down, stopped, "
                "disabled, or 'not running' (no heartbeat for a minute)"
            ),
            "state_since": serializers.DateTimeField(allow_null=True),
            "last_error": serializers.CharField(),
            "retry_at": serializers.DateTimeField(
                allow_null=True,
                help_text="While down: when it connects again (the backoff "
                "doubles from 1 s to a minute)",
            ),
            "heartbeat_at": serializers.DateTimeField(allow_null=True),
            "drained": serializers.IntegerField(),
            "refused": serializers.IntegerField(),
            "last_drained_at": serializers.DateTimeField(allow_null=True),
            "lag": serializers.IntegerField(
                allow_null=True,
                help_text="Dead letters waiting on the broker when it last "
                "said; null before it has",
            ),
            "lag_at": serializers.DateTimeField(allow_null=True),
            "connected_to": serializers.CharField(
                help_text="Where the consumer last connected (no secret)"
            ),
            "parking": serializers.CharField(
                help_text="Where refused messages are set aside on the broker"
            ),
        },
        many=True,
        help_text="The broker sources drained and what their consumers do.",
    )
    counts_check = inline_serializer(
        "CountsCheck",
        {
            "status": serializers.CharField(
                help_text="running, clean, drift, repaired, busy or failed"
            ),
            "finished_at": serializers.DateTimeField(allow_null=True),
            "differences": serializers.IntegerField(),
        },
        allow_null=True,
        help_text="The newest check of these counts against a recount from "
        "the lake (manage.py counts_verify; daily): how many differed. Null "
        "before the first.",
    )
    stale = inline_serializer(
        "Staleness",
        {
            "reason": serializers.CharField(
                help_text="not_run (no refresh ran since), running (one is "
                "running, for long), held (another writer holds the read "
                "models) or failed (the last refresh failed)"
            ),
            "waiting_since": serializers.DateTimeField(
                help_text="When the oldest change the counts lack was made."
            ),
            "text": serializers.CharField(help_text="The same, in words."),
        },
        allow_null=True,
        help_text="Why the counts lag behind the lake, when a change has "
        "waited several refresh intervals for one; null while they are "
        "current (however old updated_at is: they change only with the "
        "messages).",
    )
    demo = inline_serializer(
        "DemoFill",
        {
            "total": serializers.IntegerField(),
            "sent": serializers.IntegerField(),
            "filling": serializers.BooleanField(),
            "waiting": serializers.BooleanField(
                help_text="nothing sent for a while: the default worker is not running"
            ),
            "filled_at": serializers.DateTimeField(allow_null=True),
        },
        allow_null=True,
        help_text="The demo's messages as `make run` sends them, a chunk every "
        "few seconds: how many of how many so far. Null when no demo fills "
        "(nor finished in the last minutes).",
    )

    class Meta:
        ref_name = "Stats"


class EventSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    from_state = serializers.CharField(allow_null=True)
    to_state = serializers.CharField()
    queue = serializers.CharField()
    attempt = serializers.IntegerField()
    delivery_count = serializers.IntegerField()
    candidate = serializers.BooleanField()
    next_attempt_at = serializers.DateTimeField(allow_null=True)
    actor = serializers.CharField(allow_null=True)
    run_id = serializers.CharField(allow_null=True)
    reason = serializers.CharField(allow_null=True)
    exception_type = serializers.CharField(allow_null=True)
    stack = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "MessageEvent"


class HeadersShownSerializer(serializers.Serializer):
    count = serializers.IntegerField(help_text="How many headers the message has.")
    size = serializers.IntegerField(help_text="Their names' and values' bytes (UTF-8).")
    shown = serializers.IntegerField(help_text="How many are in `headers`.")
    more = serializers.IntegerField(help_text="How many are left out of `headers`.")
    more_bytes = serializers.IntegerField(help_text="The bytes of those left out.")
    cut = serializers.ListField(
        child=serializers.CharField(), help_text="The headers in `headers` whose value is cut."
    )
    complete = serializers.BooleanField(
        help_text="Whether `headers` holds every header whole (if not: GET .../headers)."
    )

    class Meta:
        ref_name = "HeadersShown"


class HeadersFilterSerializer(serializers.Serializer):
    offset = serializers.IntegerField(
        required=False, default=0, min_value=0, help_text="The first header's place, from 0."
    )
    limit = serializers.IntegerField(
        required=False,
        default=HEADERS_PAGE,
        min_value=1,
        max_value=HEADERS_PAGE_MAX,
        help_text=f"Most headers in the page; a page also stops before {HEADERS_PAGE_BYTES:,} "
        "bytes (it holds at least one header, however long).",
    )


class MessageHeadersSerializer(serializers.Serializer):
    headers = serializers.DictField(
        child=serializers.CharField(), help_text="Whole, in the order stored."
    )
    offset = serializers.IntegerField()
    count = serializers.IntegerField(help_text="How many headers the message has.")
    next = serializers.IntegerField(
        allow_null=True, help_text="The offset of the next page; null after the last."
    )

    class Meta:
        ref_name = "MessageHeaders"


class MessageDetailSerializer(serializers.Serializer):
    id = serializers.CharField()
    queue = serializers.CharField()
    original_queue = serializers.CharField()
    state = serializers.CharField(allow_null=True)
    in_flight = inline_serializer(
        "InFlight",
        {
            "run": serializers.CharField(help_text="The delivery run that holds it."),
            "since": serializers.DateTimeField(help_text="When that run took it (R1)."),
        },
        allow_null=True,
        help_text="While the message is DLNG: which run is delivering it, since when.",
    )
    delivery_count = serializers.IntegerField()
    blacklist_candidate = serializers.BooleanField()
    batch_limit = serializers.IntegerField(allow_null=True)
    next_attempt_at = serializers.DateTimeField(allow_null=True)
    reason = serializers.CharField(allow_null=True)
    exception_type = serializers.CharField(allow_null=True)
    on_poison_list = serializers.BooleanField()
    # Null once the body is purged (R15) or compacted away before the next refresh.
    body_sha256 = serializers.CharField(allow_null=True)
    body_size = serializers.IntegerField(allow_null=True)
    content_type = serializers.CharField(allow_null=True)
    headers = serializers.SerializerMethodField()
    headers_shown = serializers.SerializerMethodField()
    dead_letter = inline_serializer(
        "DeadLetter",
        {
            "kind": serializers.CharField(help_text=", ".join(DEAD_LETTER_KINDS)),
            "origin": serializers.CharField(help_text="Where it died, in one line."),
            "exception_type": serializers.CharField(),
            "reason": serializers.CharField(),
            "stack": serializers.CharField(allow_null=True),
            "original_queue": serializers.CharField(allow_null=True),
            "original_exchange": serializers.CharField(allow_null=True),
            "original_routing_keys": serializers.ListField(child=serializers.CharField()),
            "count": serializers.IntegerField(allow_null=True),
            "details": serializers.DictField(child=serializers.CharField()),
        },
        allow_null=True,
        help_text="Why the message died before it reached Antidote, from its dead-letter "
        "headers (RabbitMQ's x-death, Kafka Connect's, Kafka Streams' or Spring Kafka's) or "
        "the origin a NATS or Redis Streams source recorded; null if none.",
    )
    conversation_id = serializers.CharField(allow_null=True)
    sender = serializers.CharField(allow_null=True)
    enqueued_at = serializers.DateTimeField(allow_null=True)
    history = EventSerializer(many=True)

    class Meta:
        ref_name = "MessageDetail"

    @extend_schema_field(
        {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": f"At most {HEADERS_SHOWN} headers, the first as stored, by name; "
            f"a name cut to {HEADER_NAME_SHOWN:,} characters, a value to "
            f"{HEADER_VALUE_SHOWN:,}. `headers_shown` says what is left out; "
            "GET /api/v1/messages/{id}/headers gives them whole.",
        }
    )
    def get_headers(self, obj):
        return {row.name: row.value for row in obj["headers"].rows}

    @extend_schema_field(HeadersShownSerializer)
    def get_headers_shown(self, obj):
        shown = obj["headers"]
        return {
            "count": shown.count,
            "size": shown.size,
            "shown": len(shown.rows),
            "more": shown.more,
            "more_bytes": shown.more_bytes,
            "cut": shown.cut,
            "complete": shown.complete,
        }
