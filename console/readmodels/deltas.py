"""Read models kept in step by a writer that knows exactly what it changed: an administrator's
decision moves each message of a chunk from one state (and queue) to another, and nothing else
about it, so its rows, its failure groups' counts and its queues' counts are updated in the
chunk's own transaction. The console shows a bulk decision as it goes, and the Spark refresh has
no need to fold those commits again (console.lake's `views_applied`).

The rows come out as the refresh would make them from the same events (a test holds them to it).
A chunk's ids are staged once in a temporary table, then each change is one statement.
"""

import contextlib
import dataclasses
import io
import json
import logging
import time
from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
from django.db import IntegrityError, connection, transaction
from django.db.models import F

from console import leases
from console.readmodels.counts import (
    by_key,
    counts_moved,
    group_recount_sql,
    group_totals,
    queue_counts_move,
)
from console.readmodels.models import (
    FailureGroup,
    FlowPurged,
    MessageIndex,
    MessageState,
    QuarantineInflow,
    RefreshRun,
)
from console.readmodels.signals import counts_drifted
from console.sql import in_values, joins_by_key

log = logging.getLogger(__name__)

STAGED = "decided_messages"


def _q(name):
    return connection.ops.quote_name(name)


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where a chunk's messages count in the index: (message_id, group_id, queue), read by
    `index_placement` as of the newest committed refresh `refreshed_upto`."""

    rows: pa.Table
    refreshed_upto: int


def index_placement(message_ids):
    """The failure group and queue of each of `message_ids` the index holds. Read beside the
    chunk's commit (by the thread that prepares the next chunk), so that the commit's own
    statements touch the narrow state rows only and not the wide ones. Only a refresh moves a
    row to another group or queue (a decision to another queue moves its own chunk's): a commit
    that finds one committed since (`refreshed_upto`) reads them again, under the lake commit
    lock that a refresh's load takes too."""
    refreshed_upto = _refreshed_upto()
    rows = _index_read(message_ids, PLACEMENT_SCHEMA)
    return Placement(rows, refreshed_upto)


def index_members(message_ids):
    """(rows, placement) of `message_ids`: what the index holds of each (INDEX_MEMBER_SCHEMA: its
    state, queue, body version, delivery count and candidate flag, as the refresh folded them
    or a decision set them), and where each counts (`index_placement`), from one read by key.
    A reprocess plans from these rows (console.decisions.execution)."""
    refreshed_upto = _refreshed_upto()
    rows = _index_read(message_ids, INDEX_MEMBER_SCHEMA)
    return rows, Placement(rows.select(PLACEMENT_SCHEMA.names), refreshed_upto)


def _index_read(message_ids, schema):
    """`schema`'s columns (each of MessageIndex's own or of MessageState's, by its name) of the
    index rows of `message_ids`, as an arrow table, in batches of PLACEMENT_BATCH ids."""
    index, states = _q(MessageIndex._meta.db_table), _q(MessageState._meta.db_table)
    own = {f.column for f in MessageIndex._meta.local_concrete_fields}
    mid = _q("message_id")
    columns = ", ".join(f"{'i' if name in own else 's'}.{_q(name)}" for name in schema.names)
    join = f" CROSS JOIN {states} s" if any(name not in own for name in schema.names[1:]) else ""
    on = f" AND s.{mid} = i.{mid}" if join else ""
    found = {name: [] for name in schema.names}
    ids = list(message_ids)
    # Read beside a chunk's commit: joins_by_key opens no transaction on SQLite, where one
    # would wait for that commit (it did: 0.42 s against 0.10 s for 25,000 rows).
    with connection.cursor() as cursor, joins_by_key(cursor):
        for start in range(0, len(ids), PLACEMENT_BATCH):
            where, params = in_values(f"i.{mid}", ids[start : start + PLACEMENT_BATCH])
            # The ids drive the join (CROSS JOIN fixes SQLite's order; joins_by_key PostgreSQL's):
            # each finds its rows by primary key.
            cursor.execute(f"SELECT {columns} FROM {index} i{join} WHERE {where}{on}", params)  # noqa: S608
            for row in cursor.fetchall():
                for name, value in zip(schema.names, row, strict=True):
                    found[name].append(value)
    return pa.table(found, schema=schema)


def placement_current(placement, message_ids):
    """`placement`, or read again when a refresh committed since it was read."""
    if placement is not None and placement.refreshed_upto == _refreshed_upto():
        return placement
    return index_placement(message_ids)


def _refreshed_upto():
    return (
        RefreshRun.objects.filter(status=RefreshRun.COMMITTED)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
        or 0
    )


PLACEMENT_BATCH = 10_000
PLACEMENT_SCHEMA = pa.schema(
    [("message_id", pa.string()), ("group_id", pa.string()), ("queue", pa.string())]
)
# What the index holds of a message that a reprocess's decision event starts from, named as the
# index's columns; the chunk makes its plan rows of them (workers.jobs.decisions).
INDEX_MEMBER_SCHEMA = pa.schema(
    [
        *PLACEMENT_SCHEMA,
        ("state", pa.string()),
        ("body_version", pa.int32()),
        ("delivery_count", pa.int32()),
        ("candidate", pa.bool_()),
    ]
)
STAGED_COLUMNS = ["message_id", "to_state", "group_id", "queue"]


def _rows_insert(cursor, table, rows):
    """Insert an arrow table's rows into the columns of the same names: COPY on PostgreSQL; on
    SQLite one statement with the rows as one JSON parameter, which SQLite unpacks in C, several
    times faster than an executemany of 10,000 inserts."""
    names = ", ".join(rows.column_names)
    if connection.vendor == "postgresql":
        buffer = io.BytesIO()
        pacsv.write_csv(rows, buffer, pacsv.WriteOptions(include_header=False))
        with cursor.copy(f"COPY {table} ({names}) FROM STDIN (FORMAT csv)") as copy:
            copy.write(buffer.getvalue())
        return
    values = ", ".join(f"json_extract(value, '$[{i}]')" for i in range(rows.num_columns))
    cursor.execute(
        f"INSERT INTO {table} ({names}) SELECT {values} FROM json_each(%s)",  # noqa: S608
        [json.dumps(list(zip(*rows.to_pydict().values(), strict=True)))],
    )


@contextlib.contextmanager
def decided_staged(decided, placement=None):
    """Stage a chunk's messages in a temporary table for the duration, each with its target
    state and where it counts in the index (`placement`, read here when not given: see
    `index_placement`); yields its name. COPY on PostgreSQL, one JSON parameter on SQLite."""
    placement = placement_current(placement, decided.column("message_id").to_pylist())
    rows = decided.select(["message_id", "to_state"]).join(
        placement.rows, keys="message_id", join_type="left outer"
    )
    rows = rows.select(STAGED_COLUMNS)
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {STAGED}")
        cursor.execute(
            f"CREATE TEMPORARY TABLE {STAGED} (message_id varchar(200) PRIMARY KEY, "
            "to_state varchar(8), group_id varchar(64), queue varchar(100))"
        )
        # No ANALYZE (16 ms a chunk): every join on these rows runs under joins_by_key, as
        # nested loops by key whatever the planner would guess of their number.
        _rows_insert(cursor, STAGED, rows)
        try:
            yield STAGED
        finally:
            cursor.execute(f"DROP TABLE IF EXISTS {STAGED}")


def read_models_apply(*, decided, staged, at, reset=False, target_queue=""):
    """`decided`: a table (message_id, to_state, ...) of one chunk, staged by
    `decided_staged`. `reset`: a reprocess (R13: count reset, candidate cleared). Call inside the
    chunk's transaction; new versions of the messages (an edit, a redrive target) are
    `index_bodies_move`'s."""
    states = _q(MessageState._meta.db_table)
    mid, state = _q("message_id"), _q("state")
    with connection.cursor() as cursor, joins_by_key(cursor):
        # The chunk's rows drive the join, each finding its rows by primary key: SQLite would
        # otherwise scan the whole index table (CROSS JOIN fixes its join order; on PostgreSQL,
        # joins_by_key).
        # What the rows count in now, by group and by queue: the counts move from there. The
        # queue counts too are moved from the index's rows, not from the lake's state the plan
        # read: the index may not have folded a message's latest events yet, and every writer
        # (a refresh too) must move them from what they hold. Group and queue were staged with
        # the ids (index_placement): only the narrow state rows are read here.
        cursor.execute(
            f"SELECT d.group_id, d.queue, s.{state}, d.to_state, COUNT(*) FROM {staged} d "  # noqa: S608
            f"CROSS JOIN {states} s WHERE s.{mid} = d.message_id "
            f"GROUP BY d.group_id, d.queue, s.{state}, d.to_state"
        )
        groups, queues = Counter(), Counter()
        moved_to = target_queue if reset and target_queue else None
        for group_id, from_queue, old, new, n in cursor.fetchall():
            if group_id:
                groups[(group_id, old)] -= n
                groups[(group_id, new)] += n
            queues[(from_queue, old)] -= n
            queues[(moved_to or from_queue, new)] += n
        for to_state in sorted(pc.unique(decided.column("to_state")).to_pylist()):
            changes = {"state": to_state, "next_attempt_at": None, "updated_at": at}
            if reset:
                changes |= {"delivery_count": 0, "candidate": False}
            chosen = f"SELECT message_id FROM {staged} WHERE to_state = %s"  # noqa: S608
            _rows_update(cursor, changes, chosen, [to_state])
        # Only a reprocess to another queue touches the wide table: a plain move updates
        # MessageState's narrow rows alone.
        if reset and target_queue:
            _rows_update(cursor, {"queue": target_queue}, f"SELECT message_id FROM {staged}", [])  # noqa: S608
    _groups_move(groups)
    queue_counts_move(queues)


BODIES = "new_body_versions"


def index_bodies_move(versions, directory):
    """The index follows messages to their new versions, written in the lake directory
    `directory` (an edit's, a redrive target's): `versions` (message_id, version, body_size), one
    row a message. The browser reads each body where its row says. Staged in a temporary table
    (COPY on PostgreSQL, one JSON parameter on SQLite), then one UPDATE. Call inside the chunk's
    transaction."""
    if not versions.num_rows:
        return
    index = _q(MessageIndex._meta.db_table)
    mid = _q("message_id")
    rows = versions.select(["message_id", "version", "body_size"])
    with connection.cursor() as cursor, joins_by_key(cursor):
        cursor.execute(f"DROP TABLE IF EXISTS {BODIES}")
        cursor.execute(
            f"CREATE TEMPORARY TABLE {BODIES} (message_id varchar(200) PRIMARY KEY, "
            "version integer, body_size bigint)"
        )
        try:
            _rows_insert(cursor, BODIES, rows)
            if connection.vendor == "postgresql":
                cursor.execute(
                    f"UPDATE {index} i SET body_version = b.version, body_size = b.body_size, "  # noqa: S608
                    f"body_path = %s FROM {BODIES} b WHERE i.{mid} = b.message_id",
                    [directory],
                )
            else:
                # SQLite: each row's values by key from the staged rows (no UPDATE ... FROM
                # before SQLite 3.33).
                found = f"FROM {BODIES} b WHERE b.message_id = {index}.{mid}"
                cursor.execute(
                    f"UPDATE {index} SET body_version = (SELECT b.version {found}), "  # noqa: S608
                    f"body_size = (SELECT b.body_size {found}), body_path = %s "
                    f"WHERE {mid} IN (SELECT message_id FROM {BODIES})",
                    [directory],
                )
        finally:
            cursor.execute(f"DROP TABLE IF EXISTS {BODIES}")


def _rows_update(cursor, changes, ids_sql, ids_params):
    """UPDATE the index rows named by `ids_sql` with `changes` ({field: value}), each field in the
    table that holds it (MessageState's or MessageIndex's own)."""
    by_table = {}
    for name, value in changes.items():
        field = MessageIndex._meta.get_field(name)
        by_table.setdefault(field.model._meta.db_table, []).append((field, value))
    for table, fields in by_table.items():
        sets = ", ".join(f"{_q(f.column)} = %s" for f, _ in fields)
        values = [f.get_db_prep_save(v, connection) for f, v in fields]
        cursor.execute(
            f"UPDATE {_q(table)} SET {sets} WHERE {_q('message_id')} IN ({ids_sql})",  # noqa: S608
            [*values, *ids_params],
        )


def _groups_move(deltas):
    by_group = by_key(deltas)
    groups = list(FailureGroup.objects.select_for_update().filter(fingerprint__in=list(by_group)))
    for group in groups:
        group.states_set(
            counts_moved(
                group.states, by_group[group.fingerprint], what=f"failure group {group.fingerprint}"
            )
        )
    # One statement for the chunk's groups (a chunk of a large request touches them all).
    FailureGroup.objects.bulk_update(groups, ["states", "ndlv", "wait"])


# --- A purge (R15): the read models forget the purged messages --------------------------------

PURGED = "purged_messages"
PURGED_GROUPS = "purged_groups"
PURGED_PATHS = "purged_paths"
# A purge waits this long at most for a refresh in progress to end before it takes the lock.
REFRESH_WAIT_SECONDS = 900


class RefreshBusy(Exception):
    """A refresh held the refresh lock longer than a purge waits for it."""


@contextlib.contextmanager
def refresh_lock_held(*, holder, wait_seconds=REFRESH_WAIT_SECONDS, poll=1.0):
    """Hold the refresh lock for the duration, as a RUNNING refresh row of its own kept alive by a
    heartbeat: a writer that changes what the read models are computed from (a purge rewrites
    the lake) keeps every refresh from loading rows it computed from the lake as it was before.
    A refresh that starts meanwhile finds the lock taken and is skipped (beat comes back).

    `holder` names the writer on the row (the Runs page shows it). Waits for a refresh in
    progress to end (at most `wait_seconds`, then RefreshBusy). Yields the row's id, for
    `refresh_lock_still_held` to check in the writer's transaction."""
    deadline = time.monotonic() + wait_seconds
    while True:
        # A refresh whose heartbeat stopped is dead: its lock is released, as a refresh does.
        leases.sweep_stale(RefreshRun)
        try:
            with transaction.atomic():
                lock = leases.start(RefreshRun, held_for=holder[:100])
            break
        except IntegrityError:
            if time.monotonic() > deadline:
                raise RefreshBusy(
                    f"a refresh held the read models for over {wait_seconds} s"
                ) from None
            time.sleep(poll)
    heartbeat = leases.Heartbeat(RefreshRun, lock.id)
    heartbeat.start()
    try:
        yield lock.id
    finally:
        heartbeat.stop()
        # Released in its own transaction after the writer's: a refresh that read the lake
        # before the writer committed and waited on the database meanwhile still finds the lock
        # taken when it gets there.
        RefreshRun.objects.filter(id=lock.id).delete()


def refresh_lock_still_held(lock_id):
    """True unless the lock was taken from its holder (its heartbeat stopped for LEASE_SECONDS
    and a refresh declared it dead)."""
    return leases.held(RefreshRun, lock_id)


@contextlib.contextmanager
def purged_staged(tables):
    """Stage the purged messages' (message_id, queue, state) arrow tables in a temporary table;
    yields its name. It lives on the connection, not in a transaction: staged once, it is read
    before the purge's swap and inside it. COPY on PostgreSQL, JSON parameters on SQLite."""
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {PURGED}")
        cursor.execute(
            f"CREATE TEMPORARY TABLE {PURGED} "
            "(message_id varchar(200) PRIMARY KEY, queue varchar(100), state varchar(8))"
        )
        for table in tables:
            _rows_insert(cursor, PURGED, table.select(["message_id", "queue", "state"]))
        if connection.vendor == "postgresql":
            # A temporary table has no statistics until asked: the joins below plan on them.
            cursor.execute(f"ANALYZE {PURGED}")
        try:
            yield PURGED
        finally:
            cursor.execute(f"DROP TABLE IF EXISTS {PURGED}")


def _by_id_desc(column):
    """ORDER BY a text column as Spark compares strings (by bytes), on either database."""
    collate = ' COLLATE "C"' if connection.vendor == "postgresql" else ""
    return f"{column}{collate} DESC"


def read_models_purge_samples(*, staged):
    """{fingerprint: the message id of its next sample, or None}, for every failure group whose
    sample is among the purged: the latest failure of the members that stay, by (last failure,
    id), as a full refresh would pick it."""
    groups = _q(FailureGroup._meta.db_table)
    index = _q(MessageIndex._meta.db_table)
    mid, group = _q("message_id"), _q("group_id")
    found = {}
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {_q('fingerprint')} FROM {groups} WHERE {_q('sample_message_id')} IN "  # noqa: S608
            f"(SELECT message_id FROM {staged})"
        )
        for (fingerprint,) in cursor.fetchall():
            cursor.execute(
                f"SELECT i.{mid} FROM {index} i WHERE i.{group} = %s AND NOT EXISTS "  # noqa: S608
                f"(SELECT 1 FROM {staged} p WHERE p.message_id = i.{mid}) "
                f"ORDER BY i.{_q('last_failure_at')} DESC, {_by_id_desc(f'i.{mid}')} LIMIT 1",
                [fingerprint],
            )
            row = cursor.fetchone()
            found[fingerprint] = row[0] if row else None
    return found


