"""Loading a refresh's output into the read models (the refresh itself, which runs the Spark
job under the refresh lock: console.readmodels.execution).

Bulk means a statement per batch, never per row: the job's rows are staged in temporary tables
(COPY on PostgreSQL, executemany in batches on SQLite), and the read models are changed from them
with one INSERT ... SELECT ... ON CONFLICT and one DELETE each. Both databases speak that SQL.
The files are read back with pyarrow record batch by record batch, so memory stays flat however
many rows change.
"""

import io
import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.dataset as pads
from django.db import connection
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from console.lake.arrow import timestamps_utc
from console.readmodels.counts import (
    counts_moved,
    group_recount_sql,
    group_totals,
    queue_counts_move,
)
from console.readmodels.models import (
    FailureGroup,
    MessageIndex,
    MessageState,
    QuarantineInflow,
    QueueStat,
)
from console.readmodels.signals import groups_appeared, groups_refreshed
from console.sql import in_values
from workers.engine.states import DLVD, NDLV, WAIT

log = logging.getLogger(__name__)

BATCH_ROWS = 10_000


# --- Loading the DB -----------------------------------------------------------------------------


def _q(name):
    return connection.ops.quote_name(name)


def _table(model):
    return _q(model._meta.db_table)


# The index's two tables and the columns the refresh loads into each; the job writes one row of
# INDEX_COLUMNS a message. MessageState's failure_at is a copy of the row's last_failure_at.
STATE_COLUMNS = [f.column for f in MessageState._meta.concrete_fields]
OWN_COLUMNS = [f.column for f in MessageIndex._meta.local_concrete_fields]
INDEX_COLUMNS = list(dict.fromkeys(c for c in [*STATE_COLUMNS, *OWN_COLUMNS] if c != "failure_at"))
_STATE_SOURCES = [c if c != "failure_at" else "last_failure_at" for c in STATE_COLUMNS]
# What a failure group is made of; the rest (count, first and last seen, states) is recomputed
# from the index after every load.
GROUP_AGGREGATES = ("count", "first_seen", "last_seen", "states", "ndlv", "wait")
GROUP_FIELDS = [
    f.column for f in FailureGroup._meta.concrete_fields if f.name not in GROUP_AGGREGATES
]


def read_models_load(out_dir, *, full):
    """Load a refresh job's output (workers.jobs.refresh, staged in `out_dir`) into the read
    models: a full one replaces them, an incremental one moves them by what changed. Call inside
    the caller's transaction."""
    with connection.cursor() as cursor:
        _temp_tables_create(cursor)
        rows = _dataset(f"{out_dir}/rows")
        _stage(
            cursor,
            "refresh_index",
            INDEX_COLUMNS,
            _batches(rows, INDEX_COLUMNS, pc.field("indexed")),
        )
        _stage(
            cursor,
            "refresh_gone",
            ["message_id"],
            _batches(rows, ["message_id"], ~pc.field("indexed")),
        )
        if not full:
            _stage(
                cursor,
                "refresh_delivered",
                ["message_id", "queue"],
                _batches(_dataset(f"{out_dir}/delivered"), ["message_id", "queue"], None),
            )
        before = _index_apply(cursor, full=full)
        appeared = _groups_apply(cursor, f"{out_dir}/groups", full=full, before=before.groups)
        _temp_tables_drop(cursor)
    if appeared:
        groups_appeared.send(sender=FailureGroup, fingerprints=appeared)
    groups_refreshed.send(sender=FailureGroup)
    if full:
        _queue_stats_replace(f"{out_dir}/stats")
    else:
        _queue_stats_move(f"{out_dir}/stats", before.queues)
    inflow_add(f"{out_dir}/inflow", full=full)


