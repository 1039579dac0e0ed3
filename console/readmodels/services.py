"""The refresh of the read models: the Spark job (workers.jobs.refresh) folds the new lake
commits, then one DB transaction loads its output in bulk and moves the cursor.

Bulk means a statement per batch, never per row: the job's rows are staged in temporary tables
(COPY on PostgreSQL, executemany in batches on SQLite), and the read models are changed from them
with one INSERT ... SELECT ... ON CONFLICT and one DELETE each. Both databases speak that SQL.
The files are read back with pyarrow record batch by record batch, so memory stays flat however
many rows change.

A refresh holds the refresh lock (one RUNNING row) and a heartbeat, like a delivery run; one
whose heartbeat stopped is declared failed by the next, which simply does the work again: the
cursor only moves in the transaction that loads the rows.
"""

import io
import logging
import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, timedelta

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.dataset as pads
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from console.heartbeat import Heartbeat, worker_name
from console.lake.models import LakeCommit
from console.lake.selectors import lake_history_inputs, lake_paths
from console.lake.services import lake, lake_commit_lock
from console.lake.signals import events_to_fold
from console.readmodels.counts import counts_moved, queue_counts_move
from console.readmodels.models import (
    FailureGroup,
    FoldedCommit,
    MessageIndex,
    MessageState,
    QuarantineInflow,
    QueueStat,
    RefreshRun,
)
from console.readmodels.oldest import quarantine_oldest_keep
from console.readmodels.signals import groups_appeared
from console.sql import in_values
from workers.engine.states import DLVD, NDLV, WAIT
from workers.logcontext import log_context

log = logging.getLogger(__name__)

BATCH_ROWS = 10_000
# A refresh (or another holder of the refresh lock) that missed this many heartbeats is dead.
MISSED_BEATS = 3


# --- The refresh --------------------------------------------------------------------------------


def _cursor():
    """The last events commit the newest committed refresh folded, or None (never refreshed)."""
    run = (
        RefreshRun.objects.filter(status=RefreshRun.COMMITTED).order_by("-id").only("upto_commit")
    ).first()
    return run.upto_commit if run else None


def refresh_runs_stale_fail(now):
    """A refresh whose heartbeat stopped is dead: release the lock so the work is done again.
    Each refresh calls it before it takes the lock, and the sweeper too (a quiet system may
    start no refresh for long).

    Dead after MISSED_BEATS heartbeats, not a delivery run's LEASE_SECONDS: taking the lock
    from a refresh that was only slow costs its work (its load commits only while it still
    holds the lock, and FoldedCommit refuses a second fold), not a message's count, and every
    minute a dead one holds the lock the console stands still (the soak: a killed spark worker
    stopped the refreshes for two and a half minutes each time). A purge or a counts check
    holding the lock checks it still does before it writes."""
    deadline = now - timedelta(seconds=MISSED_BEATS * settings.HEARTBEAT_SECONDS)
    for run in RefreshRun.objects.filter(status=RefreshRun.RUNNING, heartbeat_at__lt=deadline):
        RefreshRun.objects.filter(id=run.id, status=RefreshRun.RUNNING).update(
            status=RefreshRun.FAILED,
            finished_at=now,
            error=f"lease expired: no heartbeat since {run.heartbeat_at.isoformat()}",
        )


def _run_start():
    """Take the refresh lock: one RUNNING row (the constraint one_running_refresh). What the
    refresh folds is read after this, under the lock (`_plan`). None when another holds it."""
    now = timezone.now()
    refresh_runs_stale_fail(now)
    try:
        with transaction.atomic():
            return RefreshRun.objects.create(started_at=now, heartbeat_at=now, worker=worker_name())
    except IntegrityError:
        return None  # another refresh holds the lock


def _run_fail(run, error):
    RefreshRun.objects.filter(id=run.id, status=RefreshRun.RUNNING).update(
        status=RefreshRun.FAILED, finished_at=timezone.now(), error=error[:5000]
    )


