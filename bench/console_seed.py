"""Seed for the console benchmark: N quarantined messages over 20 queues and 50 failure groups.

Bodies (200 B to 1 MiB: most small, a few large) and each message's events are written to the
lake with pyarrow in a few commits, as ingest and delivery runs would; the read models
(MessageIndex, FailureGroup, QueueStat, QuarantineInflow) and MessageKey are written straight
into the console database in bulk: COPY on PostgreSQL, executemany on SQLite. The data is what
a refresh would have produced, without running one, so the screens can be timed on a large set
in minutes.
"""

import hashlib
import json
import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pyarrow as pa
from django.db import connection, transaction

from workers.lake.schema import EVENT_SCHEMA, MESSAGE_SCHEMA

QUEUES = 20
GROUPS = 50
COMMITS = 4
NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
DAYS = 30
MIB = 2**20
BIG_MESSAGES = 10  # bodies of exactly 1 MiB, for the detail page
SENDERS = 2_000
INSERT_BATCH = 20_000

# (exception type, masked message with <n> where the message had a number, top frame)
FAILURES = [
    ("PermanentFailure", "missing field: {field}", "validate_order"),
    ("ConnectionError", "inventory service unavailable for SKU-<n>", "reserve_stock"),
    ("TimeoutError", "ledger did not answer within <n> ms", "post_ledger"),
    ("KeyError", "'{field}'", "read_payload"),
    ("ValueError", "unknown currency: {field}", "capture_payment"),
    ("JSONDecodeError", "Expecting value: line <n> column <n> (char <n>)", "parse_body"),
    ("IntegrityError", "duplicate key value violates unique constraint {field}", "store"),
    ("PermanentFailure", "carrier {field} refused the parcel: weight <n> g", "book_shipment"),
]
FIELDS = ["customer", "sku", "currency", "address", "carrier", "payment_id", "order_id", "iban"]
STATES = [("NDLV", 0.90), ("WAIT", 0.04), ("FAIL", 0.03), ("ENDED", 0.02), ("DLVD", 0.01)]


@dataclass
class Group:
    fingerprint: str
    queue: str
    exception_type: str
    pattern: str
    frame: str
    word: str  # a word found in this group's reasons only, for the reason-text filter
    weight: float
    count: int = 0
    states: Counter = field(default_factory=Counter)
    first_seen: datetime | None = None
    last_seen: datetime | None = None
    sample: tuple | None = None  # (message_id, reason, stack)

    def reason(self, rng):
        text = self.pattern.replace("<n>", str(rng.randrange(1, 99_999)))
        if self.exception_type == "PermanentFailure":
            return f"permanent failure: {text}"
        return f"maximum failed deliveries reached: {text}"

    def stack(self, reason):
        return (
            "Traceback (most recent call last):\n"
            f'  File "/srv/shop/handlers.py", line 42, in {self.frame}\n'
            f"    raise {self.exception_type}(...)\n"
            f"{self.exception_type}: {reason}\n"
        )


def groups():
    result = []
    for g in range(GROUPS):
        exception_type, pattern, frame = FAILURES[g % len(FAILURES)]
        pattern = pattern.replace("{field}", FIELDS[g % len(FIELDS)])
        queue = f"bench.q{g % QUEUES:02d}"
        word = f"rule{chr(97 + g % 26)}{chr(97 + g // 26)}"  # no digits: masks keep it
        fingerprint = hashlib.sha256(f"{queue}|{exception_type}|{pattern}|{g}".encode())
        result.append(
            Group(
                fingerprint=fingerprint.hexdigest(),
                queue=queue,
                exception_type=exception_type,
                pattern=f"{pattern} [{word}]",
                frame=frame,
                word=word,
                weight=1 / (g + 1),  # a few large groups, a long tail of small ones
            )
        )
    return result


def body_size(rng):
    """200 B to 1 MiB: 99 % under 2 KiB, 0.9 % up to 64 KiB, 0.1 % up to 1 MiB."""
    roll = rng.random()
    if roll < 0.99:
        return rng.randrange(200, 2048)
    if roll < 0.999:
        return rng.randrange(2048, 64 * 1024)
    return rng.randrange(64 * 1024, MIB)