def _temp_tables_create(cursor):
    _temp_tables_drop(cursor)
    index, states = _table(MessageIndex), _table(MessageState)
    names = ", ".join(f"{'i' if c in OWN_COLUMNS else 's'}.{_q(c)}" for c in INDEX_COLUMNS)
    # Same columns as the index, no constraints and no indexes: the fastest thing to fill.
    cursor.execute(
        f"CREATE TEMPORARY TABLE refresh_index AS SELECT {names} FROM {index} i "  # noqa: S608
        f"JOIN {states} s ON s.{_q('message_id')} = i.{_q('message_id')} WHERE 1=0"
    )
    cursor.execute("CREATE TEMPORARY TABLE refresh_gone (message_id varchar(200) PRIMARY KEY)")
    cursor.execute("CREATE TEMPORARY TABLE refresh_groups (fingerprint varchar(64) PRIMARY KEY)")
    cursor.execute(
        "CREATE TEMPORARY TABLE refresh_delivered "
        "(message_id varchar(200) PRIMARY KEY, queue varchar(100))"
    )


def _temp_tables_drop(cursor):
    for name in ("refresh_index", "refresh_gone", "refresh_groups", "refresh_delivered"):
        cursor.execute(f"DROP TABLE IF EXISTS {name}")


def _dataset(path):
    return pads.dataset(path, format="parquet")


def _batches(dataset, columns, filter):
    """Record batches of the job's output, timestamps as UTC microseconds (Spark may write them
    as INT96 nanoseconds without a zone)."""
    if not dataset.files:
        return  # Spark wrote no file for an empty result
    scanner = dataset.scanner(columns=columns, filter=filter, batch_size=BATCH_ROWS)
    for batch in scanner.to_batches():
        if batch.num_rows:
            yield timestamps_utc(batch)


def _stage(cursor, table, columns, batches):
    """Fill a temporary table: COPY on PostgreSQL, executemany per batch on SQLite."""
    names = ", ".join(_q(c) for c in columns)
    if connection.vendor == "postgresql":
        options = pacsv.WriteOptions(include_header=False)
        with cursor.copy(f"COPY {table} ({names}) FROM STDIN (FORMAT csv)") as copy:
            for batch in batches:
                buffer = io.BytesIO()
                pacsv.write_csv(batch, buffer, options)
                copy.write(buffer.getvalue())
        return
    sql = f"INSERT INTO {table} ({names}) VALUES ({', '.join(['%s'] * len(columns))})"  # noqa: S608
    for batch in batches:
        cursor.executemany(sql, zip(*(_sqlite_values(a) for a in batch.columns), strict=True))


def _sqlite_values(array):
    """A column as Django's SQLite backend stores it: datetimes as naive UTC text, the
    microseconds left out when there are none (adapt_datetimefield_value's str())."""
    if pa.types.is_timestamp(array.type):
        text = pc.strftime(array, format="%Y-%m-%d %H:%M:%S")
        array = pc.replace_substring_regex(text, pattern=r"\.000000$", replacement="")
    return array.to_pylist()


@dataclass
class Before:
    """What the changed messages counted before the load, by (group, state) and (queue, state)."""

    groups: dict = field(default_factory=dict)
    queues: Counter = field(default_factory=Counter)