class AlreadyFolded(Exception):
    """A refresh was about to fold an events commit that an earlier one folded: the database
    refused it (FoldedCommit), and nothing of the refresh was loaded."""


@dataclass
class Plan:
    """What one refresh takes in, read under the refresh lock: its starting position (the newest
    committed refresh's), every events commit listed then, those after the position (`taken`:
    their flows are counted, and each is recorded as folded) and, among them, those whose
    events it folds into the states (`new`: all but those whose writer applied them itself)."""

    full: bool
    cursor: int | None
    history: object  # console.lake.selectors.HistoryInputs
    commits: list  # [(id, path)] of every events commit, in id order
    taken: list  # [(id, path)]
    new: list  # [(id, path, rows)]

    @property
    def upto(self):
        return self.commits[-1][0] if self.commits else None


def _plan(*, full):
    """The position and the commits to take in. Read under the lock: a refresh that committed
    between a read of the position and the taking of the lock made the next one fold the same
    commits again (counting the messages they delivered at first try twice)."""
    cursor = _cursor()
    full = full or cursor is None
    # Read before the events commits are listed: a generation committed in between is not
    # used, and the commits it holds are read as events commits instead.
    history = lake_history_inputs()
    listed = list(
        LakeCommit.objects.filter(dataset="events", retired=False)
        .order_by("id")
        .values_list("id", "path", "views_applied", "row_count")
    )
    taken = [(i, p, applied, n) for i, p, applied, n in listed if full or i > cursor]
    return Plan(
        full=full,
        cursor=cursor,
        history=history,
        commits=[(i, p) for i, p, _, _ in listed],
        taken=[(i, p) for i, p, _, _ in taken],
        # A commit whose writer updated the read models itself needs no folding (its events
        # still count in every message's history and in the queue counts).
        new=[(i, p, n) for i, p, applied, n in taken if full or not applied],
    )


def _has_new_commits():
    """Anything for an incremental refresh to take in? A cheap look before the lock is taken,
    so that beat's ticks with nothing new leave no trace; the refresh reads again under it."""
    cursor = _cursor()
    if cursor is None:
        return True
    return LakeCommit.objects.filter(dataset="events", retired=False, id__gt=cursor).exists()


def _run_release(run):
    """Let go of a lock that found nothing to do: no row is left for a refresh that did
    nothing."""
    RefreshRun.objects.filter(id=run.id, status=RefreshRun.RUNNING).delete()


def read_models_refresh(*, full=False, spark=None):
    """Fold the events commits made since the last refresh (all of them when `full`, or when
    nothing was ever refreshed) into the read models.

    Returns the committed RefreshRun; None when there was nothing new, or when another refresh
    holds the lock (the next tick of beat comes back for what it leaves). Raises AlreadyFolded
    if it was about to fold a commit a second time (the run is recorded as failed)."""
    from console.spark import spark_from_settings

    if not full and not _has_new_commits():
        return None
    # The session before the lock and the plan: a refresh that waited for a starting JVM (the
    # first after a start) takes in the commits made meanwhile, not only those it was asked for.
    spark = spark or spark_from_settings()
    run = _run_start()
    if run is None:
        log.info("a refresh is already in progress; this one is skipped")
        return None
    with log_context(run_id=f"refresh:{run.id}"):
        return _run_refresh(run, full=full, spark=spark)