def read_models_forget(*, staged, queue_counts, inflow, body_paths, samples):
    """The read models without the purged messages (`staged` by `purged_staged`), as a full
    refresh would make them from the lake without them. Call inside the purge's transaction.

    - their index rows go (both tables');
    - the failure groups they were in are recounted from the index (count, states, first and
      last seen), those left empty go, and `samples` ({fingerprint: {"sample_message_id",
      "sample_reason", "sample_stack"}}) replace the samples that were purged;
    - `queue_counts` ({(queue, state): n}) are taken off the queue counts; a queue left with no
      message has no counts, as after a refresh;
    - `inflow` ([(queue, hour, flow, n)]) is taken off the hourly flows;
    - index rows whose body is in a rewritten directory point at its new one (`body_paths`:
      {old: new}).
    """
    index, states = _q(MessageIndex._meta.db_table), _q(MessageState._meta.db_table)
    groups = _q(FailureGroup._meta.db_table)
    mid, group, fingerprint = _q("message_id"), _q("group_id"), _q("fingerprint")
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {PURGED_GROUPS}")
        cursor.execute(f"CREATE TEMPORARY TABLE {PURGED_GROUPS} (fingerprint varchar(64))")
        # The staged ids drive the join, each finding its index row by primary key (CROSS JOIN
        # fixes SQLite's join order, as in read_models_apply).
        cursor.execute(
            f"INSERT INTO {PURGED_GROUPS} (fingerprint) SELECT DISTINCT i.{group} "  # noqa: S608
            f"FROM {staged} p CROSS JOIN {index} i WHERE i.{mid} = p.message_id "
            f"AND i.{group} <> ''"
        )
        for table in (index, states):
            cursor.execute(f"DELETE FROM {table} WHERE {mid} IN (SELECT message_id FROM {staged})")  # noqa: S608
        touched = f"SELECT fingerprint FROM {PURGED_GROUPS}"  # noqa: S608
        cursor.execute(group_recount_sql(f"i.{group} IN ({touched})"))
        totals = group_totals(cursor.fetchall())
        states_field = FailureGroup._meta.get_field("states")
        cursor.executemany(
            f"UPDATE {groups} SET {_q('count')} = %s, {_q('first_seen')} = %s, "  # noqa: S608
            f"{_q('last_seen')} = %s, {_q('states')} = %s WHERE {fingerprint} = %s",
            [
                (count, first, last, states_field.get_db_prep_value(by_state, connection), group_id)
                for group_id, (count, first, last, by_state) in totals.items()
            ],
        )
        cursor.execute(
            f"DELETE FROM {groups} WHERE {fingerprint} IN ({touched}) AND NOT EXISTS "  # noqa: S608
            f"(SELECT 1 FROM {index} WHERE {index}.{group} = {groups}.{fingerprint})"
        )
        cursor.executemany(
            f"UPDATE {groups} SET {_q('sample_message_id')} = %s, {_q('sample_reason')} = %s, "  # noqa: S608
            f"{_q('sample_stack')} = %s WHERE {fingerprint} = %s",
            [
                (s["sample_message_id"], s["sample_reason"], s["sample_stack"], f)
                for f, s in samples.items()
            ],
        )
        cursor.execute(f"DROP TABLE IF EXISTS {PURGED_GROUPS}")
        if body_paths:
            _body_paths_move(cursor, index, body_paths)
    queue_counts_move({key: -n for key, n in queue_counts.items()})
    _inflow_forget(inflow)


