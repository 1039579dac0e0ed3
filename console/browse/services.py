"""Reading a message's body, recorded in the audit trail: bodies can hold personal data, and who
read which one is for the auditors. The message itself is not touched (R12)."""

from console.audit.services import audit_record
from console.browse import selectors


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

    `via` says where: "page", "raw", "api", "request form", "request"."""
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