def _run_refresh(run, *, full, spark):
    """A refresh that holds the lock: plan, fold, load."""
    from workers.jobs.refresh import RefreshParams, run_refresh

    try:
        plan = _plan(full=full)
    except Exception as exc:
        _run_fail(run, f"{exc.__class__.__name__}: {exc}")
        raise
    if not plan.full and not plan.taken:
        _run_release(run)  # another refresh took them in meanwhile
        return None
    RefreshRun.objects.filter(id=run.id).update(
        full=plan.full, from_commit=None if plan.full else plan.cursor, upto_commit=plan.upto
    )
    run.refresh_from_db()
    store = lake()
    staging = store.new_dir("refresh-staging", f"refresh{run.id}")
    params = RefreshParams(
        full=plan.full,
        event_paths=store.paths([p for i, p in plan.commits if i > plan.history.covers_upto]),
        new_event_paths=store.paths([p for _, p, _ in plan.new]),
        message_paths=store.paths(lake_paths(dataset="messages")),
        out_dir=store.path(staging),
        generations=[(store.path(g.path), g.buckets, g.rows) for g in plan.history.generations],
        new_event_rows=sum(n for _, _, n in plan.new),
        flow_event_paths=store.paths([p for _, p in plan.taken]),
    )
    heartbeat = Heartbeat(RefreshRun, run.id, settings.HEARTBEAT_SECONDS)
    heartbeat.start()
    try:
        started = time.perf_counter()
        try:
            result = run_refresh(spark, params)
        finally:
            heartbeat.stop()
        folded = time.perf_counter()
        won = _load(
            run,
            params.out_dir,
            full=plan.full,
            folds=[i for i, _ in plan.taken],
            changed=result.indexed + result.gone,
        )
        log.info(
            "refresh %s: %s affected, %s indexed, %s gone, %s groups; spark %.1f s, load %.1f s",
            run.id,
            result.affected,
            result.indexed,
            result.gone,
            result.groups,
            folded - started,
            time.perf_counter() - folded,
        )
    except AlreadyFolded as exc:
        log.error("refresh %s refused: %s", run.id, exc)
        _run_fail(run, str(exc))
        raise
    except Exception as exc:
        log.exception("refresh %s failed", run.id)
        _run_fail(run, f"{exc.__class__.__name__}: {exc}")
        raise
    finally:
        shutil.rmtree(params.out_dir, ignore_errors=True)
    if not won:
        log.warning(
            "refresh %s lost its lease before loading; its work is left to the next", run.id
        )
    _next_refresh_ask(plan.upto)
    if won:
        quarantine_oldest_keep()  # the counts it moved go with their oldest quarantined message
    run.refresh_from_db()
    return run


def _folds_record(run, folds, *, full):
    """Record the commits this refresh took in, in its load's transaction. The primary key
    refuses a commit taken in before (AlreadyFolded). A full refresh folds every commit again
    from nothing, so it starts the record anew."""
    if full:
        FoldedCommit.objects.all().delete()
    try:
        with transaction.atomic():
            FoldedCommit.objects.bulk_create(
                [FoldedCommit(commit_id=i, run_id=run.id) for i in folds], batch_size=5000
            )
    except IntegrityError:
        twice = FoldedCommit.objects.filter(commit_id__in=folds).order_by("commit_id").first()
        where = f"refresh {twice.run_id}" if twice else "an earlier refresh"
        commit = twice.commit_id if twice else "?"
        raise AlreadyFolded(
            f"events commit {commit} was already folded by {where}; refresh {run.id} "
            f"started from commit {run.from_commit} and would count its messages twice"
        ) from None


def _next_refresh_ask(upto):
    """Ask for the next refresh when events commits landed after those this one read: their
    own requests were skipped while this one held the lock (or debounced), and would otherwise
    wait for beat's next refresh. Checked after the load's transaction, so a commit either
    finds the lock free or is seen here."""
    newer = LakeCommit.objects.filter(dataset="events", views_applied=False)
    if upto is not None:
        newer = newer.filter(id__gt=upto)
    if newer.exists():
        events_to_fold.send(sender=RefreshRun, follow_up=True)


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


