"""Messages a person sends in by hand (R19): only into the queues two administrators let them
send into (console.access.IngestRight), each call in the audit trail (who, which queues, how
many, which ids), and their TBDL events naming their source "person:<name>" ("api:<name>" is a
service account's). The API (console.ingest.apis) and the console's send form
(console.ingest.views) both send through `messages_send_by_hand`; the message page
(console.browse) reads the source back to say who sent it."""

import hashlib

from django.core.exceptions import PermissionDenied

from console.access.selectors import ingest_queue_names
from console.audit.services import audit_record
from console.ingest.models import MessageKey
from console.ingest.services import messages_ingest

PERSON_SOURCE = "person:"
# The ids a person's call sent in, listed in its audit entry up to this many (all are hashed).
AUDIT_IDS_LISTED = 100
BY_HAND_ONLY = (
    "a person sends messages in only into a queue an administrator let them send into by hand "
    "(asked on the role grants page, confirmed by a second administrator); an application "
    "sends with its service account's token"
)


def person_source(username):
    return f"{PERSON_SOURCE}{username}"


def sent_by_person(history):
    """(who, when) of the person who sent this message in by hand, from its history (oldest
    event first); None when an application, a file or a broker sent it."""
    for event in history:
        if event.get("from_state") is None and (event.get("actor") or "").startswith(PERSON_SOURCE):
            return event["actor"].removeprefix(PERSON_SOURCE), event.get("at")
    return None


def messages_send_by_hand(*, actor, records, copied_from=None):
    """Send `records` in as `actor`, a person: PermissionDenied (saying which) when one names a
    queue they may not send into; otherwise ingest them as the API does and record the call
    (with the message they copied, when the console's copy made them). Returns the
    IngestResult."""
    allowed = ingest_queue_names(actor)
    if refusal := _queues_refusal(records, allowed):
        raise PermissionDenied(refusal)
    result = messages_ingest(
        records=records, source=person_source(actor.get_username()), errors_kept=None
    )
    _by_hand_record(actor, records, result, copied_from=copied_from)
    return result


def _queues_refusal(records, allowed):
    """Why a person may not send these records: the queues they name that are not `allowed`.
    A record without a queue's name is left to ingest, which refuses it."""
    named = {r["queue"] for r in records if type(r) is dict and type(r.get("queue")) is str}
    if not allowed:
        return BY_HAND_ONLY
    if denied := sorted(named - allowed):
        return (
            f"you send by hand into {', '.join(sorted(allowed))} only, not into "
            f"{', '.join(map(repr, denied))}: {BY_HAND_ONLY}"
        )
    return None


def _by_hand_record(user, records, result, *, copied_from=None):
    """One audit entry for a person's call: who, into which queues, how many were accepted,
    duplicates or refused, and which ids were accepted (listed up to AUDIT_IDS_LISTED, hashed
    all: SHA-256 of the sorted ids, one a line, as a purge record hashes its ids)."""
    accepted = {}
    for message_id, queue in MessageKey.objects.filter(commit_id__in=result.commits).values_list(
        "message_id", "queue"
    ):
        accepted.setdefault(queue, []).append(message_id)
    named = sorted({r["queue"] for r in records if type(r) is dict and type(r.get("queue")) is str})
    queues = {}
    for queue in named:
        ids = sorted(accepted.get(queue, []))
        queues[queue] = {
            "accepted": len(ids),
            "ids": ids[:AUDIT_IDS_LISTED],
            "ids_sha256": hashlib.sha256("\n".join(ids).encode()).hexdigest(),
        }
    audit_record(
        actor=user,
        action="messages.sent_by_hand",
        target_type="queue",
        target_id=", ".join(named),
        details={
            "queues": queues,
            "accepted": result.accepted,
            "duplicates": result.duplicates,
            "refused": result.refused,
            **({"copied_from": copied_from} if copied_from else {}),
        },
    )
