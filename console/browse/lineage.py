"""An edited message's lineage (R13: a reprocess may carry an edited body and headers, or a bulk
edit's JSON Patch, stored as a new version of the message; the original is kept): each version
of a message's body, who made it in which request and when, how its body differs from the
original, and which headers it changed.

Read from the lake, not from the decisions app (which this one does not import): the message's
history says when its body version changed and by which run ("request:<id>") and actor; the
version as received is in its ingest commit, and each edit in a messages commit its request
recorded, "decision:<id>:<chunk>:edit" (console.decisions.chunks; before bulk edits, one
message's "decision:<id>:edit"). A version that only carries a request's redrive target is no
edit, and not shown."""

import json
import logging
import re
from dataclasses import dataclass, field

import pyarrow.compute as pc
from django.db.models import Q

from console.browse.body import body_diff
from console.browse.headers import header_changes
from console.ingest.models import MessageKey
from console.lake.models import LakeCommit
from console.lake.services import lake

log = logging.getLogger(__name__)

_REQUEST_RUN = re.compile(r"^request:(\d+)$")
_COLUMNS = ["version", "body", "body_sha256", "body_size", "content_type", "headers"]


@dataclass
class BodyVersion:
    version: int
    at: object  # when it became the message's body (the original: when it was enqueued)
    actor: str  # who asked for the edit ("" for the original)
    request_id: int | None  # the action request that made it
    reason: str  # the decision's reason as the ledger has it (who approved, the comment)
    size: int | None = None
    sha256: str = ""
    found: bool = False  # its row is in the lake
    diff: object = None  # BodyDiff against the original, when bodies may be read
    # Its headers' changes against the original: [(added|removed|changed, name, before, after)].
    header_changes: list = field(default_factory=list)


def _versions_from_history(history, enqueued_at):
    """The versions the history shows, in order: version 1, then each event that raised the
    body version (a reprocess with an edited body)."""
    versions = [BodyVersion(version=1, at=enqueued_at, actor="", request_id=None, reason="")]
    for event in history:
        version = event.get("body_version") or 1
        if version <= versions[-1].version:
            continue
        match = _REQUEST_RUN.match(event.get("run_id") or "")
        versions.append(
            BodyVersion(
                version=version,
                at=event.get("at"),
                actor=event.get("actor") or "",
                request_id=int(match.group(1)) if match else None,
                reason=event.get("reason") or "",
            )
        )
    return versions


def _edit_commits(request_id):
    """The messages commits of a request's edits, by their keys."""
    prefix = f"decision:{request_id}:"
    return LakeCommit.objects.filter(dataset="messages").filter(
        Q(idempotency_key=f"{prefix}edit")
        | Q(idempotency_key__startswith=prefix, idempotency_key__endswith=":edit")
    )


def _edited(version):
    """Is this version an edit? A reprocess with a redrive target of its own writes a version
    too, with the same body and the target beside it (its commit is
    "decision:<id>:<chunk>:target"): not an edit."""
    if version.version == 1 or version.request_id is None:
        return True
    return _edit_commits(version.request_id).exists()


def _directories(message_id, version):
    """The lake directories that may hold a version of the message ([] if none is known): its
    ingest commit for the original, its request's edit commits (a bulk edit's chunks) else."""
    if version.version == 1:
        key = MessageKey.objects.select_related("commit").filter(message_id=message_id).first()
        return [key.commit.path] if key is not None else []
    if version.request_id is None:
        return []
    return list(_edit_commits(version.request_id).order_by("id").values_list("path", flat=True))


def _row(message_id, version, *, with_body):
    paths = _directories(message_id, version)
    if not paths:
        return None
    columns = _COLUMNS if with_body else [c for c in _COLUMNS if c != "body"]
    try:
        rows = (
            lake()
            .read_arrow(
                "messages",
                paths,
                columns=columns,
                filter=(pc.field("message_id") == message_id)
                & (pc.field("version") == version.version),
            )
            .to_pylist()
        )
    except FileNotFoundError:
        log.warning(
            "message %r: body version %s is not in the lake",
            message_id,
            version.version,
            extra={"message_id": message_id},
        )
        return None
    return rows[0] if rows else None


def _headers(row):
    try:
        headers = json.loads(row.get("headers") or "{}")
    except (ValueError, RecursionError):
        return {}
    return headers if isinstance(headers, dict) else {}


def message_body_lineage(*, message_id, history, enqueued_at, with_bodies):
    """The versions of a message's body, oldest first, or [] when it was never edited. Each edit
    carries its headers' changes against the original, and with `with_bodies` (the reader may
    read bodies; the caller records the read) its body's diff against it."""
    versions = [v for v in _versions_from_history(history, enqueued_at) if _edited(v)]
    if len(versions) == 1:
        return []
    original = None
    for version in versions:
        row = _row(message_id, version, with_body=with_bodies)
        if row is None:
            continue
        version.found = True
        version.size = row["body_size"]
        version.sha256 = row["body_sha256"] or ""
        if version.version == 1:
            original = row
            continue
        if original is None:
            continue
        version.header_changes = header_changes(_headers(original), _headers(row))
        if with_bodies:
            version.diff = body_diff(
                original["body"], row["body"], content_type=row.get("content_type") or ""
            )
    return versions