def _index_apply(cursor, *, full):
    """Load the staged rows into the index; return, for an incremental load, what the changed
    messages counted before it (Before)."""
    index, states = _table(MessageIndex), _table(MessageState)
    group = _q("group_id")
    mid = _q("message_id")
    # (table, its columns, what fills each from refresh_index)
    loads = [
        (states, STATE_COLUMNS, _STATE_SOURCES),
        (index, OWN_COLUMNS, OWN_COLUMNS),
    ]
    if full:
        for table, columns, sources in loads:
            names = ", ".join(_q(c) for c in columns)
            cursor.execute(f"DELETE FROM {table}")  # noqa: S608
            cursor.execute(
                f"INSERT INTO {table} ({names}) "  # noqa: S608
                f"SELECT {', '.join(_q(c) for c in sources)} FROM refresh_index"
            )
        return Before()
    changed = "SELECT message_id FROM refresh_index UNION SELECT message_id FROM refresh_gone"
    # What the changed rows counted before, in their groups and their queues: taken off the
    # counts, which the rows staged then add to.
    before = Before()
    cursor.execute(
        f"SELECT i.{group}, i.{_q('queue')}, s.{_q('state')}, COUNT(*) FROM {index} i "  # noqa: S608
        f"JOIN {states} s ON s.{mid} = i.{mid} "
        f"WHERE i.{mid} IN ({changed}) GROUP BY i.{group}, i.{_q('queue')}, s.{_q('state')}"
    )
    for group_id, queue, state, n in cursor.fetchall():
        before.queues[(queue, state)] += n
        if group_id:
            before.groups[(group_id, state)] = before.groups.get((group_id, state), 0) + n
    # Delivered and never failed, the others were counted in their queue but are not indexed.
    cursor.execute(
        f"SELECT d.queue, COUNT(*) FROM refresh_delivered d WHERE NOT EXISTS "  # noqa: S608
        f"(SELECT 1 FROM {states} s WHERE s.{mid} = d.message_id) GROUP BY d.queue"
    )
    for queue, n in cursor.fetchall():
        before.queues[(queue, DLVD)] += n
    # A group a changed row leaves (gone, or failing another way now) may lose its first or
    # last failure with it: those few are recounted over the index instead.
    # The changed ids drive the join, each finding its index row by primary key (CROSS JOIN
    # fixes SQLite's join order: left to itself it scanned the whole index, 0.9 s at 1M rows).
    cursor.execute(
        f"INSERT INTO refresh_groups (fingerprint) SELECT DISTINCT i.{group} "  # noqa: S608
        f"FROM ({changed}) c CROSS JOIN {index} i "
        f"LEFT JOIN refresh_index r ON r.message_id = i.{mid} "
        f"WHERE i.{mid} = c.message_id AND i.{group} <> '' "
        f"AND (r.message_id IS NULL OR r.group_id <> i.{group})"
    )
    for table, columns, sources in loads:
        names = ", ".join(_q(c) for c in columns)
        cursor.execute(f"DELETE FROM {table} WHERE {mid} IN (SELECT message_id FROM refresh_gone)")  # noqa: S608
        updates = ", ".join(f"{_q(c)} = excluded.{_q(c)}" for c in columns if c != "message_id")
        # WHERE true: SQLite needs it to tell ON CONFLICT from a join constraint.
        cursor.execute(
            f"INSERT INTO {table} ({names}) "  # noqa: S608
            f"SELECT {', '.join(_q(c) for c in sources)} FROM refresh_index WHERE true "
            f"ON CONFLICT ({mid}) DO UPDATE SET {updates}"
        )
    return before


