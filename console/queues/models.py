from django.core.exceptions import ValidationError
from django.db import models

from console import leases
from console.envnames import handler_options_refusals
from workers.brokers.registry import CONNECTOR_MODULES, KIND_TITLES
from workers.engine import policy as P
from workers.engine.handlers import HandlerImportError, handler_build, load_handler

# A queue's policy settings, as SEMANTICS.md names them (`enabled` is its status, not policy).
POLICY_FIELDS = (
    "handler",
    "max_failed_deliveries",
    "exception_destination",
    "blocked_retry_timeout",
    "backoff_every",
    "backoff_delays",
    "periodic_interval",
    "on_permanent",
    "poison_match",
    "disable_after",
    "retention_days",
    "handler_options",
    "locked_headers",
)


def _policy_check(check, value):
    """Runs one of the engine's policy checks, its refusal as the error Django's forms show.
    (The validators below stay named functions: the migrations refer to them by name.)"""
    try:
        check(value)
    except P.PolicyError as exc:
        raise ValidationError(str(exc)) from exc


def _validate_exception_destination(value):
    _policy_check(P.validate_exception_destination, value)


def _validate_backoff_delays(value):
    _policy_check(P.validate_backoff_delays, value)


def _validate_queue_name(value):
    _policy_check(P.validate_queue_name, value)


def _validate_handler_options(value):
    _policy_check(P.validate_handler_options, value)
    # The Django admin's way in: a variable a handler reads is never one of the product's own.
    refusals = handler_options_refusals(value)
    if refusals:
        raise ValidationError("; ".join(refusals))


def _validate_locked_headers(value):
    _policy_check(P.validate_locked_headers, value)


def _default_backoff_delays():
    return list(P.DEFAULTS["backoff_delays"])


def _validate_handler(value):
    try:
        load_handler(value)
    except HandlerImportError as exc:
        raise ValidationError(f"handler: {exc}") from exc


class Queue(models.Model):
    """A named destination with its handler and delivery policy (R3-R6, R9, R11, R15)."""

    D = P.DEFAULTS

    name = models.CharField(max_length=100, unique=True, validators=[_validate_queue_name])
    handler = models.CharField(
        max_length=300,
        validators=[_validate_handler],
        help_text="Dotted path of the callable that processes this queue's messages.",
    )
    max_failed_deliveries = models.PositiveIntegerField(
        default=D["max_failed_deliveries"], help_text="R3. 0 means no limit."
    )
    exception_destination = models.CharField(
        max_length=120,
        default=D["exception_destination"],
        validators=[_validate_exception_destination],
        help_text="R4: quarantine, none, or queue:<name>.",
    )
    blocked_retry_timeout = models.PositiveIntegerField(
        default=D["blocked_retry_timeout"], help_text="R4 'none': seconds between retries."
    )
    backoff_every = models.PositiveIntegerField(default=D["backoff_every"], help_text="R5: k.")
    backoff_delays = models.JSONField(
        default=_default_backoff_delays,
        blank=True,
        validators=[_validate_backoff_delays],
        help_text="R5: delays in seconds, e.g. [300, 600].",
    )
    periodic_interval = models.PositiveIntegerField(
        default=D["periodic_interval"], help_text="R5: seconds between periodic runs."
    )
    on_permanent = models.CharField(
        max_length=20,
        default=D["on_permanent"],
        choices=[(c, c) for c in P.ON_PERMANENT_CHOICES],
        help_text="R6.",
    )
    poison_match = models.CharField(
        max_length=20,
        default=D["poison_match"],
        choices=[(c, c) for c in P.POISON_MATCH_CHOICES],
        help_text="R9.",
    )
    disable_after = models.PositiveIntegerField(
        default=D["disable_after"], help_text="R11: failed attempts in a row; 0 = never."
    )
    retention_days = models.PositiveIntegerField(default=D["retention_days"], help_text="R15.")
    handler_options = models.JSONField(
        default=dict,
        blank=True,
        validators=[_validate_handler_options],
        help_text="Settings of a configurable handler (a redrive's exchange, say); no secrets.",
    )

    locked_headers = models.JSONField(
        default=list,
        blank=True,
        validators=[_validate_locked_headers],
        help_text="Header names (in any case) an edit of a message keeps as they are, e.g. "
        '["x-tenant", "x-signature"]; the product\'s own are kept whatever this says.',
    )

    enabled = models.BooleanField(default=True)
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.TextField(blank=True, default="")
    consecutive_failures = models.PositiveIntegerField(default=0, editable=False)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def clean(self):
        if self.handler and isinstance(self.handler_options, dict):
            try:
                load_handler(self.handler)
            except HandlerImportError:
                pass  # the handler field's own validator says so
            else:
                try:
                    handler_build(self.handler, self.handler_options)
                except HandlerImportError as exc:
                    raise ValidationError({"handler_options": str(exc)}) from exc
        if self.backoff_every < 1:
            raise ValidationError({"backoff_every": "must be at least 1"})
        if self.periodic_interval < 1:
            raise ValidationError({"periodic_interval": "must be at least 1"})

    def policy(self):
        values = {name: getattr(self, name) for name in ("name", *POLICY_FIELDS)}
        values["backoff_delays"] = list(self.backoff_delays)
        values["handler_options"] = dict(self.handler_options or {})
        values["locked_headers"] = list(self.locked_headers or [])
        return P.policy_from_mapping(
            {**values, "enabled": self.enabled, "consecutive_failures": self.consecutive_failures}
        )


