"""Writes to queues and their policies.

`queues_load` is "queues as code": a file lists queues with the field names of SEMANTICS.md (and
the broker sources that feed them, console.queues.sources), and loading it creates or updates
them, all or nothing. Every entry goes through the same
`policy_from_mapping` the engine uses, so a setting the engine would refuse never reaches the DB.
"""

from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from console.access.actor import acting_name
from console.audit.services import audit_record
from console.envnames import handler_options_refusals
from console.queues.models import INTAKE_ROUTES, POLICY_FIELDS, Queue, QueueIntake
from console.queues.rules_file import rules_load
from console.queues.sources import sources_save, sources_validate
from workers.engine import policy as P
from workers.engine.handlers import HandlerImportError, handler_build
from workers.outbound import DestinationError, OutboundRefused

CREATED = "created"
UPDATED = "updated"
UNCHANGED = "unchanged"


class QueueLoadError(ValueError):
    """The file was refused; `errors` lists every problem, each naming its queue."""

    def __init__(self, errors):
        self.errors = list(errors)
        super().__init__("\n".join(self.errors))


@dataclass(frozen=True)
class QueueLoadResult:
    name: str
    status: str  # created, updated or unchanged
    changed: tuple = ()  # the fields an update changed
    kind: str = "queue"  # or "source" (console.queues.sources)


def queues_from_document(data):
    """(queue entries, source entries) of a parsed file: a top-level list of queues, or
    {"queues": [...], "sources": [...]}."""
    sources = None
    if isinstance(data, dict):
        extra = set(data) - {"queues", "sources", "rules"}
        if extra:
            raise QueueLoadError(
                [f"unexpected top-level key(s): {', '.join(sorted(map(str, extra)))}"]
            )
        sources = data.get("sources")
        data = data.get("queues")
    if not isinstance(data, list):
        raise QueueLoadError(['expected a list of queues, or a mapping {"queues": [...]}'])
    return data, sources


def rules_from_document(data):
    """The standing rules of a parsed file (`rules:` beside `queues:`), None when it has none."""
    return data.get("rules") if isinstance(data, dict) else None


def _label(index, entry):
    name = entry.get("name") if isinstance(entry, dict) else None
    if isinstance(name, str) and name:
        return f"queue {name!r} (entry {index + 1})"
    return f"entry {index + 1}"


def _validate(entries):
    """Every entry as a QueuePolicy, or QueueLoadError listing every problem found."""
    errors = []
    policies = []
    for index, entry in enumerate(entries):
        label = _label(index, entry)
        if not isinstance(entry, dict):
            errors.append(f"{label}: must be a mapping of policy fields, not {entry!r}")
            continue
        if "consecutive_failures" in entry:
            # Runtime state the engine keeps, not a setting a file may carry.
            errors.append(f"{label}: consecutive_failures is not a policy field")
            continue
        try:
            policy = P.policy_from_mapping(entry)
        except P.PolicyError as exc:
            errors.append(f"{label}: {exc}")
            continue
        # A variable the handler reads is never one of the product's own (console.envnames).
        refusals = handler_options_refusals(policy.handler_options)
        if refusals:
            errors += [f"{label}: handler_options {refusal}" for refusal in refusals]
            continue
        try:
            handler = handler_build(policy.handler, policy.handler_options)
        except HandlerImportError as exc:
            errors.append(f"{label}: handler {policy.handler!r} cannot be used: {exc}")
            continue
        problem = _destination_problem(handler)
        if problem:
            errors.append(f"{label}: handler {policy.handler!r} cannot be used: {problem}")
            continue
        policies.append((index, policy, "enabled" in entry))

    seen = {}
    for index, policy, _ in policies:
        if policy.name in seen:
            errors.append(
                f"queue {policy.name!r} (entry {index + 1}): "
                f"also defined by entry {seen[policy.name] + 1}"
            )
        seen.setdefault(policy.name, index)

    in_file = set(seen)
    targets = {p.exception_queue for _, p, _ in policies if p.exception_queue}
    existing = set(Queue.objects.filter(name__in=targets - in_file).values_list("name", flat=True))
    for index, policy, _ in policies:
        target = policy.exception_queue
        if target is None:
            continue
        if target == policy.name:
            errors.append(
                f"queue {policy.name!r} (entry {index + 1}): exception_destination "
                f"{policy.exception_destination!r} names the queue itself; its failed messages "
                "would cycle forever"
            )
        elif target not in in_file and target not in existing:
            errors.append(
                f"queue {policy.name!r} (entry {index + 1}): exception_destination "
                f"{policy.exception_destination!r} names a queue that does not exist "
                "and is not in this file"
            )
    if errors:
        raise QueueLoadError(errors)
    return [(policy, explicit_enabled) for _, policy, explicit_enabled in policies]


def _destination_problem(handler):
    """What is wrong with where a handler sends (a poster's url that resolves to an internal
    address), for the handlers that say where (`destinations_check`); building a handler looks
    nothing up, loading a file may. The check when sending is the one that counts."""
    check = getattr(handler, "destinations_check", None)
    if check is None:
        return None
    try:
        check(allowance=settings.OUTBOUND_ALLOW_INTERNAL)
    except (DestinationError, OutboundRefused) as exc:
        return f"url {exc}"
    return None


def _field_values(policy):
    values = {name: getattr(policy, name) for name in POLICY_FIELDS}
    values["backoff_delays"] = list(policy.backoff_delays)
    values["locked_headers"] = list(policy.locked_headers)
    return values