def _load(run, out_dir, *, full, folds, changed):
    """Everything in one transaction, which also marks the run committed (and so moves the
    cursor) and records the commits it takes in (`folds`). Returns False if the run lost its
    lease meanwhile: nothing is written then."""
    with transaction.atomic():
        won = RefreshRun.objects.filter(id=run.id, status=RefreshRun.RUNNING).update(
            status=RefreshRun.COMMITTED, finished_at=timezone.now(), changed=changed
        )
        if won != 1:
            return False
        _folds_record(run, folds, full=full)
        _applied_meanwhile_refold(run.upto_commit)
        read_models_load(out_dir, full=full)
    return True


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
    if full:
        _queue_stats_replace(f"{out_dir}/stats")
    else:
        _queue_stats_move(f"{out_dir}/stats", before.queues)
    _inflow_add(f"{out_dir}/inflow", full=full)


def _applied_meanwhile_refold(upto):
    """A writer that updated the read models itself after this refresh read the lake may have
    had its rows overwritten by this load, computed from older state: such commits are folded
    again by the next refresh. The lake commit lock keeps a commit from landing between this
    check and the load."""
    lake_commit_lock()
    meanwhile = LakeCommit.objects.filter(dataset="events", views_applied=True)
    if upto is not None:
        meanwhile = meanwhile.filter(id__gt=upto)
    if meanwhile.update(views_applied=False, handed_back=True):
        events_to_fold.send(sender=RefreshRun)


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
            yield _utc(batch)


def _utc(batch):
    arrays = []
    for array in batch.columns:
        if pa.types.is_timestamp(array.type):
            array = array.cast(pa.timestamp(array.type.unit, tz="UTC"))
            array = array.cast(pa.timestamp("us", tz="UTC"), safe=False)
        arrays.append(array)
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)


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
    recount = (
        f"SELECT i.{group}, s.{_q('state')}, COUNT(*), MIN(i.{_q('first_failure_at')}), "  # noqa: S608
        f"MAX(i.{_q('last_failure_at')}) FROM {index} i JOIN {_table(MessageState)} s "
        f"ON s.{_q('message_id')} = i.{_q('message_id')} WHERE %s "
        f"GROUP BY i.{group}, s.{_q('state')}"
    )
    gone = (
        f"DELETE FROM {groups} WHERE NOT EXISTS "  # noqa: S608
        f"(SELECT 1 FROM {index} WHERE {index}.{group} = {groups}.{_q('fingerprint')})"
    )
    found = []
    if full:
        cursor.execute(recount % f"i.{group} <> ''")
        found = cursor.fetchall()
    else:
        # The touched groups as one parameter, not a subquery of the temporary table:
        # PostgreSQL, with no statistics on it, planned the subquery as a scan of the whole
        # index (0.7 s at 1M rows, for no group at all).
        cursor.execute("SELECT fingerprint FROM refresh_groups")
        touched = [f for (f,) in cursor.fetchall()]
        if touched:
            where, params = in_values(f"i.{group}", touched)
            cursor.execute(recount % where, params)
            found = cursor.fetchall()
    totals = {}
    for fingerprint, state, count, first, last in found:
        total = totals.setdefault(fingerprint, {"count": 0, "first": [], "last": [], "states": {}})
        total["count"] += count
        total["states"][state] = count
        total["first"] += [first] if first is not None else []
        total["last"] += [last] if last is not None else []
    states_field = FailureGroup._meta.get_field("states")
    cursor.executemany(
        f"UPDATE {groups} SET {_q('count')} = %s, {_q('first_seen')} = %s, "  # noqa: S608
        f"{_q('last_seen')} = %s, {_q('states')} = %s, {_q('ndlv')} = %s, {_q('wait')} = %s "
        f"WHERE {_q('fingerprint')} = %s",
        [
            (
                t["count"],
                min(t["first"], default=None),
                max(t["last"], default=None),
                states_field.get_db_prep_value(t["states"], connection),
                t["states"].get(NDLV, 0),
                t["states"].get(WAIT, 0),
                fingerprint,
            )
            for fingerprint, t in totals.items()
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


def _inflow_add(path, *, full):
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