SOURCE_KINDS = tuple(CONNECTOR_MODULES)
CONSUMER_STATES = ("starting", "connecting", "consuming", "down", "stopped")


# What "back to its origin" is, for each kind of source.
ORIGIN_WORDS = {
    "rabbitmq": "its original RabbitMQ queue",
    "nats": "its original NATS subject",
    "redis": "its original Redis stream",
}


class BrokerSource(leases.Heartbeating):
    """Where a broker keeps dead letters that Antidote drains into one of its queues: a
    RabbitMQ dead-letter queue, a NATS JetStream stream, a Redis stream. Configured as code with
    the queues; the broker's URL is never stored, only the name of the environment variable
    that holds it. The consumer process writes the state fields."""

    name = models.CharField(max_length=100, unique=True, validators=[_validate_queue_name])
    kind = models.CharField(max_length=20, choices=[(k, KIND_TITLES[k]) for k in SOURCE_KINDS])
    url_env = models.CharField(
        max_length=100, help_text="Environment variable holding the broker's URL."
    )
    broker_queue = models.CharField(
        max_length=255,
        help_text="What is drained: a RabbitMQ queue, a JetStream stream, a Redis stream key.",
    )
    queue = models.ForeignKey(
        Queue,
        on_delete=models.PROTECT,
        related_name="sources",
        help_text="The Antidote queue its messages land in.",
    )
    redrive_queue = models.ForeignKey(
        Queue,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="redrive_for",
        help_text="The Antidote queue whose handler publishes messages back to the broker.",
    )
    prefetch = models.PositiveIntegerField(default=1000)
    batch_size = models.PositiveIntegerField(default=1000)
    batch_seconds = models.FloatField(default=1.0)
    enabled = models.BooleanField(default=True)
    options = models.JSONField(
        default=dict,
        blank=True,
        help_text="The kind's own settings (never a secret: those are in the environment).",
    )

    state = models.CharField(max_length=20, default="stopped")
    state_since = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    retry_at = models.DateTimeField(null=True, blank=True)
    drained = models.BigIntegerField(default=0)
    refused = models.BigIntegerField(default=0)
    last_drained_at = models.DateTimeField(null=True, blank=True)
    # Dead letters waiting on the broker, when it says, and when it last said.
    lag = models.BigIntegerField(null=True, blank=True)
    lag_at = models.DateTimeField(null=True, blank=True)
    # Where the consumer last connected ("RabbitMQ at host:5672, vhost '/'"): no secret.
    connected_to = models.CharField(max_length=255, blank=True, default="")

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    @property
    def origin_words(self):
        """Where a redrive through this source's redrive queue sends a message, for people:
        "its original RabbitMQ queue"."""
        return ORIGIN_WORDS.get(self.kind, f"where it came from ({self.get_kind_display()})")


# How a message came in, from the first word of its ingest source ("api:shop", console.ingest):
# each route for people. A broker source's kind names its broker (KIND_TITLES).
INTAKE_ROUTES = {
    "api": "API",
    "person": "API, by hand",
    "inbox": "inbox folder",
    "cli": "ingest command",
    "seed_demo": "demo data",
    **KIND_TITLES,
}


class QueueIntake(models.Model):
    """A way messages came into a queue, and when they last did: the queues page says where each
    queue's messages come from, the API too, beside its configured broker sources. One row per
    queue and route, written by ingest (console.queues.services.queue_intake_record)."""

    queue = models.CharField(max_length=100)  # by name: a deleted queue's messages stay listed
    route = models.CharField(max_length=20)  # a key of INTAKE_ROUTES
    first_at = models.DateTimeField()
    last_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["queue", "route"], name="one_intake_per_queue_route")
        ]

    def __str__(self):
        return f"{self.queue} from {self.route}"
