"""Scopes of action requests, and freezing one into an exact, hashed id set.

Whatever the scope (one message, a selection, a failure group, a browser filter, the result of a
lake query), what a request acts on is fixed when it is created: the sorted ids of the quarantined
messages it matched then, written to the lake, with their count, SHA-256, breakdown and a sample.
An approver approves that set, and execution acts on that set and nothing else."""

import hashlib
from collections import Counter
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq
from django.core.exceptions import PermissionDenied

from console.browse.selectors import message_queryset
from console.decisions import standing
from console.lake.services import lake
from console.readmodels.models import MessageIndex
from workers.engine.states import NDLV

SCOPE_KINDS = ("message", "selection", "group", "filter", "lake_query", "failed_again")
MAX_SELECTION = 10_000
SAMPLE_SIZE = 20
IDS_SCHEMA = pa.schema([("message_id", pa.string())])
_WRITE_CHUNK = 50_000
# A lake query's result ids are checked against the index this many at a time.
LAKE_QUERY_BATCH = 5000


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
    if kind == "lake_query":
        raise ScopeError("a lake query's scope is its result file, not an index query")
    if kind == "failed_again":
        raise ScopeError("a failed-again scope is an earlier request's outcome, not an index query")
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


def ids_hash(digest, ids):
    """Feed ids to a SHA-256 the way a frozen set is hashed: each id and a newline."""
    digest.update("".join(f"{message_id}\n" for message_id in ids).encode())


def ids_digest(ids):
    """SHA-256 of the sorted ids, one per line: what an approver and an auditor can recompute."""
    digest = hashlib.sha256()
    ids_hash(digest, ids)
    return digest.hexdigest()


def _lake_query_rows(scope, actor):
    """(id, queue, group) of a finished lake query's result that are quarantined now, in id
    order: the result is streamed a batch at a time and each batch checked against the index."""
    from console.lakequery.models import LakeQuery
    from console.lakequery.permissions import may_see
    from console.lakequery.selectors import lake_query_get, lake_query_result_ids

    query_id = scope.get("query")
    if isinstance(query_id, str) and query_id.isdigit():
        query_id = int(query_id)
    if not isinstance(query_id, int) or isinstance(query_id, bool):
        raise ScopeError("a lake query scope names the query: {'kind': 'lake_query', 'query': 1}")
    query = lake_query_get(query_id=query_id)
    if query is None:
        raise ScopeError(f"there is no lake query {query_id}")
    if actor is not None and not may_see(actor, query):
        raise PermissionDenied(f"you may not see lake query {query_id}")
    if query.status != LakeQuery.DONE:
        raise ScopeError(
            f"lake query {query_id} is {query.status}: only a finished query's result is a scope"
        )

    def rows():
        for ids in lake_query_result_ids(query=query, batch_size=LAKE_QUERY_BATCH):
            quarantined = {
                message_id: (queue, group)
                for message_id, queue, group in MessageIndex.objects.filter(
                    state=NDLV, message_id__in=ids
                ).values_list("message_id", "queue", "group_id")
            }
            # In the result's order (sorted by Spark, by code point), not the database's
            # collation.
            for message_id in ids:
                if message_id in quarantined:
                    yield (message_id, *quarantined[message_id])

    return rows()


def _failed_again_rows(scope, actor):
    """(id, queue, group) of the messages an earlier request decided that are quarantined again
    now, in that request's frozen order (console.decisions.outcome)."""
    from console.decisions.models import ActionRequest
    from console.decisions.outcome import failed_again_quarantined, outcome_available
    from console.permissions import VIEW_REQUESTS

    request_id = scope.get("request")
    if isinstance(request_id, str) and request_id.isdigit():
        request_id = int(request_id)
    if not isinstance(request_id, int) or isinstance(request_id, bool):
        raise ScopeError(
            "a failed-again scope names the request: {'kind': 'failed_again', 'request': 1}"
        )
    if actor is not None and not actor.has_perm(VIEW_REQUESTS):
        raise PermissionDenied("you may not see action requests")
    earlier = ActionRequest.objects.filter(id=request_id).first()
    if earlier is None:
        raise ScopeError(f"there is no request {request_id}")
    if not outcome_available(earlier):
        raise ScopeError(f"request {request_id} has decided nothing yet")
    return failed_again_quarantined(request=earlier)


def scope_freeze(scope, *, actor=None):
    """Freeze a scope: stream the matching ids in order into a lake file, hashing and counting
    the breakdown as it goes, so the breakdown and sample describe exactly the ids frozen.

    `actor`, when given, must be allowed to see what the scope names (a lake query)."""
    if isinstance(scope, dict) and scope.get("kind") == "lake_query":
        rows = _lake_query_rows(scope, actor)
    elif isinstance(scope, dict) and scope.get("kind") == "failed_again":
        rows = _failed_again_rows(scope, actor)
    elif isinstance(scope, dict) and scope.get("kind") == standing.STANDING_RULE:
        # What a standing rule matched (console.rules): never a person's scope (SCOPE_KINDS).
        rows = standing.scope_rows(scope)
    else:
        rows = (
            scope_queryset(scope)
            .order_by("message_id")
            .values_list("message_id", "queue", "group_id")
            .iterator(chunk_size=5000)
        )
    store = lake()
    relpath = f"{store.new_dir('requests', 'scope')}/ids.parquet"
    target = store.root / relpath
    target.parent.mkdir(parents=True, exist_ok=False)
    digest = hashlib.sha256()
    count = 0
    chunk = []
    queues, groups = Counter(), Counter()
    first = []
    with pq.ParquetWriter(target, IDS_SCHEMA, compression="zstd") as writer:
        for message_id, queue, group in rows:
            chunk.append(message_id)
            count += 1
            queues[queue] += 1
            groups[group] += 1
            if len(first) < SAMPLE_SIZE:
                first.append(message_id)
            if len(chunk) >= _WRITE_CHUNK:
                ids_hash(digest, chunk)
                writer.write_table(pa.table({"message_id": chunk}, schema=IDS_SCHEMA))
                chunk = []
        if chunk:
            ids_hash(digest, chunk)
            writer.write_table(pa.table({"message_id": chunk}, schema=IDS_SCHEMA))
    if count == 0:
        target.unlink()
        target.parent.rmdir()
        raise ScopeError("no quarantined message matches this scope")
    breakdown = {"queues": dict(queues), "groups": dict(groups)}
    sample = list(
        MessageIndex.objects.filter(message_id__in=first)
        .order_by("message_id")
        .values("message_id", "queue", "reason", "last_failure_at")
    )
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
        ids_hash(digest, ids)
    return digest.hexdigest() == request.ids_sha256
