"""Broker sources as code, beside the queues, and the state their consumer reports.

A queue file may list `sources:` next to its `queues:`:

    sources:
      - name: orders-dlq
        kind: rabbitmq               # rabbitmq, nats or redis (workers.brokers.registry)
        url_env: ANTIDOTE_AMQP_URL   # the environment variable that holds amqp://user:pass@host
        broker_queue: orders.dlq     # what is drained: the RabbitMQ queue, the JetStream
                                     # stream, the Redis stream key
        queue: orders-dead           # the Antidote queue its messages land in
        redrive_queue: orders-redrive  # optional: where "reprocess to its original queue" goes
        options: {}                  # the kind's own settings, checked by its connector

The URL itself is never stored, in the database or the trail: only its variable's name. Nor
does any secret go in `options`: a connector that needs one reads it from the environment.
"""

import re
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from console.audit.services import audit_record
from console.envnames import broker_variable_refusal
from console.queues.models import SOURCE_KINDS, BrokerSource, Queue
from console.queues.signals import source_state_changed
from workers.brokers.base import SourceConfig, SourceDown
from workers.brokers.registry import connector_loaded
from workers.engine import policy as P

REDRIVE_HANDLER = "workers.brokers.redrive.publisher"
INTAKE_HANDLER = "workers.brokers.intake.dead_letter"
DEFAULT_URL_ENV = "ANTIDOTE_AMQP_URL"
ENV_NAME_RE = re.compile(r"^[A-Z_][A-Z0-9_]{0,99}$")
SOURCE_FIELDS = {
    "name",
    "kind",
    "url_env",
    "broker_queue",
    "queue",
    "redrive_queue",
    "prefetch",
    "batch_size",
    "batch_seconds",
    "enabled",
    "options",
}
LIMITS = {"prefetch": (1, 65535), "batch_size": (1, 50_000)}
# A consumer that has not written its heartbeat for this long is shown as not running.
HEARTBEAT_STALE = timedelta(seconds=60)


@dataclass(frozen=True)
class SourceSpec:
    name: str
    kind: str
    url_env: str
    broker_queue: str
    queue: str
    redrive_queue: str | None
    prefetch: int
    batch_size: int
    batch_seconds: float
    enabled: bool
    options: dict

    def values(self, queues):
        return {
            "kind": self.kind,
            "url_env": self.url_env,
            "broker_queue": self.broker_queue,
            "queue": queues[self.queue],
            "redrive_queue": queues[self.redrive_queue] if self.redrive_queue else None,
            "prefetch": self.prefetch,
            "batch_size": self.batch_size,
            "batch_seconds": self.batch_seconds,
            "enabled": self.enabled,
            "options": self.options,
        }


def _int_in(entry, name, default, label, errors):
    value = entry.get(name, default)
    low, high = LIMITS[name]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        errors.append(f"{label}: {name} must be a whole number from {low} to {high}")
        return default
    return value


