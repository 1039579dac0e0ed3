"""Messages stored before ingest set aside the product's header names (R18): the same rule, once,
over what the lake already holds (migration retention 0002 runs it; it is idempotent). It lives
beside the purge, the other rewrite of committed messages.

Ingest now keeps a producer's header named in the product's namespaces (workers.engine.own_headers)
under `x-foreign-<name>`, and a request's redrive target lives in the `redrive_target` column of
the version it wrote, not in an `antidote-redrive-target` header. A stored message is brought to
the same shape:

- `antidote-redrive-target` becomes the version's `redrive_target` where the request that wrote
  the version (named by its directory, `request<id>-chunk<n>-target` or `-edit`) names exactly
  that target; anywhere else a producer wrote it, and it is set aside;
- the records a broker source writes (`antidote-source` and its kind's own headers: the AMQP
  properties, the NATS or Redis origin) are kept where the source they name is a configured
  source of that kind feeding the message's queue; every other name of the product's namespaces
  is set aside.

Each messages commit that changes is written again to a new directory and swapped in under the
same commit id (console.lake.services.lake_commits_rewrite), and the index rows that pointed at
the old directory for a body point at the new one. The old directories are deleted: run it, as
every migration, with the workers stopped.
"""

import json
import logging
import re
import shutil

import pyarrow as pa
from django.db import transaction

from console.lake.models import LakeCommit
from console.lake.services import lake, lake_commits_rewrite
from console.readmodels.deltas import read_models_body_paths_move
from workers.brokers.nats import record as nats_message
from workers.brokers.rabbitmq import record as amqp_message
from workers.brokers.redis_streams import record as redis_message
from workers.engine.own_headers import SOURCE_HEADER, foreign_name, is_product_name
from workers.lake.schema import MESSAGE_SCHEMA
from workers.lake.store import conform

log = logging.getLogger(__name__)

LEGACY_TARGET_HEADER = "antidote-redrive-target"
OWN_HEADERS_BY_KIND = {
    "rabbitmq": amqp_message.OWN_HEADERS,
    "nats": nats_message.OWN_HEADERS,
    "redis": redis_message.OWN_HEADERS,
}
# A quick look before parsing: a name of the product's namespaces, as a JSON key, in any case.
LEGACY_NAMES = re.compile(r'"(?i:antidote-|amqp-|nats-|redis-)')
# The directories a request writes versions into (console.decisions.execution).
_REQUEST_DIR = re.compile(r"(?:^|/)request(\d+)-chunk\d+-(?:target|edit)-[0-9a-f]+$")


def _request_target(path, targets):
    """The redrive target (JSON text, as the execution writes it) of the request that wrote the
    directory `path`, or None."""
    found = _REQUEST_DIR.search(path)
    return targets.get(int(found.group(1))) if found else None


def headers_cleaned(headers, *, queue, sources, request_target):
    """(headers, redrive_target) of one stored version: `headers` (a dict) with the names a
    producer wrote in the product's namespaces set aside, and the version's own target taken out
    of them (None when it has none). `sources`: {name: (kind, queue)} of the configured broker
    sources; `request_target`: the target of the request that wrote this version, or None."""
    target = headers.get(LEGACY_TARGET_HEADER)
    own_target = target if target is not None and target == request_target else None
    source = sources.get(headers.get(SOURCE_HEADER))
    kind = source[0] if source is not None and source[1] == queue else None
    own = OWN_HEADERS_BY_KIND.get(kind, frozenset())
    taken = set(headers)
    out = {}
    for name, value in headers.items():
        if name == LEGACY_TARGET_HEADER and own_target is not None:
            continue
        if not is_product_name(name) or (kind and (name == SOURCE_HEADER or name in own)):
            out[name] = value
            continue
        moved = foreign_name(name, taken)
        taken.add(moved)
        out[moved] = value
    return out, own_target


def _commit_cleaned(table, *, sources, request_target):
    """`table` (a messages commit, MESSAGE_SCHEMA) with every row's headers cleaned, or None
    when no row changes."""
    texts = table.column("headers").to_pylist()
    queues = table.column("queue").to_pylist()
    targets = table.column("redrive_target").to_pylist()
    changed = False
    for i, text in enumerate(texts):
        headers = _parsed(text)
        if not any(is_product_name(name) for name in headers):
            continue
        cleaned, target = headers_cleaned(
            headers, queue=queues[i], sources=sources, request_target=request_target
        )
        if cleaned != headers:
            texts[i] = json.dumps(cleaned)
            changed = True
        if target is not None and targets[i] is None:
            targets[i] = target
            changed = True
    if not changed:
        return None
    table = table.set_column(
        table.schema.get_field_index("headers"), "headers", pa.array(texts, pa.string())
    )
    return table.set_column(
        table.schema.get_field_index("redrive_target"),
        "redrive_target",
        pa.array(targets, pa.string()),
    )


def _parsed(text):
    try:
        headers = json.loads(text) if text else {}
    except ValueError:
        return {}
    return headers if isinstance(headers, dict) else {}


def _newest(dataset):
    return (
        LakeCommit.objects.filter(dataset=dataset, retired=False)
        .order_by("-id")
        .values_list("id", "path")
        .first()
    )


def stored_headers_set_aside(*, sources, request_targets):
    """Clean every stored messages commit (see the module's docstring). `sources`: {name: (kind,
    queue name)}; `request_targets`: {request id: target JSON text} of the requests that named
    one. Returns how many commits were rewritten."""
    store = lake()
    rewritten, body_paths, written = {}, {}, []
    commits = LakeCommit.objects.filter(dataset="messages", retired=False).order_by("id")
    try:
        for commit in commits.iterator():
            headers = store.read_arrow("messages", [commit.path], columns=["headers"])
            texts = headers.column("headers").to_pylist()
            if not any(t and LEGACY_NAMES.search(t) for t in texts):
                continue
            table = conform(store.read_arrow("messages", [commit.path]), MESSAGE_SCHEMA)
            cleaned = _commit_cleaned(
                table,
                sources=sources,
                request_target=_request_target(commit.path, request_targets),
            )
            if cleaned is None:
                continue
            new = store.write_arrow(cleaned, store.new_dir("messages", "headers-set-aside"))
            written.append(new)
            rewritten[commit.id] = (commit.path, new, cleaned.num_rows)
            body_paths[commit.path] = new
        if not rewritten:
            return 0
        with transaction.atomic():
            gone = lake_commits_rewrite(
                rewritten=rewritten,
                emptied={},
                snapshot_read=_newest("state"),
                snapshot_new=None,
                idempotency_key="headers-set-aside",
                history_read=list(
                    LakeCommit.objects.filter(dataset="history", retired=False).values_list(
                        "id", flat=True
                    )
                ),
                open_read=_newest("open"),
                open_new=None,
            )
            read_models_body_paths_move(body_paths)
    except BaseException:
        for relpath in written:
            shutil.rmtree(store.path(relpath), ignore_errors=True)
        raise
    for relpath in gone:
        shutil.rmtree(store.path(relpath), ignore_errors=True)
    log.info("set aside producers' headers in %s messages commits", len(rewritten))
    return len(rewritten)