def read_models_body_paths_move(body_paths):
    """Index rows whose body is in a rewritten messages directory point at its new one
    (`body_paths`: {old: new}). Call inside the rewrite's transaction."""
    with connection.cursor() as cursor:
        _body_paths_move(cursor, _q(MessageIndex._meta.db_table), body_paths)


def _body_paths_move(cursor, index, body_paths):
    path = _q("body_path")
    cursor.execute(f"DROP TABLE IF EXISTS {PURGED_PATHS}")
    cursor.execute(
        f"CREATE TEMPORARY TABLE {PURGED_PATHS} (old varchar(500) PRIMARY KEY, new varchar(500))"
    )
    cursor.executemany(
        f"INSERT INTO {PURGED_PATHS} (old, new) VALUES (%s, %s)",  # noqa: S608
        sorted(body_paths.items()),
    )
    cursor.execute(
        f"UPDATE {index} SET {path} = (SELECT new FROM {PURGED_PATHS} "  # noqa: S608
        f"WHERE old = {index}.{path}) WHERE {path} IN (SELECT old FROM {PURGED_PATHS})"
    )
    cursor.execute(f"DROP TABLE IF EXISTS {PURGED_PATHS}")


def _flows_purged_add(inflow):
    """What the purge takes off the flows, kept (FlowPurged): the metrics' counters add it back."""
    purged = Counter()
    for queue, _, flow, n in inflow:
        purged[(queue, flow)] += n
    for (queue, flow), n in sorted(purged.items()):
        if n:
            row, _ = FlowPurged.objects.get_or_create(queue=queue, flow=flow)
            FlowPurged.objects.filter(id=row.id).update(count=F("count") + n)


