"""A bulk edit's preview: its JSON Patch applied to a few of the messages it acts on, each with
the diff of its body before and after, or why the patch does not apply to it.

Shown before the request is made (the request form, `POST /api/v1/requests/preview`), on the
first messages of the scope by id; made again on the frozen set's first ids when the request
is made, and frozen into it for the approver (ActionRequest.patch_preview). A request whose
sampled result cannot be a body (it does not parse as the message's content type, or it is
too large) is refused before it exists; a message the patch does not apply to is shown with
its reason, and at execution it is counted failed and stays quarantined.

Rows hold no more of a body than the diff (its changed lines and a few around them, at most
PREVIEW_DIFF_LINES): a page shows them only to a reader who may read bodies, and records the
read."""

from django.conf import settings

from console.browse.body import body_diff
from console.browse.selectors import message_body
from console.decisions.scope import scope_queryset
from console.readmodels.models import MessageIndex
from workers.jobs.decisions.body_edits import patch_apply

PREVIEW_SIZE = 10
PREVIEW_DIFF_LINES = 200


def scope_preview_ids(scope, size=PREVIEW_SIZE):
    """The first quarantined messages of `scope` by id: those a preview before the request
    shows, as the frozen set's sample will hold them first. ScopeError for a bad scope."""
    return list(
        scope_queryset(scope).order_by("message_id").values_list("message_id", flat=True)[:size]
    )


def _diff_said(diff):
    """A BodyDiff as the request keeps it: its lines cut to PREVIEW_DIFF_LINES."""
    lines = [list(line) for line in diff.lines[:PREVIEW_DIFF_LINES]]
    return {
        "binary": diff.binary,
        "identical": diff.identical,
        "lines": lines,
        "truncated": diff.truncated or len(diff.lines) > PREVIEW_DIFF_LINES,
        "partial": diff.partial,
    }


def patch_preview(*, message_ids, patch):
    """One row per message of `message_ids` (in their order; those no longer indexed left out):
    message_id, queue, content_type, body_version, applies (a new body is made), refused (the
    result cannot be its body), reason, size_before, size_after, diff."""
    indexed = {
        row["message_id"]: row
        for row in MessageIndex.objects.filter(message_id__in=list(message_ids)).values(
            "message_id", "queue", "body_version"
        )
    }
    rows = []
    for message_id in message_ids:
        if message_id not in indexed:
            continue
        row = {**indexed[message_id], "content_type": "", "applies": False, "refused": False}
        row |= {"reason": "", "size_before": None, "size_after": None, "diff": None}
        found = message_body(message_id=message_id)
        if found is None:
            rows.append(row | {"reason": "its body is no longer in the lake"})
            continue
        body, content_type = bytes(found[0]), found[1]
        patched = patch_apply(
            body, patch, content_type=content_type, max_bytes=settings.MAX_BODY_BYTES
        )
        row |= {"content_type": content_type, "size_before": len(body)}
        if patched.body is None:
            rows.append(row | {"reason": patched.reason, "refused": patched.refused})
            continue
        diff = body_diff(body, patched.body, content_type=content_type)
        rows.append(
            row | {"applies": True, "size_after": len(patched.body), "diff": _diff_said(diff)}
        )
    return rows


def preview_refusal(rows):
    """Why a preview refuses its request: the first sampled result that cannot be its body, in
    a sentence; "" when none."""
    for row in rows:
        if row["refused"]:
            said = row["reason"]
            return f"The patch makes a body message {row['message_id']!r} cannot have: {said}"
    return ""


def preview_failing(rows):
    """How many of the preview's messages the patch does not apply to."""
    return sum(1 for row in rows if not row["applies"])
