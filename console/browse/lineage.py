"""An edited body's lineage (R13: a reprocess may carry an edited body, stored as a new version
of the message; the original is kept): each version of a message's body, who made it in which
request and when, and how it differs from the original.

Read from the lake, not from the decisions app (which this one does not import): the message's
history says when its body version changed and by which run ("request:<id>") and actor; the
version as received is in its ingest commit, and each edit in the messages commit its request
recorded ("decision:<id>:edit", console.decisions.execution). A version that only carries a
request's redrive target in its headers is no edit, and not shown."""

import logging
import re
from dataclasses import dataclass

import pyarrow.compute as pc

from console.browse.body import body_diff
from console.ingest.models import MessageKey
from console.lake.models import LakeCommit
from console.lake.services import lake

log = logging.getLogger(__name__)

_REQUEST_RUN = re.compile(r"^request:(\d+)$")
_COLUMNS = ["version", "body", "body_sha256", "body_size", "content_type"]


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


def _edited(version):
    """Is this version an edit? A reprocess with a redrive target of its own writes a version
    too, with the same body and the target in its headers (its commit is
    "decision:<id>:<chunk>:target"): not an edit of the body."""
    if version.version == 1 or version.request_id is None:
        return True
    return LakeCommit.objects.filter(
        dataset="messages", idempotency_key=f"decision:{version.request_id}:edit"
    ).exists()


def _directory(message_id, version):
    """The lake directory that holds a version of the message, or None if unknown."""
    if version.version == 1:
        key = MessageKey.objects.select_related("commit").filter(message_id=message_id).first()
        return key.commit.path if key is not None else None
    if version.request_id is None:
        return None
    return (
        LakeCommit.objects.filter(
            dataset="messages", idempotency_key=f"decision:{version.request_id}:edit"
        )
        .values_list("path", flat=True)
        .first()
    )


def _row(message_id, version, *, with_body):
    path = _directory(message_id, version)
    if path is None:
        return None
    columns = _COLUMNS if with_body else [c for c in _COLUMNS if c != "body"]
    try:
        rows = (
            lake()
            .read_arrow(
                "messages",
                [path],
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


def message_body_lineage(*, message_id, history, enqueued_at, with_bodies):
    """The versions of a message's body, oldest first, or [] when it was never edited. With
    `with_bodies` (the reader may read bodies; the caller records the read), each edit carries
    its diff against the original."""
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
        if not with_bodies:
            continue
        if version.version == 1:
            original = row
        elif original is not None:
            version.diff = body_diff(
                original["body"], row["body"], content_type=row.get("content_type") or ""
            )
    return versions
