"""Writing notes, and taking, handing over and releasing investigations. Each change goes to the
audit trail in the same transaction as the change itself, so neither stands without the other.

The services check the permissions again (the screens and the API check them first): a note
needs WRITE_NOTES; taking an investigation, and handing over or releasing one's own, needs
INVESTIGATE; handing over or releasing someone else's needs REASSIGN_INVESTIGATIONS too."""

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, transaction
from django.utils import timezone

from console.audit.services import audit_record
from console.ingest.models import MessageKey
from console.notes.models import (
    GROUP,
    KINDS,
    MESSAGE,
    NOTE_MAX,
    TICKET_URL_MAX,
    Investigation,
    Note,
)
from console.permissions import INVESTIGATE, REASSIGN_INVESTIGATIONS, WRITE_NOTES, needs_text
from console.readmodels.models import FailureGroup, MessageIndex

_KIND_NAMES = dict(KINDS)
_ticket_url_valid = URLValidator(schemes=["http", "https"])


def _require(actor, *perms):
    if not actor.has_perms(perms):
        raise PermissionDenied(needs_text(perms, user=actor))


def target_exists(*, kind, target_id):
    """Is there such a message (indexed, or only taken in) or failure group?"""
    if kind == MESSAGE:
        return (
            MessageIndex.objects.filter(pk=target_id).exists()
            or MessageKey.objects.filter(message_id=target_id).exists()
        )
    if kind == GROUP:
        return FailureGroup.objects.filter(fingerprint=target_id).exists()
    return False


def _require_target(kind, target_id):
    if kind not in _KIND_NAMES:
        raise ValidationError(f"a note or an investigation is on a {MESSAGE} or a {GROUP}")
    if not target_exists(kind=kind, target_id=target_id):
        raise ValidationError(f"no such {_KIND_NAMES[kind]}")


def note_text_clean(text):
    """The text as stored: line breaks made "\\n"; ValidationError if blank or too long."""
    text = (text or "").replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise ValidationError("a note needs some text")
    if len(text) > NOTE_MAX:
        raise ValidationError(
            f"a note holds at most {NOTE_MAX:,} characters; this one has {len(text):,}"
        )
    if "\x00" in text:
        raise ValidationError("a note cannot hold a NUL character")
    return text


def ticket_url_clean(url):
    """A ticket link as stored ("" for none); ValidationError unless it is an http or https URL:
    it becomes a link on the page, and javascript:, data: and the like must never be one."""
    url = (url or "").strip()
    if not url:
        return ""
    if len(url) > TICKET_URL_MAX:
        raise ValidationError(f"a ticket link holds at most {TICKET_URL_MAX} characters")
    try:
        _ticket_url_valid(url)
    except ValidationError:
        raise ValidationError("a ticket link is an http:// or https:// URL") from None
    return url


def note_add(*, actor, kind, target_id, text):
    """Add a note to a message or a failure group. Notes are a record: none is edited or
    deleted afterwards."""
    _require(actor, WRITE_NOTES)
    text = note_text_clean(text)
    _require_target(kind, target_id)
    with transaction.atomic():
        note = Note.objects.create(
            kind=kind,
            target_id=target_id,
            author=actor,
            author_name=actor.get_username(),
            text=text,
            created_at=timezone.now(),
        )
        audit_record(
            actor=actor,
            action="note.added",
            target_type=kind,
            target_id=target_id,
            details={"note": note.pk, "text": text},
        )
    return note