def _groups_apply(cursor, path, *, full, before=None):
    """Upsert the touched groups' descriptions, then their counts: a full refresh counts every
    group with one GROUP BY over the index; an incremental one moves the counts of the groups
    its rows stay in or join by what changed (`before`: what the changed rows counted, by group
    and state, from `_index_apply`; the rows staged: what they count now), at a cost that
    follows the changes, and recounts over the index only the groups a row left.

    Returns the fingerprints of the groups that were not there before (the alerts' "new failure
    group"), in the order met."""
    groups = _table(FailureGroup)
    index = _table(MessageIndex)
    names = ", ".join(_q(c) for c in GROUP_FIELDS)
    known = None
    if full:
        # A full refresh rebuilds every group: those it had before are not new.
        known = set(FailureGroup.objects.values_list("fingerprint", flat=True))
        cursor.execute(f"DELETE FROM {groups}")  # noqa: S608
    appeared = []
    updates = ", ".join(f"{_q(c)} = excluded.{_q(c)}" for c in GROUP_FIELDS[1:])
    last_seen = f"{groups}.{_q('last_seen')}"
    # A group's description is its latest failure's: a change that brings an older failure of
    # the group (a message reprocessed) leaves a newer sample where it is.
    upsert = (
        f"INSERT INTO {groups} ({names}, {_q('count')}, {_q('states')}) "  # noqa: S608
        f"VALUES ({', '.join(['%s'] * len(GROUP_FIELDS))}, 0, %s) "
        f"ON CONFLICT ({_q('fingerprint')}) DO UPDATE SET {updates} "
        f"WHERE {last_seen} IS NULL OR {last_seen} <= %s"
    )
    empty = FailureGroup._meta.get_field("states").get_db_prep_value({}, connection)
    dataset = _dataset(path)
    for batch in _batches(dataset, [*GROUP_FIELDS, "sample_at"], None):
        columns = [batch.column(c).to_pylist() for c in GROUP_FIELDS]
        if known is None:
            where, params = in_values(_q("fingerprint"), columns[0])
            cursor.execute(f"SELECT {_q('fingerprint')} FROM {groups} WHERE {where}", params)  # noqa: S608
            there = {f for (f,) in cursor.fetchall()}
        else:
            there = known
        appeared += [f for f in columns[0] if f and f not in there]
        sampled = [
            connection.ops.adapt_datetimefield_value(at)
            for at in batch.column("sample_at").to_pylist()
        ]
        cursor.executemany(
            upsert, [(*row, empty, at) for *row, at in zip(*columns, sampled, strict=True)]
        )
        if full:
            cursor.executemany(
                "INSERT INTO refresh_groups (fingerprint) VALUES (%s) ON CONFLICT DO NOTHING",
                [(f,) for f in columns[0]],
            )
    if not full:
        _group_counts_move(cursor, before or {})
    group = _q("group_id")
    gone = (
        f"DELETE FROM {groups} WHERE NOT EXISTS "  # noqa: S608
        f"(SELECT 1 FROM {index} WHERE {index}.{group} = {groups}.{_q('fingerprint')})"
    )
    found = []
    if full:
        cursor.execute(group_recount_sql(f"i.{group} <> ''"))
        found = cursor.fetchall()
    else:
        # The touched groups as one parameter, not a subquery of the temporary table:
        # PostgreSQL, with no statistics on it, planned the subquery as a scan of the whole
        # index (0.7 s at 1M rows, for no group at all).
        cursor.execute("SELECT fingerprint FROM refresh_groups")
        touched = [f for (f,) in cursor.fetchall()]
        if touched:
            where, params = in_values(f"i.{group}", touched)
            cursor.execute(group_recount_sql(where), params)
            found = cursor.fetchall()
    states_field = FailureGroup._meta.get_field("states")
    cursor.executemany(
        f"UPDATE {groups} SET {_q('count')} = %s, {_q('first_seen')} = %s, "  # noqa: S608
        f"{_q('last_seen')} = %s, {_q('states')} = %s, {_q('ndlv')} = %s, {_q('wait')} = %s "
        f"WHERE {_q('fingerprint')} = %s",
        [
            (
                count,
                first,
                last,
                states_field.get_db_prep_value(by_state, connection),
                by_state.get(NDLV, 0),
                by_state.get(WAIT, 0),
                fingerprint,
            )
            for fingerprint, (count, first, last, by_state) in group_totals(found).items()
        ],
    )
    # A group none of whose messages is in it any more is gone.
    if full:
        cursor.execute(gone)
    elif touched:
        where, params = in_values(_q("fingerprint"), touched)
        cursor.execute(f"{gone} AND {where}", params)
    return appeared


