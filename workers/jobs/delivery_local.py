"""A small delivery run without Spark (issue 11: "a trickle is delivered at once").

The same run as workers.jobs.delivery, in the calling process with pyarrow: the same claims file,
the same claim events (committed by `on_claimed` before any handler runs, R1), the same engine
(workers.engine.runner.deliver_batches, which isolates handlers in forked children: R7, R8, R10)
over one partition in (queue, enqueued_at, message_id) order (so R11's "in a row" holds), the same
outcome file and summary (R9's quarantined, R11's streaks). Only R6's ending of a conversation,
which may reach any message of the lake, still goes to Spark, after the handlers ran, as the
Spark job does it.

extract: `due_rows` folds the open snapshot's rows that may be due, and every row of the events
  after it, into the due messages; `write_bodies` reads their message rows by id.
transform: `claims_table` (the due rows as claims, marked as the poison list says).
load: the claims, their DLNG events, the outcome events.

No Django here: the task passes paths and parameters and records the commits."""

import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from workers.engine import states as S
from workers.engine.runner import deliver_batches
from workers.engine.timings import times_read
from workers.jobs.delivery import (
    CLAIM_COLUMNS,
    DeliveryParams,
    DeliveryResult,
    record_claims,
    run_context,
    summarize_run,
    write_bodies,
)
from workers.lake.schema import CLAIM_SCHEMA, EVENT_SCHEMA, MESSAGE_CONTENT_COLUMNS
from workers.lake.store import conform, parquet_files

SAME_BODY = "same body as a poisoned message: "
# Above this many events after the snapshot (a fresh lake's first big ingest, say), a run is a
# Spark job without looking: reading them here would cost more than the job saves.
SCAN_MAX_EVENTS = 200_000
# What a claim carries of its state row (the stacks, most of a quarantined row's bytes, are not).
_READ = [f.name for f in CLAIM_SCHEMA]


def _read(directories, filter=None):
    """The claims' columns of committed events-like directories (events, state or open
    snapshots) in the ledger's layout, whoever wrote them (Spark's timestamps included)."""
    tables = []
    for directory in directories:
        for path in parquet_files(directory):
            table = pads.dataset(path, format="parquet").to_table(columns=_READ, filter=filter)
            if table.num_rows:
                tables.append(conform(table, EVENT_SCHEMA))
    return pa.concat_tables(tables) if tables else EVENT_SCHEMA.empty_table()


def _rows(directories):
    """Rows in committed directories, from the Parquet footers alone."""
    return sum(
        pq.ParquetFile(path).metadata.num_rows
        for directory in directories
        for path in parquet_files(directory)
    )


def latest(events: pa.Table) -> pa.Table:
    """Each message's latest row by (epoch, step), as workers.jobs.state.fold_state."""
    if events.num_rows == 0:
        return events
    ordered = events.sort_by([("message_id", "ascending"), ("epoch", "ascending"),
                              ("step", "ascending")])  # fmt: skip
    ids = ordered.column("message_id")
    n = ordered.num_rows
    last = pc.not_equal(ids.slice(0, n - 1), ids.slice(1))
    return ordered.filter(pa.concat_arrays([last.combine_chunks(), pa.array([True])]))


def due_rows(snapshot_paths, event_paths, *, queues, now):
    """The state of the due messages of `queues` (TBDL, or WAIT and due by `now`), as
    workers.jobs.delivery.due_state finds it: of the snapshot, only the rows that may be due and
    those of the messages the events after it touch are read (a row the snapshot holds in another
    state may still be the latest of its message, by (epoch, step)). None when there are more
    than SCAN_MAX_EVENTS events after the snapshot."""
    if _rows(event_paths) > SCAN_MAX_EVENTS:
        return None
    events = _read(event_paths)
    touched = pc.unique(events.column("message_id"))
    field = pc.field
    maybe_due = field("to_state").isin([S.TBDL, S.WAIT]) & field("queue").isin(list(queues))
    snapshot = _read(snapshot_paths, filter=maybe_due | field("message_id").isin(touched))
    state = latest(pa.concat_tables([snapshot, events]))
    is_due = pc.and_(
        pc.is_in(state.column("queue"), pa.array(list(queues), pa.string())),
        pc.or_kleene(
            pc.equal(state.column("to_state"), S.TBDL),
            pc.and_kleene(
                pc.equal(state.column("to_state"), S.WAIT),
                pc.less_equal(
                    state.column("next_attempt_at"), pa.scalar(now, EVENT_SCHEMA.field("at").type)
                ),
            ),
        ),
    )
    return state.filter(pc.fill_null(is_due, False))