def investigation_take(*, actor, kind, target_id, ticket_url=""):
    """`actor` starts investigating: the target must be nobody's yet (one owner at a time; to
    take a colleague's, they or an approver hand it over)."""
    _require(actor, INVESTIGATE)
    ticket_url = ticket_url_clean(ticket_url)
    _require_target(kind, target_id)
    try:
        with transaction.atomic():
            investigation = Investigation.objects.create(
                kind=kind,
                target_id=target_id,
                owner=actor,
                since=timezone.now(),
                ticket_url=ticket_url,
            )
            audit_record(
                actor=actor,
                action="investigation.taken",
                target_type=kind,
                target_id=target_id,
                details={"owner": actor.get_username(), "ticket_url": ticket_url},
            )
    except IntegrityError:
        # Another take got there first (or it was taken long ago): say by whom.
        current = _current(kind, target_id)
        who = current.owner.get_username() if current else "someone"
        raise ValidationError(
            f"this {_KIND_NAMES[kind]} is already under investigation by {who}"
        ) from None
    return investigation


def _current(kind, target_id):
    return (
        Investigation.objects.select_related("owner").filter(kind=kind, target_id=target_id).first()
    )


def _owned(actor, kind, target_id):
    """The current investigation, if `actor` may change it: theirs, or anyone's with
    REASSIGN_INVESTIGATIONS."""
    _require(actor, INVESTIGATE)
    current = _current(kind, target_id)
    if current is None:
        raise ValidationError(f"this {_KIND_NAMES.get(kind, kind)} is not under investigation")
    if current.owner_id != actor.pk and not actor.has_perm(REASSIGN_INVESTIGATIONS):
        raise PermissionDenied(
            f"this is {current.owner.get_username()}'s investigation: only they, or an approver, "
            "may hand it over or release it"
        )
    return current


def _changed(current, **values):
    """Apply `values` to the investigation if it is still as read (same owner, since and link):
    a concurrent hand-over or release wins, and this one is refused rather than undo it."""
    won = Investigation.objects.filter(
        pk=current.pk,
        owner_id=current.owner_id,
        since=current.since,
        ticket_url=current.ticket_url,
    ).update(**values)
    if won != 1:
        raise ValidationError("the investigation changed meanwhile; look again and retry")


def investigation_hand_over(*, actor, kind, target_id, to):
    """Give the investigation to `to` (a username): an active account that may investigate."""
    with transaction.atomic():
        current = _owned(actor, kind, target_id)
        successor = (
            get_user_model().objects.filter(username=to or "", is_active=True).first()
            if isinstance(to, str)
            else None
        )
        if successor is None or not successor.has_perm(INVESTIGATE):
            raise ValidationError(f"{to!r} is not a user who may investigate")
        if successor.pk == current.owner_id:
            raise ValidationError(f"it is {successor.get_username()}'s already")
        previous = current.owner.get_username()
        _changed(current, owner=successor, since=timezone.now())
        audit_record(
            actor=actor,
            action="investigation.handed_over",
            target_type=kind,
            target_id=target_id,
            details={"from": previous, "to": successor.get_username()},
        )
    return _current(kind, target_id)


def investigation_release(*, actor, kind, target_id):
    """Nobody investigates it any more (the audit trail keeps who did, and until when)."""
    with transaction.atomic():
        current = _owned(actor, kind, target_id)
        gone, _ = Investigation.objects.filter(
            pk=current.pk, owner_id=current.owner_id, since=current.since
        ).delete()
        if gone != 1:
            raise ValidationError("the investigation changed meanwhile; look again and retry")
        audit_record(
            actor=actor,
            action="investigation.released",
            target_type=kind,
            target_id=target_id,
            details={
                "owner": current.owner.get_username(),
                "since": current.since.isoformat(),
                "ticket_url": current.ticket_url,
            },
        )


def investigation_ticket_set(*, actor, kind, target_id, ticket_url):
    """Set, change or (with "") clear the ticket link of an investigation."""
    ticket_url = ticket_url_clean(ticket_url)
    with transaction.atomic():
        current = _owned(actor, kind, target_id)
        if current.ticket_url == ticket_url:
            return current
        _changed(current, ticket_url=ticket_url)
        audit_record(
            actor=actor,
            action="investigation.ticket_changed",
            target_type=kind,
            target_id=target_id,
            details={"before": current.ticket_url, "after": ticket_url},
        )
    return _current(kind, target_id)
