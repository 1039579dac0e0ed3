"""Counts that can be checked and repaired: every count the console shows (queues by state,
failure groups by state, the hourly flows, and the index's rows behind the message list), recounted
from the lake by the refresh's own job and compared with what the read models hold.

The read models hold the events commits the refreshes took in (FoldedCommit) and those whose
writer applied them itself (a decision's); what landed since is theirs once the next refresh runs.
So the recount is of exactly that: the whole ledger less the events of the commits not taken in
yet (`left_out_paths`), the flows of the commits taken in. Nothing moves under it: it holds the
refresh lock (no refresh, no purge), and compares under the lake commit lock after checking that
no decision committed meanwhile (if one did, it counts again, a few times at most).

A decision's commit that a refresh handed back to be folded again (its writer had applied it,
and the refresh loaded rows computed from before it) may be in the read models for some of its
messages and not others: the check has a refresh fold it first.

A difference is drift: it is recorded (CountsCheck), logged, and alerted (`counts_drifted`). A
repair loads the recount as a full refresh would, in the same transaction as the comparison, and
is audited. The job is a full refresh's, without its load: its cost is a full refresh's (its Spark
part), and refreshes wait for it meanwhile."""

import logging
import shutil
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from django.conf import settings
from django.db import connection, transaction

from console import leases
from console.audit.services import audit_record
from console.lake.models import LakeCommit
from console.lake.selectors import lake_history_inputs, lake_paths
from console.lake.services import lake, lake_commit_lock
from console.readmodels.deltas import refresh_lock_held, refresh_lock_still_held
from console.readmodels.execution import read_models_refresh
from console.readmodels.models import (
    CountsCheck,
    FailureGroup,
    FoldedCommit,
    MessageIndex,
    MessageState,
    QuarantineInflow,
    QueueStat,
)
from console.readmodels.selectors import read_models_folded_upto
from console.readmodels.services import _batches, _dataset, read_models_load
from console.readmodels.signals import counts_drifted

log = logging.getLogger(__name__)

# The differences a check keeps and prints (it counts them all).
SHOWN = 200
# Recounts a check makes when decisions keep committing under it, before it gives up (busy).
ATTEMPTS = 3
# What an attempt says when a commit handed back to the refresh must be folded before counting.
HANDED_BACK = "handed back"
# The index columns compared, besides its rows being there: what the list shows and filters on.
INDEX_CHECKED = ["state", "queue", "group_id", "delivery_count", "candidate"]


@dataclass(frozen=True)
class Listing:
    """What the read models hold, read under the lake commit lock."""

    cursor: int | None
    history: object  # console.lake.selectors.HistoryInputs
    commits: list  # [(id, path)] of every events commit
    applied: tuple  # ids of the commits whose writer applied them itself
    taken: frozenset  # ids of the commits a refresh took in
    left_out: list  # paths of the commits whose events the read models do not hold yet
    # Ids of the commits whose writer applied them and a refresh handed back to be folded
    # (LakeCommit.handed_back), not taken in yet: the read models may hold them in part.
    handed_back: list

    @property
    def upto(self):
        return self.commits[-1][0] if self.commits else None


@dataclass
class Differences:
    total: int = 0
    shown: list = None

    def add(self, what, key, shown, recounted):
        self.total += 1
        if len(self.shown) < SHOWN:
            self.shown.append({"what": what, "key": key, "shown": shown, "recounted": recounted})


def counts_verify(*, repair=False, actor="system", spark=None):
    """Recount, compare and (`repair`) repair. Returns the CountsCheck as it ended; raises what
    the recount raised (recorded on the check first)."""
    check = leases.start(CountsCheck, actor=str(actor)[:150], repair=repair)
    heartbeat = leases.Heartbeat(CountsCheck, check.id)
    heartbeat.start()
    try:
        for _ in range(ATTEMPTS):
            with refresh_lock_held(holder=f"counts check {check.id}") as lock:
                outcome = _attempt(check, lock, repair=repair, actor=actor, spark=spark)
            if outcome is HANDED_BACK:
                # Its changes may be in the read models for some of its messages only, until a
                # refresh takes it in: fold it, then count.
                read_models_refresh(spark=spark)
            elif outcome:
                break
        else:
            leases.finish(
                CountsCheck,
                check.id,
                status=CountsCheck.BUSY,
                error=f"decisions committed under each of {ATTEMPTS} recounts; try later",
            )
    except Exception as exc:
        log.exception("counts check %s failed", check.id)
        leases.fail(CountsCheck, check.id, error=f"{exc.__class__.__name__}: {exc}")
        raise
    finally:
        heartbeat.stop()
    check.refresh_from_db()
    return check