def claims_table(due: pa.Table, bodies: pa.Table, params, body_match_queues) -> pa.Table:
    """The due rows as claims (CLAIM_SCHEMA and `poison_reason`), as the Spark job writes them:
    R9's verdict by id, or by body hash on queues that match bodies."""
    by_id = dict(params.poison_ids)
    by_hash = dict(params.poison_hashes) if body_match_queues else {}
    hashes = {}
    if by_hash:
        for row in bodies.select(["message_id", "version", "body_sha256"]).to_pylist():
            hashes[(row["message_id"], row["version"])] = row["body_sha256"]
    reasons = []
    for mid, queue, version in zip(
        due.column("message_id").to_pylist(),
        due.column("queue").to_pylist(),
        due.column("body_version").to_pylist(),
        strict=True,
    ):
        reason = by_id.get(mid)
        if reason is None and queue in body_match_queues:
            found = by_hash.get(hashes.get((mid, version)))
            reason = SAME_BODY + found if found is not None else None
        reasons.append(reason)
    n = due.num_rows
    columns = {name: due.column(name) for name in CLAIM_COLUMNS if name in due.column_names}
    columns |= {
        "from_state": due.column("to_state"),
        "at": pa.repeat(pa.scalar(params.now, CLAIM_SCHEMA.field("at").type), n),
        "actor": pa.nulls(n, pa.string()),
        "run_id": pa.repeat(pa.scalar(params.run_id), n),
    }
    table = pa.table({f.name: columns[f.name].cast(f.type) for f in CLAIM_SCHEMA})
    return table.append_column("poison_reason", pa.array(reasons, pa.string()))


def _write(table, directory, schema=None):
    os.makedirs(directory)
    tmp = os.path.join(directory, ".part-00000.parquet.tmp")
    pq.write_table(table if schema is None else table.cast(schema), tmp, compression="zstd")
    os.replace(tmp, os.path.join(directory, "part-00000.parquet"))


def _deliverable(claims: pa.Table, bodies: pa.Table) -> pa.Table:
    """Claims joined to the message version each one delivers (workers.jobs.delivery
    .with_bodies), in the order one partition of the Spark job delivers them."""
    content = bodies.select(["message_id", "version", *MESSAGE_CONTENT_COLUMNS]).rename_columns(
        ["message_id", "body_version", *MESSAGE_CONTENT_COLUMNS]
    )
    joined = claims.join(content, keys=["message_id", "body_version"], join_type="inner")
    joined = joined.rename_columns(["state" if c == "to_state" else c for c in joined.column_names])
    return joined.sort_by(
        [("queue", "ascending"), ("enqueued_at", "ascending"), ("message_id", "ascending")]
    )


def run_delivery_local(params: DeliveryParams, due: pa.Table, *, on_claimed=None, spark=None):
    """Deliver `due` (due_rows) as workers.jobs.delivery.run_delivery would. `spark`: a callable
    giving a Spark session, called only when a message's conversation must be ended (R6)."""
    ctx = run_context(params)
    policies = ctx.policies
    result = DeliveryResult()
    queues = {q for q in params.queues if q in policies and policies[q].enabled}
    due = due.filter(pc.is_in(due.column("queue"), pa.array(sorted(queues), pa.string())))
    if due.num_rows == 0:
        return result
    bodies_path = os.path.join(params.scratch_path, "bodies")
    write_bodies(params.message_paths, sorted(due.column("message_id").to_pylist()), bodies_path)
    bodies = pq.read_table(bodies_path)
    body_match_queues = {q for q, p in policies.items() if p.poison_match == "id_or_body"}
    claims = claims_table(due, bodies, params, body_match_queues)
    # Claims are on disk before any handler runs (R7), and the run delivers exactly them.
    _write(claims, params.claims_path)
    result.claimed = claims.num_rows
    record_claims(params, result, on_claimed)
    rows = _deliverable(pq.read_table(params.claims_path), bodies)
    # An isolation batch never spans two Arrow batches (as in the Spark job).
    batches = rows.to_batches(max_chunksize=max(10_000, params.max_batch))
    outcome = [t.cast(EVENT_SCHEMA) for t in deliver_batches(batches, ctx, partition=0)]
    _write(pa.concat_tables(outcome) if outcome else EVENT_SCHEMA.empty_table(), params.events_path)
    result.handler_times = times_read(ctx.timings_dir).as_dict()
    summarize_run(params.events_path, policies, result)
    if result.outcomes.get(S.ENDED):
        from workers.jobs.delivery import end_conversations_of_run

        end_conversations_of_run(spark(), params, result)
    return result
