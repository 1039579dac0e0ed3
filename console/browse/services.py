"""Reading a message's body, recorded in the audit trail: bodies can hold personal data, and who
read which one is for the auditors. The message itself is not touched (R12). And a person's
saved filters of the message list."""

from django.core.exceptions import ValidationError

from console.audit.services import audit_record
from console.browse import selectors
from console.browse.models import SavedFilter


def message_body_read(*, actor, message_id, via):
    """(body bytes, content type) of a message's current body for `actor` to read, the read
    recorded; None, and nothing recorded, if the message or its body is unknown."""
    found = selectors.message_body(message_id=message_id)
    if found is not None:
        message_body_read_record(actor=actor, message_id=message_id, via=via)
    return found


def message_body_read_record(*, actor, message_id, via, request=None):
    """Record that `actor` was shown a body read another way: the detail page reads it with the
    rest of the message, the request form only shows a body it can edit, and with `request`
    (an action request) the body is the edited one the request carries.

    `via` says where: "page", "raw", "api", "request form", "request", "copy" (the send form's
    copy of a message)."""
    details = {"via": via}
    if request is not None:
        details.update(request=request.id, edited=True)
    audit_record(
        actor=actor,
        action="message.body_viewed",
        target_type="message",
        target_id=message_id,
        details=details,
    )


# A person's saved filters: enough for every view they use, few enough to show as one line.
SAVED_FILTERS_MAX = 50


def saved_filter_save(*, owner, name, query):
    """Save the message list's `query` (its own GET parameters, checked) under `name`; a filter
    of the same name is replaced. ValidationError past SAVED_FILTERS_MAX."""
    name = " ".join(name.split())
    if not name:
        raise ValidationError("give the filter a name")
    existing = SavedFilter.objects.filter(owner=owner)
    if not existing.filter(name=name).exists() and existing.count() >= SAVED_FILTERS_MAX:
        raise ValidationError(
            f"you have {SAVED_FILTERS_MAX} saved filters: delete one to save another"
        )
    saved, _ = SavedFilter.objects.update_or_create(
        owner=owner, name=name, defaults={"query": query}
    )
    return saved


def saved_filter_delete(*, owner, filter_id):
    """Delete `owner`'s saved filter; False if they have none of that id."""
    deleted, _ = SavedFilter.objects.filter(owner=owner, id=filter_id).delete()
    return bool(deleted)