def _listing():
    with transaction.atomic():
        lake_commit_lock()
        history = lake_history_inputs()
        events = list(
            LakeCommit.objects.filter(dataset="events", retired=False)
            .order_by("id")
            .values_list("id", "path", "views_applied", "handed_back")
        )
        taken = frozenset(FoldedCommit.objects.values_list("commit_id", flat=True))
        return Listing(
            cursor=read_models_folded_upto(),
            history=history,
            commits=[(i, p) for i, p, _, _ in events],
            applied=tuple(i for i, _, applied, _ in events if applied),
            taken=taken,
            left_out=[p for i, p, applied, _ in events if i not in taken and not applied],
            handed_back=[i for i, _, _, back in events if back and i not in taken],
        )


def _applied_now():
    return tuple(
        LakeCommit.objects.filter(dataset="events", retired=False, views_applied=True)
        .order_by("id")
        .values_list("id", flat=True)
    )


def _attempt(check, lock, *, repair, actor, spark):
    """One recount and comparison. False when a decision committed meanwhile (count again);
    HANDED_BACK, without counting, when a decision's commit waits to be folded again."""
    from console.spark import spark_from_settings
    from workers.jobs.refresh import RefreshParams, run_refresh

    listing = _listing()
    if listing.handed_back:
        log.info("counts check %s: commits %s to fold first", check.id, listing.handed_back)
        return HANDED_BACK
    store = lake()
    staging = store.new_dir("refresh-staging", f"counts-check{check.id}")
    covered = listing.history.covers_upto
    params = RefreshParams(
        full=True,
        event_paths=store.paths([p for i, p in listing.commits if i > covered]),
        new_event_paths=[],
        message_paths=store.paths(lake_paths(dataset="messages")),
        out_dir=store.path(staging),
        generations=[(store.path(g.path), g.buckets, g.rows) for g in listing.history.generations],
        flow_event_paths=store.paths([p for i, p in listing.commits if i in listing.taken]),
        left_out_paths=store.paths(listing.left_out),
    )
    try:
        result = run_refresh(spark or spark_from_settings(), params)
        with transaction.atomic():
            lake_commit_lock()
            if not refresh_lock_still_held(lock):
                raise RuntimeError("the refresh lock was taken over: this check stops")
            if _applied_now() != listing.applied:
                log.info("counts check %s: a decision committed under the recount", check.id)
                return False
            found = _compare(params.out_dir)
            repaired = bool(found.total) and repair
            if repaired:
                read_models_load(params.out_dir, full=True)
                audit_record(
                    actor=actor,
                    action="counts.repaired",
                    target_type="read models",
                    target_id=str(check.id),
                    details={
                        "differences": found.total,
                        "first": found.shown[:20],
                        "upto_commit": listing.cursor,
                    },
                )
            if found.total:
                _drift_report(check, found, repaired)
            leases.finish(
                CountsCheck,
                check.id,
                status=(
                    CountsCheck.REPAIRED
                    if repaired
                    else CountsCheck.DRIFT
                    if found.total
                    else CountsCheck.CLEAN
                ),
                upto_commit=listing.cursor,
                messages=result.affected,
                differences=found.total,
                drift=found.shown,
            )
        return True
    finally:
        shutil.rmtree(params.out_dir, ignore_errors=True)


def _drift_report(check, found, repaired):
    first = "; ".join(
        f"{d['what']} {d['key']}: shown {d['shown']}, recounted {d['recounted']}"
        for d in found.shown[:5]
    )
    log.error(
        "counts check %s: %s count(s) differ from the lake%s. First: %s",
        check.id,
        found.total,
        " (repaired)" if repaired else "",
        first,
    )
    counts_drifted.send(
        sender=CountsCheck,
        about="check",
        text=(
            f"A check found {found.total:,} count(s) that differ from the lake"
            f"{', and repaired them' if repaired else ''}. First: {first}"
        ),
        details={"check": check.id, "differences": found.total, "repaired": repaired},
    )


# --- The comparison ------------------------------------------------------------------------------


def _compare(out_dir):
    found = Differences(shown=[])
    _queues_compare(found, out_dir)
    _groups_compare(found, out_dir)
    _flows_compare(found, out_dir)
    _index_compare(found, out_dir)
    return found


def _rows(path, columns, filter=None):
    for batch in _batches(_dataset(path), columns, filter):
        yield from batch.to_pylist()


def _queues_compare(found, out_dir):
    recounted = {}
    for row in _rows(f"{out_dir}/stats", ["queue", "state", "count"]):
        recounted.setdefault(row["queue"], {})[row["state"]] = row["count"]
    shown = {
        s.queue: {state: n for state, n in s.counts.items() if n} for s in QueueStat.objects.all()
    }
    for queue in sorted(set(recounted) | set(shown)):
        if shown.get(queue, {}) != recounted.get(queue, {}):
            found.add("queue", queue, shown.get(queue, {}), recounted.get(queue, {}))