def _apply_enabled(queue, policy, explicit):
    """A file re-enables or disables a queue only when it says `enabled:` explicitly.

    A queue disabled by R11 stays disabled when a file that says nothing about it is loaded again
    (every `make run` loads the demo file): re-enabling is an administrator's decision. An explicit
    `enabled: true` is that decision, so it clears the disabling like the admin action does.
    """
    if not explicit or queue.enabled == policy.enabled:
        return []
    queue.enabled = policy.enabled
    if policy.enabled:
        queue.disabled_at = None
        queue.disabled_reason = ""
        queue.consecutive_failures = 0
        return ["enabled", "disabled_at", "disabled_reason", "consecutive_failures"]
    queue.disabled_reason = "disabled by a queue file"
    return ["enabled", "disabled_reason"]


def queues_load(*, data, actor=None, proposer=None):
    """Create or update the queues in `data` (a parsed file), all or nothing.

    Returns one QueueLoadResult per queue, in file order. Raises QueueLoadError, naming each
    offending queue, and changes nothing when any entry is invalid. Queues missing from the file are
    left alone: their messages still refer to them. The file's standing rules (`rules:`) are
    proposed in the name of `proposer` (a user), for a second person to approve on screen
    (console.queues.rules_file).
    """
    entries, source_entries = queues_from_document(data)
    rule_entries = rules_from_document(data)
    validated = _validate(entries)
    specs, errors = sources_validate(
        source_entries, handlers_in_file={p.name: p.handler for p, _ in validated}
    )
    if rule_entries and proposer is None:
        errors.append("the file proposes standing rules: say who proposes them (--proposer)")
    if errors:
        raise QueueLoadError(errors)
    results = []
    with transaction.atomic():
        existing = {
            q.name: q
            for q in Queue.objects.select_for_update().filter(
                name__in=[p.name for p, _ in validated]
            )
        }
        for policy, explicit_enabled in validated:
            values = _field_values(policy)
            queue = existing.get(policy.name)
            if queue is None:
                queue = Queue(name=policy.name, enabled=policy.enabled, **values)
                status, changed = CREATED, ()
            else:
                changed = [name for name, value in values.items() if getattr(queue, name) != value]
                for name in changed:
                    setattr(queue, name, values[name])
                changed += _apply_enabled(queue, policy, explicit_enabled)
                status = UPDATED if changed else UNCHANGED
            if status != UNCHANGED:
                try:
                    queue.full_clean()
                except ValidationError as exc:
                    # The policy checks above mirror the model's; this catches a drift between them.
                    raise QueueLoadError([f"queue {policy.name!r}: {exc}"]) from exc
                queue.save()
                audit_record(
                    actor=actor or acting_name(),
                    action="queue.created" if status == CREATED else "policy.changed",
                    target_type="queue",
                    target_id=policy.name,
                    details={"changed": {n: values.get(n, getattr(queue, n)) for n in changed}}
                    if changed
                    else {"policy": values},
                )
            results.append(QueueLoadResult(name=policy.name, status=status, changed=tuple(changed)))
        for name, status, changed in sources_save(specs, actor=actor or acting_name()):
            results.append(QueueLoadResult(name, status, changed, kind="source"))
        if rule_entries is not None:
            # After the queues: a rule may name a queue the same file makes.
            proposed, errors = rules_load(
                rule_entries, proposer=proposer, actor=actor or acting_name()
            )
            if errors:
                raise QueueLoadError(errors)
            results += [QueueLoadResult(name, status, kind="rule") for name, status in proposed]
    return results


def queue_reenable(*, queue_ids, actor):
    """R11: an administrator re-enables disabled queues. Returns how many were re-enabled."""
    with transaction.atomic():
        disabled = list(
            Queue.objects.select_for_update()
            .filter(id__in=queue_ids, enabled=False)
            .values_list("name", "disabled_reason")
        )
        count = Queue.objects.filter(id__in=queue_ids).update(
            enabled=True,
            disabled_at=None,
            disabled_reason="",
            consecutive_failures=0,
            updated_at=timezone.now(),
        )
        for name, reason in disabled:
            audit_record(
                actor=actor,
                action="queue.enabled",
                target_type="queue",
                target_id=name,
                details={"was_disabled_because": reason},
            )
    return count


PAUSE_REASON_MAX = 500


def queue_pause(*, queue, actor, reason=""):
    """An administrator stops delivery to a queue by hand (a handler being fixed, a downstream
    system in maintenance): disabled as R11 disables it, until someone re-enables it. Its
    messages wait, due, and nothing of theirs changes. False if it was already disabled."""
    said = f"paused by {actor.get_username()}"
    # The page's form and the API's serializer refuse a longer reason, naming the limit; this cut
    # only keeps another caller's from reaching the alert and the audit trail whole.
    reason = " ".join((reason or "").split())[:PAUSE_REASON_MAX]
    with transaction.atomic():
        paused = Queue.objects.filter(id=queue.id, enabled=True).update(
            enabled=False,
            disabled_at=timezone.now(),
            disabled_reason=f"{said}: {reason}" if reason else said,
            updated_at=timezone.now(),
        )
        if paused:
            audit_record(
                actor=actor,
                action="queue.paused",
                target_type="queue",
                target_id=queue.name,
                details={"reason": reason},
            )
    return bool(paused)


def queue_intake_record(*, queues, source, at):
    """Note that messages came into each of `queues` (names) by `source`, ingest's name for who
    sent them ("api:shop", "inbox:orders.jsonl", "rabbitmq:orders-dlq"), at `at`: the queues
    page says where each queue's messages come from. One statement, in the caller's
    transaction; a source whose route has no name for people is not noted."""
    route = source.split(":", 1)[0]
    if route not in INTAKE_ROUTES or not queues:
        return
    QueueIntake.objects.bulk_create(
        [QueueIntake(queue=q, route=route, first_at=at, last_at=at) for q in sorted(queues)],
        update_conflicts=True,
        unique_fields=["queue", "route"],
        update_fields=["last_at"],
    )