def _spec(entry, label, errors):
    unknown = set(entry) - SOURCE_FIELDS
    if unknown:
        errors.append(f"{label}: unknown field(s) {', '.join(sorted(map(str, unknown)))}")
    try:
        name = P.validate_queue_name(entry.get("name"))
    except P.PolicyError as exc:
        errors.append(f"{label}: {exc}")
        name = None
    kind = entry.get("kind", "rabbitmq")
    if kind not in SOURCE_KINDS:
        errors.append(f"{label}: kind must be one of {', '.join(SOURCE_KINDS)}, not {kind!r}")
    url_env = entry.get("url_env", DEFAULT_URL_ENV)
    if not isinstance(url_env, str) or not ENV_NAME_RE.match(url_env):
        errors.append(
            f"{label}: url_env names the environment variable holding the broker's URL "
            "(capitals, digits and '_'); the URL itself never goes in a file"
        )
    elif refusal := broker_variable_refusal(url_env):
        # CELERY_BROKER_URL would drain the product's own task queue (console.envnames).
        errors.append(f"{label}: url_env: {refusal}")
    broker_queue = entry.get("broker_queue")
    if not isinstance(broker_queue, str) or not 0 < len(broker_queue) <= 255:
        errors.append(f"{label}: broker_queue (the queue to drain) is required")
    into = entry.get("queue")
    if not isinstance(into, str) or not into:
        errors.append(f"{label}: queue (the Antidote queue its messages land in) is required")
    redrive = entry.get("redrive_queue")
    if redrive is not None and not isinstance(redrive, str):
        errors.append(f"{label}: redrive_queue must be a queue name")
    batch_seconds = entry.get("batch_seconds", 1.0)
    if isinstance(batch_seconds, bool) or not isinstance(batch_seconds, int | float):
        errors.append(f"{label}: batch_seconds must be a number of seconds")
    elif not 0.05 <= batch_seconds <= 60:
        errors.append(f"{label}: batch_seconds must be from 0.05 to 60")
    enabled = entry.get("enabled", True)
    if not isinstance(enabled, bool):
        errors.append(f"{label}: enabled must be true or false")
    options = entry.get("options") or {}
    if not isinstance(options, dict):
        errors.append(f"{label}: options must be a mapping of the {kind} source's settings")
        options = {}
    elif kind in SOURCE_KINDS:
        errors += [f"{label}: {e}" for e in options_errors(kind, options)]
    return SourceSpec(
        name=name,
        kind=kind,
        url_env=url_env,
        broker_queue=broker_queue,
        queue=into,
        redrive_queue=redrive,
        prefetch=_int_in(entry, "prefetch", 1000, label, errors),
        batch_size=_int_in(entry, "batch_size", 1000, label, errors),
        batch_seconds=float(batch_seconds) if isinstance(batch_seconds, int | float) else 1.0,
        enabled=enabled,
        options=options,
    )


def options_errors(kind, options):
    """What is wrong with a source's options, in sentences, as its kind's connector says; a
    connector that cannot be loaded (its module or client missing) is itself the error."""
    try:
        found = connector_loaded(kind)
    except SourceDown as exc:
        return [str(exc)]
    return list(found.options_errors(options))


def _redrive_handler(kind):
    """The redrive handler a source of `kind` sends messages back with (its connector's sink)."""
    try:
        return getattr(connector_loaded(kind), "sink", None)
    except SourceDown:
        return None  # said by options_errors


def sources_validate(entries, *, handlers_in_file):
    """SourceSpecs for a file's `sources:`, and the errors found. `handlers_in_file` maps each
    queue of the file to its handler; other queues must exist already."""
    errors, specs = [], []
    if entries is None:
        return [], []
    if not isinstance(entries, list):
        return [], ["sources: expected a list of sources"]
    named = [e.get("queue") for e in entries if isinstance(e, dict)]
    named += [e.get("redrive_queue") for e in entries if isinstance(e, dict)]
    existing = dict(
        Queue.objects.filter(name__in=[n for n in named if isinstance(n, str)]).values_list(
            "name", "handler"
        )
    )
    handlers = {**existing, **handlers_in_file}
    seen = {}
    for index, entry in enumerate(entries):
        label = f"source {entry.get('name')!r} (entry {index + 1})"
        if not isinstance(entry, dict):
            errors.append(f"source entry {index + 1}: must be a mapping, not {entry!r}")
            continue
        spec = _spec(entry, label, errors)
        if spec.name in seen:
            errors.append(f"{label}: also defined by entry {seen[spec.name] + 1}")
        seen.setdefault(spec.name, index)
        if isinstance(spec.queue, str) and spec.queue and spec.queue not in handlers:
            errors.append(f"{label}: queue {spec.queue!r} does not exist and is not in this file")
        if isinstance(spec.redrive_queue, str):
            handler = handlers.get(spec.redrive_queue)
            sink = _redrive_handler(spec.kind) if spec.kind in SOURCE_KINDS else None
            if handler is None:
                errors.append(
                    f"{label}: redrive_queue {spec.redrive_queue!r} does not exist and is not "
                    "in this file"
                )
            elif sink is not None and handler != sink:
                errors.append(
                    f"{label}: redrive_queue {spec.redrive_queue!r} must have the handler "
                    f"{sink}, not {handler}"
                )
            if spec.redrive_queue == spec.queue:
                errors.append(f"{label}: redrive_queue must not be the queue it lands in")
        specs.append(spec)
    return specs, errors