def _groups_compare(found, out_dir):
    indexed = pc.field("indexed") & (pc.field("group_id") != "")
    recounted = {}
    for row in _rows(f"{out_dir}/rows", ["group_id", "state"], indexed):
        states = recounted.setdefault(row["group_id"], {})
        states[row["state"]] = states.get(row["state"], 0) + 1
    shown = {}
    for fingerprint, states, count, ndlv, wait in FailureGroup.objects.values_list(
        "fingerprint", "states", "count", "ndlv", "wait"
    ):
        states = {state: n for state, n in states.items() if n}
        shown[fingerprint] = states
        # The totals beside the states are shown too: the group list ranks by them.
        totals = {"count": count, "ndlv": ndlv, "wait": wait}
        expected = {
            "count": sum(states.values()),
            "ndlv": states.get("NDLV", 0),
            "wait": states.get("WAIT", 0),
        }
        if totals != expected:
            found.add("group totals", fingerprint, totals, expected)
    for fingerprint in sorted(set(recounted) | set(shown)):
        if shown.get(fingerprint, {}) != recounted.get(fingerprint, {}):
            found.add(
                "group", fingerprint, shown.get(fingerprint, {}), recounted.get(fingerprint, {})
            )


def _hour_key(queue, hour, flow):
    return f"{queue} {hour:%Y-%m-%d %H}:00 {flow}"


def _flows_compare(found, out_dir):
    recounted = {
        _hour_key(r["queue"], r["hour"], r["flow"]): r["count"]
        for r in _rows(f"{out_dir}/inflow", ["queue", "hour", "flow", "count"])
    }
    shown = {
        _hour_key(queue, hour, flow): count
        for queue, hour, flow, count in QuarantineInflow.objects.exclude(count=0).values_list(
            "queue", "hour", "flow", "count"
        )
    }
    for key in sorted(set(recounted) | set(shown)):
        if shown.get(key, 0) != recounted.get(key, 0):
            found.add("flow", key, shown.get(key, 0), recounted.get(key, 0))


INDEX_SCHEMA = pa.schema(
    [
        ("message_id", pa.string()),
        ("state", pa.string()),
        ("queue", pa.string()),
        ("group_id", pa.string()),
        ("delivery_count", pa.int64()),
        ("candidate", pa.bool_()),
    ]
)
_FETCH = 10_000


def _index_shown():
    """The index's rows, INDEX_SCHEMA's columns, as an arrow table (read in batches)."""
    q = connection.ops.quote_name
    own = {f.column for f in MessageIndex._meta.local_concrete_fields}
    columns = ", ".join(f"{'i' if name in own else 's'}.{q(name)}" for name in INDEX_SCHEMA.names)
    batches = []
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {columns} FROM {q(MessageIndex._meta.db_table)} i "  # noqa: S608
            f"JOIN {q(MessageState._meta.db_table)} s ON s.{q('message_id')} = i.{q('message_id')}"
        )
        while rows := cursor.fetchmany(_FETCH):
            values = list(zip(*rows, strict=True))
            values[-1] = [bool(v) for v in values[-1]]  # SQLite answers 0 and 1
            arrays = [pa.array(v, type=f.type) for v, f in zip(values, INDEX_SCHEMA, strict=True)]
            batches.append(pa.RecordBatch.from_arrays(arrays, schema=INDEX_SCHEMA))
    return pa.Table.from_batches(batches, schema=INDEX_SCHEMA)


def _index_compare(found, out_dir):
    recounted = (
        _dataset(f"{out_dir}/rows")
        .to_table(columns=INDEX_SCHEMA.names, filter=pc.field("indexed"))
        .cast(INDEX_SCHEMA)
    )
    shown = _index_shown()
    key = ["message_id"]
    for row in recounted.join(shown, key, join_type="left anti").to_pylist():
        found.add("index", row["message_id"], None, {c: row[c] for c in INDEX_CHECKED})
    for row in shown.join(recounted, key, join_type="left anti").to_pylist():
        found.add("index", row["message_id"], {c: row[c] for c in INDEX_CHECKED}, None)
    both = recounted.join(shown, key, join_type="inner", right_suffix="_shown")
    if not both.num_rows:
        return
    differ = None
    for column in INDEX_CHECKED:
        same = pc.equal(both[column], both[f"{column}_shown"]).fill_null(False)
        unequal = pc.invert(same)
        differ = unequal if differ is None else pc.or_(differ, unequal)
    for row in both.filter(differ).to_pylist():
        found.add(
            "index",
            row["message_id"],
            {c: row[f"{c}_shown"] for c in INDEX_CHECKED},
            {c: row[c] for c in INDEX_CHECKED},
        )


def counts_verify_scheduled():
    """The scheduler's check: it repairs what it finds unless COUNTS_VERIFY_REPAIR is off."""
    return counts_verify(repair=settings.COUNTS_VERIFY_REPAIR, actor="system")
