"""What the request screens offer for editing, and show of an edit: one message's body and
headers to edit (prefilled as they are now), a bulk edit's JSON Patch from a "why do these fail"
finding, and a patch's preview, shown to a reader who may read bodies, the read recorded.

The rules of an edit are the services' (console.decisions.services, header_edits, patch_preview);
this only reads what a page puts in front of a person."""

import json

from django.core.exceptions import ValidationError

from console.browse import selectors as browse_selectors
from console.browse.services import message_body_read_record
from console.decisions.header_edits import headers_editable, headers_parse, locked_names
from console.permissions import VIEW_BODY
from console.readmodels.models import MessageIndex
from workers.jobs.decisions.body_edits import PATCH_TEXT_MAX

# A body larger than this is not put in a textarea; edit it through the API.
BODY_EDIT_MAX = 1024 * 1024
# Scopes whose request form offers a bulk edit (one message's is edited with its body).
BULK_EDIT_SCOPES = ("selection", "group", "filter")


def editable_body(user, message_id):
    """(the body as text to prefill, or None; why there is none; its content type)."""
    if not user.has_perm(VIEW_BODY):
        return None, "hidden", message_content_type(message_id)
    found = browse_selectors.message_body(message_id=message_id)
    if found is None:
        return None, "missing", message_content_type(message_id)
    data, content_type = bytes(found[0]), found[1]
    if len(data) > BODY_EDIT_MAX:
        return None, "large", content_type
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, "binary", content_type
    if "\x00" in text:
        return None, "binary", content_type  # a browser would not send a NUL back as it is
    return text, "", content_type


def message_content_type(message_id):
    """The message's content type as the index has it (no body read): an edit of a JSON
    message's body must parse even when its body is not shown."""
    row = MessageIndex.objects.filter(message_id=message_id).values_list("content_type").first()
    return row[0] if row else ""


def editable_headers(message_id, queue):
    """(the headers one may edit as JSON text to prefill, or None when the stored headers
    cannot be read; those kept as they are, [(name, value, why)])."""
    text = browse_selectors.message_headers_text(message_id=message_id)
    try:
        current = headers_parse(text)
    except ValidationError:
        return None, []
    shown = headers_editable(current, locked_names([queue]))
    return json.dumps(shown.editable, indent=2, ensure_ascii=False), shown.kept


def patch_initial(params):
    """The JSON Patch a link prefills the form with (a finding's skeleton, `?patch=`), as text;
    "" without one. Only a draft: the person reads it, previews it and sends it."""
    text = params.get("patch", "")
    return text if 0 < len(text) <= PATCH_TEXT_MAX else ""


def preview_read(*, user, rows, request=None):
    """Whether `user` is shown the preview's diffs (they hold bodies); each message's read is
    recorded when they are, as any other body read."""
    if not user.has_perm(VIEW_BODY):
        return False
    for row in rows:
        if row.get("diff"):
            message_body_read_record(
                actor=user, message_id=row["message_id"], via="bulk edit preview", request=request
            )
    return True