def sources_save(specs, *, actor):
    """Create or update sources (inside the queue load's transaction); returns (name, status,
    changed fields) per source."""
    names = {s.queue for s in specs} | {s.redrive_queue for s in specs if s.redrive_queue}
    queues = Queue.objects.in_bulk(list(names), field_name="name")
    existing = BrokerSource.objects.select_for_update().in_bulk(
        [s.name for s in specs], field_name="name"
    )
    results = []
    for spec in specs:
        values = spec.values(queues)
        source = existing.get(spec.name)
        if source is None:
            source = BrokerSource.objects.create(name=spec.name, **values)
            status, changed = "created", list(values)
        else:
            changed = [n for n, v in values.items() if getattr(source, n) != v]
            for n in changed:
                setattr(source, n, values[n])
            if changed:
                source.save()
            status = "updated" if changed else "unchanged"
        if changed:
            shown = {n: str(values[n]) if n.endswith("queue") else values[n] for n in changed}
            audit_record(
                actor=actor,
                action="source.created" if status == "created" else "source.changed",
                target_type="source",
                target_id=spec.name,
                details={"changed": shown},
            )
        results.append((spec.name, status, tuple(changed)))
    return results


# --- The consumer's state ------------------------------------------------------------------------


def source_connector_config(source, *, url):
    """A source's row as its connector is handed it: `url` is read from the row's variable by
    the consumer alone (a page that asks the connector something passes none)."""
    return SourceConfig(
        name=source.name,
        kind=source.kind,
        url_env=source.url_env,
        url=url,
        drained=source.broker_queue,
        into=source.queue.name,
        prefetch=source.prefetch,
        batch_size=source.batch_size,
        options=dict(source.options or {}),
    )


def source_state_set(*, name, state, error="", retry_at=None, where=None):
    """Record what a source's consumer is doing (a state change stamps `state_since`), and,
    with `where`, where it is connected (no secret)."""
    now = timezone.now()
    with transaction.atomic():
        source = BrokerSource.objects.select_for_update().filter(name=name).first()
        if source is None:
            return
        fields = {"heartbeat_at": now, "last_error": error[:2000], "retry_at": retry_at}
        if where is not None:
            fields["connected_to"] = where[:255]
        changed = source.state != state
        if changed:
            fields.update(state=state, state_since=now)
        BrokerSource.objects.filter(pk=source.pk).update(**fields)
        if changed:
            source_state_changed.send(sender=BrokerSource, name=name, state=state, error=error)


def _lag_fields(lag, now):
    # None is "the broker did not say": the last number it gave stays, with its time.
    return {} if lag is None else {"lag": lag, "lag_at": now}


def source_heartbeat(*, name, lag=None):
    """The consumer is alive; with `lag`, how many dead letters wait on the broker."""
    now = timezone.now()
    BrokerSource.objects.filter(name=name).update(heartbeat_at=now, **_lag_fields(lag, now))


def source_drained(*, name, accepted, refused, error=None, lag=None):
    """Count what a batch did: `accepted` stored (or already there), `refused` set aside, and,
    with `error`, say why in the same write (whoever reads the counts reads the reason too);
    with `lag`, how many dead letters still wait on the broker."""
    now = timezone.now()
    fields = {} if error is None else {"last_error": error[:2000]}
    fields.update(_lag_fields(lag, now))
    BrokerSource.objects.filter(name=name).update(
        drained=F("drained") + accepted,
        refused=F("refused") + refused,
        last_drained_at=now if accepted else F("last_drained_at"),
        heartbeat_at=now,
        **fields,
    )