def _inflow_forget(inflow):
    table = _q(QuarantineInflow._meta.db_table)
    count, queue, hour, flow = _q("count"), _q("queue"), _q("hour"), _q("flow")
    rows = [
        (n, q, connection.ops.adapt_datetimefield_value(h), f)
        for q, h, f, n in inflow
        if n  # an hour the purged messages added nothing to is left alone
    ]
    with connection.cursor() as cursor:
        cursor.executemany(
            f"UPDATE {table} SET {count} = {count} - %s "  # noqa: S608
            f"WHERE {queue} = %s AND {hour} = %s AND {flow} = %s",
            rows,
        )
        # Below zero, they were wrong before (console.readmodels.counts): kept, and reported.
        cursor.execute(
            f"SELECT {queue}, {hour}, {flow}, {count} FROM {table} WHERE {count} < 0"  # noqa: S608
        )
        below = cursor.fetchall()
        cursor.execute(f"DELETE FROM {table} WHERE {count} = 0")  # noqa: S608
    _flows_purged_add(inflow)
    if below:
        shown = [f"{q} {h} {f}: {n}" for q, h, f, n in below[:20]]
        log.error("hourly flows went below zero after a purge: %s", "; ".join(shown))
        counts_drifted.send(
            sender=QuarantineInflow,
            about="flows",
            text=f"{len(below)} hourly flow(s) went below zero after a purge",
            details={"below_zero": shown},
        )