def body(message_id, size):
    """A JSON order of exactly `size` bytes."""
    head = f'{{"order_id":"{message_id}","customer":"c-{size % 9973}","items":['
    item = '{"sku":"SKU-00042","qty":1},'
    tail = '{"sku":"SKU-00001","qty":1}],"note":"'
    room = size - len(head) - len(tail) - 2
    items = item * max(room // len(item), 0)
    note = "x" * (room - len(items))
    data = f'{head}{items}{tail}{note}"}}'.encode()
    assert len(data) == size, (len(data), size)
    return data


def seed(n, *, lake_store, epoch):
    """Write everything; returns what the benchmark needs to find its way (see Seeded)."""
    from console.lake.services import lake_commit_record

    rng = random.Random(20261101)
    all_groups = groups()
    weights = [g.weight for g in all_groups]
    state_names = [s for s, _ in STATES]
    state_weights = [w for _, w in STATES]
    inflow = Counter()
    queue_counts = defaultdict(Counter)
    ids = [f"m{i:08d}" for i in range(n)]
    # The 1 MiB bodies the detail page is timed on, spread over the commits.
    big = {ids[i] for i in range(0, n, max(n // BIG_MESSAGES, 1))}
    bounds = [round(c * n / COMMITS) for c in range(COMMITS + 1)]
    for c in range(COMMITS):
        chunk = ids[bounds[c] : bounds[c + 1]]
        messages, events, index_rows, key_rows = [], [], [], []
        for mid in chunk:
            group = rng.choices(all_groups, weights)[0]
            state = rng.choices(state_names, state_weights)[0]
            size = MIB if mid in big else body_size(rng)
            enqueued = NOW - timedelta(seconds=rng.randrange(DAYS * 86400))
            first_failure = enqueued + timedelta(seconds=rng.randrange(1, 600))
            last_failure = first_failure + timedelta(seconds=rng.randrange(0, 7200))
            reason = group.reason(rng)
            stack = group.stack(reason)
            data = body(mid, size)
            sha = hashlib.sha256(data).hexdigest()
            sender = f"svc-{rng.randrange(SENDERS):04d}@shop.example"
            conversation = f"conv-{mid[1:]}"[:-1]  # ten messages per conversation
            attempts = rng.randrange(1, 6)
            messages.append((mid, group.queue, data, sha, size, sender, conversation, enqueued))
            events.append((mid, 0, enqueued, None, "TBDL", 0, "ingested", None, None))
            events.append((mid, 1, first_failure, "TBDL", "DLNG", attempts - 1, None, None, None))
            failed = (reason, group.exception_type, stack)
            events.append((mid, 2, last_failure, "DLNG", "NDLV", attempts, *failed))
            candidate = rng.random() < 0.05
            index_rows.append(
                dict(
                    message_id=mid,
                    queue=group.queue,
                    original_queue=group.queue,
                    state=state,
                    delivery_count=attempts,
                    candidate=candidate,
                    next_attempt_at=last_failure + timedelta(hours=1) if state == "WAIT" else None,
                    first_failure_at=first_failure,
                    last_failure_at=last_failure,
                    reason=reason,
                    exception_type=group.exception_type,
                    group_id=group.fingerprint,
                    sender=sender,
                    conversation_id=conversation,
                    body_size=size,
                    content_type="application/json",
                    body_version=1,
                    body_path=None,  # set below, once the commit's directory is known
                    enqueued_at=enqueued,
                    updated_at=last_failure,
                )
            )
            key_rows.append(dict(message_id=mid, body_sha256=sha, queue=group.queue))
            group.count += 1
            group.states[state] += 1
            group.first_seen = min(group.first_seen or first_failure, first_failure)
            group.last_seen = max(group.last_seen or last_failure, last_failure)
            if group.sample is None:
                group.sample = (mid, reason, stack)
            queue_counts[group.queue][state] += 1
            inflow[(group.queue, last_failure.replace(minute=0, second=0, microsecond=0))] += 1

        messages_path = lake_store.write_arrow(
            _messages_table(messages), lake_store.new_dir("messages", "bench")
        )
        events_path = lake_store.write_arrow(
            _events_table(events, epoch=epoch), lake_store.new_dir("events", "bench")
        )
        del messages, events
        with transaction.atomic():
            commit = lake_commit_record(
                dataset="messages",
                path=messages_path,
                row_count=len(chunk),
                idempotency_key=f"bench:messages:{c}",
            )
            lake_commit_record(
                dataset="events",
                path=events_path,
                row_count=3 * len(chunk),
                idempotency_key=f"bench:events:{c}",
                epoch=epoch,
            )
            for row in index_rows:
                row["body_path"] = messages_path
            now = datetime.now(UTC)
            for row in key_rows:
                row.update(commit_id=commit.id, ingested_at=now)
            _insert("ingest_messagekey", key_rows)
            _index_insert(index_rows)

    now = datetime.now(UTC)
    with transaction.atomic():
        _insert(
            "readmodels_failuregroup",
            [
                dict(
                    fingerprint=g.fingerprint,
                    queue=g.queue,
                    exception_type=g.exception_type,
                    pattern=g.pattern,
                    frames=g.frame,
                    sample_message_id=g.sample[0] if g.sample else "",
                    sample_reason=g.sample[1] if g.sample else "",
                    sample_stack=g.sample[2] if g.sample else "",
                    count=g.count,
                    first_seen=g.first_seen,
                    last_seen=g.last_seen,
                    states=json.dumps(dict(g.states)),
                )
                for g in all_groups
            ],
        )
        _insert(
            "readmodels_queuestat",
            [
                dict(queue=q, counts=json.dumps(dict(counts)), updated_at=now)
                for q, counts in sorted(queue_counts.items())
            ],
        )
        _insert(
            "readmodels_quarantineinflow",
            [
                dict(queue=q, hour=h, flow="quarantined", count=c)
                for (q, h), c in sorted(inflow.items())
            ],
        )
    return Seeded(
        n=n,
        groups=all_groups,
        big=sorted(big),
        senders=SENDERS,
        now=NOW,
    )


@dataclass
class Seeded:
    n: int
    groups: list
    big: list  # ids of the 1 MiB messages
    senders: int
    now: datetime


def _messages_table(rows):
    mids, queues, bodies, shas, sizes, senders, conversations, enqueued = zip(*rows, strict=True)
    k = len(mids)
    return pa.table(
        {
            "message_id": pa.array(mids, pa.string()),
            "version": pa.array([1] * k, pa.int32()),
            "queue": pa.array(queues, pa.string()),
            "body": pa.array(bodies, pa.binary()),
            "body_sha256": pa.array(shas, pa.string()),
            "body_size": pa.array(sizes, pa.int64()),
            "content_type": pa.array(["application/json"] * k, pa.string()),
            "headers": pa.array(['{"source": "bench"}'] * k, pa.string()),
            "conversation_id": pa.array(conversations, pa.string()),
            "sender": pa.array(senders, pa.string()),
            "enqueued_at": pa.array(enqueued, MESSAGE_SCHEMA.field("enqueued_at").type),
            "redrive_target": pa.nulls(k, pa.string()),
        },
        schema=MESSAGE_SCHEMA,
    )


def _events_table(rows, *, epoch):
    mids, steps, ats, froms, tos, attempts, reasons, types, stacks = zip(*rows, strict=True)
    k = len(mids)
    columns = {
        "message_id": pa.array(mids, pa.string()),
        "epoch": pa.array([0 if s == 0 else epoch for s in steps], pa.int64()),
        "step": pa.array(steps, pa.int64()),
        "at": pa.array(ats, EVENT_SCHEMA.field("at").type),
        "from_state": pa.array(froms, pa.string()),
        "to_state": pa.array(tos, pa.string()),
        "attempt": pa.array(attempts, pa.int32()),
        "delivery_count": pa.array(attempts, pa.int32()),
        "candidate": pa.array([False] * k, pa.bool_()),
        "batch_limit": pa.array([0] * k, pa.int32()),
        "body_version": pa.array([1] * k, pa.int32()),
        "actor": pa.array(["bench"] * k, pa.string()),
        "reason": pa.array(reasons, pa.string()),
        "exception_type": pa.array(types, pa.string()),
        "stack": pa.array(stacks, pa.string()),
    }
    return pa.Table.from_arrays(
        [columns.get(f.name, pa.nulls(k, f.type)) for f in EVENT_SCHEMA], schema=EVENT_SCHEMA
    )


def _index_insert(rows):
    """Index rows into the index's two tables (console.readmodels.models: MessageState holds what
    moves, with a copy of the last failure; MessageIndex the rest)."""
    from console.readmodels.models import MessageIndex, MessageState

    moving = [f.column for f in MessageState._meta.concrete_fields if f.column != "failure_at"]
    own = [f.column for f in MessageIndex._meta.local_concrete_fields]
    _insert(
        "readmodels_messagestate",
        [{**{c: r[c] for c in moving if c in r}, "failure_at": r["last_failure_at"]} for r in rows],
    )
    _insert("readmodels_messageindex", [{c: r[c] for c in own if c in r} for r in rows])


def _insert(table, rows):
    """Bulk insert of dicts (one column set): COPY on PostgreSQL, executemany on SQLite."""
    if not rows:
        return
    columns = list(rows[0])
    quote = connection.ops.quote_name
    names = ", ".join(quote(c) for c in columns)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {quote(table)} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row([row[c] for c in columns])
            return
        adapt = connection.ops.adapt_datetimefield_value
        sql = f"INSERT INTO {quote(table)} ({names}) VALUES ({', '.join(['%s'] * len(columns))})"  # noqa: S608
        for start in range(0, len(rows), INSERT_BATCH):
            cursor.executemany(
                sql,
                [
                    [adapt(v) if isinstance(v, datetime) else v for v in (r[c] for c in columns)]
                    for r in rows[start : start + INSERT_BATCH]
                ],
            )


def clear():
    """Empty the read models (the benchmark's fresh_state empties the rest)."""
    tables = [
        "readmodels_messageindex",
        "readmodels_messagestate",
        "readmodels_failuregroup",
        "readmodels_queuestat",
        "readmodels_quarantineinflow",
        "ingest_messagekey",
    ]
    with connection.cursor() as cursor:
        for table in tables:
            if connection.vendor == "postgresql":
                cursor.execute(f"TRUNCATE {connection.ops.quote_name(table)}")
            else:
                cursor.execute(f"DELETE FROM {connection.ops.quote_name(table)}")  # noqa: S608


def analyze():
    """What PostgreSQL's autovacuum does after a bulk load, long before anyone browses a million
    rows: planner statistics, and the visibility map without which no index-only scan skips the
    table (bench_decisions does the same). A first page took 63 ms without it, 37 ms with it."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")


def seed_fresh(name, n):
    """A benchmark's fresh state (bench.support fresh_state `name`) holding the seed: N messages
    in QUEUES queues, the read models analyzed as autovacuum would have. Returns the Seeded."""
    from bench.support import fresh_state
    from console.lake.services import epoch_allocate, lake
    from console.queues.models import Queue

    fresh_state(name)
    clear()
    for q in range(QUEUES):
        Queue.objects.create(name=f"bench.q{q:02d}", handler="workers.demo.handlers.noop")
    seeded = seed(n, lake_store=lake(), epoch=epoch_allocate(purpose="bench"))
    analyze()
    return seeded


def operator_user():
    """The signed-in operator the benchmarks request pages as."""
    from django.contrib.auth.models import Group, User

    from console.accounts.roles import OPERATOR, roles_seed

    roles_seed()
    user, _ = User.objects.get_or_create(username="bench-operator")
    user.groups.set([Group.objects.get(name=OPERATOR)])
    return user
