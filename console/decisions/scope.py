"""Scopes of action requests, and freezing one into an exact, hashed id set.

Whatever the scope (one message, a selection, a failure group, a browser filter), what a request
acts on is fixed when it is created: the sorted ids of the quarantined messages it matched then,
written to the lake, with their count, SHA-256, breakdown and a sample. An approver approves that
set, and execution acts on that set and nothing else."""

import hashlib
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq
from django.db.models import Count

from console.browse.models import MessageIndex
from console.browse.selectors import message_queryset
from console.lake.services import lake
from workers.engine.states import NDLV

SCOPE_KINDS = ("message", "selection", "group", "filter")
MAX_SELECTION = 10_000
SAMPLE_SIZE = 20
IDS_SCHEMA = pa.schema([("message_id", pa.string())])
_WRITE_CHUNK = 50_000


class ScopeError(ValueError):
    """A scope that cannot be understood; the message says why."""


@dataclass(frozen=True)
class FrozenScope:
    ids_path: str
    ids_sha256: str
    count: int
    breakdown: dict
    sample: list


def scope_queryset(scope):
    """The quarantined messages a scope names, from the message index."""
    if not isinstance(scope, dict) or scope.get("kind") not in SCOPE_KINDS:
        raise ScopeError(f"a scope has a kind, one of {', '.join(SCOPE_KINDS)}")
    kind = scope["kind"]
    qs = MessageIndex.objects.filter(state=NDLV)
    if kind == "message":
        if not isinstance(scope.get("id"), str) or not scope["id"]:
            raise ScopeError("a message scope names the message: {'kind': 'message', 'id': ...}")
        return qs.filter(message_id=scope["id"])
    if kind == "selection":
        ids = scope.get("ids")
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
            raise ScopeError(
                "a selection scope lists message ids: {'kind': 'selection', 'ids': [...]}"
            )
        if len(ids) > MAX_SELECTION:
            raise ScopeError(
                f"a selection holds at most {MAX_SELECTION} ids; scope by filter instead"
            )
        return qs.filter(message_id__in=sorted(set(ids)))
    if kind == "group":
        if not isinstance(scope.get("group"), str) or not scope["group"]:
            raise ScopeError("a group scope names the group: {'kind': 'group', 'group': ...}")
        return qs.filter(group_id=scope["group"])
    filters = scope.get("filters")
    if not isinstance(filters, dict):
        raise ScopeError(
            "a filter scope carries the browser's filters: {'kind': 'filter', 'filters': {...}}"
        )
    return message_queryset(filters=filters).filter(state=NDLV)


def ids_digest(ids):
    """SHA-256 of the sorted ids, one per line: what an approver and an auditor can recompute."""
    digest = hashlib.sha256()
    for message_id in ids:
        digest.update(message_id.encode())
        digest.update(b"\n")
    return digest.hexdigest()


def scope_freeze(scope):
    """Freeze a scope: stream the matching ids in order into a lake file, hashing as it goes."""
    qs = scope_queryset(scope)
    store = lake()
    relpath = f"{store.new_dir('requests', 'scope')}/ids.parquet"
    target = store.root / relpath
    target.parent.mkdir(parents=True, exist_ok=False)
    digest = hashlib.sha256()
    count = 0
    chunk = []
    with pq.ParquetWriter(target, IDS_SCHEMA, compression="zstd") as writer:
        for message_id in (
            qs.order_by("message_id").values_list("message_id", flat=True).iterator(chunk_size=5000)
        ):
            digest.update(message_id.encode())
            digest.update(b"\n")
            chunk.append(message_id)
            count += 1
            if len(chunk) >= _WRITE_CHUNK:
                writer.write_table(pa.table({"message_id": chunk}, schema=IDS_SCHEMA))
                chunk = []
        if chunk:
            writer.write_table(pa.table({"message_id": chunk}, schema=IDS_SCHEMA))
    if count == 0:
        target.unlink()
        target.parent.rmdir()
        raise ScopeError("no quarantined message matches this scope")
    frozen = qs.order_by("message_id")
    breakdown = {
        "queues": dict(frozen.order_by().values_list("queue").annotate(n=Count("message_id"))),
        "groups": dict(frozen.order_by().values_list("group_id").annotate(n=Count("message_id"))),
    }
    sample = list(frozen.values("message_id", "queue", "reason", "last_failure_at")[:SAMPLE_SIZE])
    for row in sample:
        row["last_failure_at"] = row["last_failure_at"] and row["last_failure_at"].isoformat()
    return FrozenScope(
        ids_path=relpath,
        ids_sha256=digest.hexdigest(),
        count=count,
        breakdown=breakdown,
        sample=sample,
    )


def frozen_ids(path, *, batch_size=10_000):
    """The frozen ids, in order, a batch at a time."""
    for batch in pq.ParquetFile(lake().path(path)).iter_batches(batch_size=batch_size):
        yield batch.column(0).to_pylist()


def frozen_intact(request):
    """True when the request's id file still hashes to what was approved."""
    digest = hashlib.sha256()
    for ids in frozen_ids(request.ids_path):
        for message_id in ids:
            digest.update(message_id.encode())
            digest.update(b"\n")
    return digest.hexdigest() == request.ids_sha256