def _group_counts_move(cursor, before):
    """The groups the changed rows count in now (refresh_index), but those a row left
    (refresh_groups, recounted after): their counts moved by the difference, their first and
    last failure widened by the rows'. A row's first failure never changes and its last only
    grows, so without a row leaving, min and max stay exact."""
    group, state = _q("group_id"), _q("state")
    cursor.execute(
        f"SELECT {group}, {state}, COUNT(*), MIN({_q('first_failure_at')}), "  # noqa: S608
        f"MAX({_q('last_failure_at')}) FROM refresh_index WHERE {group} <> '' "
        f"AND {group} NOT IN (SELECT fingerprint FROM refresh_groups) GROUP BY {group}, {state}"
    )
    moves, seen = {}, {}
    for fingerprint, at_state, count, first, last in cursor.fetchall():
        moves.setdefault(fingerprint, {})[at_state] = count
        span = seen.setdefault(fingerprint, [])
        span += [_when(first), _when(last)]
    cursor.execute("SELECT fingerprint FROM refresh_groups")
    recounted = {f for (f,) in cursor.fetchall()}
    for (fingerprint, at_state), count in before.items():
        if fingerprint not in recounted:
            states = moves.setdefault(fingerprint, {})
            states[at_state] = states.get(at_state, 0) - count
    groups = list(FailureGroup.objects.select_for_update().filter(fingerprint__in=list(moves)))
    empty = []
    for g in groups:
        g.states_set(
            counts_moved(g.states, moves[g.fingerprint], what=f"failure group {g.fingerprint}")
        )
        g.count = sum(g.states.values())
        if not g.states:
            empty.append(g.fingerprint)
        times = [t for t in [g.first_seen, g.last_seen, *seen.get(g.fingerprint, [])] if t]
        g.first_seen, g.last_seen = (min(times), max(times)) if times else (None, None)
    FailureGroup.objects.bulk_update(
        groups, ["count", "states", "ndlv", "wait", "first_seen", "last_seen"], batch_size=500
    )
    FailureGroup.objects.filter(fingerprint__in=empty).delete()


def _when(value):
    """A time read by raw SQL: SQLite gives text (naive UTC), PostgreSQL a datetime."""
    if value is None or not isinstance(value, str):
        return value
    parsed = parse_datetime(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _queue_stats_move(path, before):
    """Move the queue counts by the changed messages' counts now (the job's) less `before`."""
    deltas = Counter({key: -n for key, n in before.items()})
    for batch in _batches(_dataset(path), ["queue", "state", "count"], None):
        for row in batch.to_pylist():
            deltas[(row["queue"], row["state"])] += row["count"]
    queue_counts_move(deltas)


def _queue_stats_replace(path):
    """Counts of every queue by state: a handful of rows, replaced whole."""
    counts = {}
    for batch in _batches(_dataset(path), ["queue", "state", "count"], None):
        for row in batch.to_pylist():
            counts.setdefault(row["queue"], {})[row["state"]] = row["count"]
    now = timezone.now()
    QueueStat.objects.all().delete()
    QueueStat.objects.bulk_create(
        [QueueStat(queue=q, counts=c, updated_at=now) for q, c in counts.items()], batch_size=500
    )


def inflow_add(path, *, full):
    """The hourly flows (workers.jobs.refresh.hourly_flows): added to the hours' counts (a full
    refresh counted every event, so it replaces them)."""
    table = _table(QuarantineInflow)
    if full:
        QuarantineInflow.objects.all().delete()
    count = _q("count")
    sql = (
        f"INSERT INTO {table} ({_q('queue')}, {_q('hour')}, {_q('flow')}, {count}) "  # noqa: S608
        "VALUES (%s, %s, %s, %s) "
        f"ON CONFLICT ({_q('queue')}, {_q('hour')}, {_q('flow')}) "
        f"DO UPDATE SET {count} = {table}.{count} + excluded.{count}"
    )
    dataset = _dataset(path)
    with connection.cursor() as cursor:
        for batch in _batches(dataset, ["queue", "hour", "flow", "count"], None):
            rows = zip(
                batch.column("queue").to_pylist(),
                [
                    connection.ops.adapt_datetimefield_value(h)
                    for h in batch.column("hour").to_pylist()
                ],
                batch.column("flow").to_pylist(),
                batch.column("count").to_pylist(),
                strict=True,
            )
            cursor.executemany(sql, list(rows))
