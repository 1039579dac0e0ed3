"""Read models kept in step by a writer that knows exactly what it changed: an administrator's
decision moves each message of a chunk from one state (and queue) to another, and nothing else
about it, so its rows, its failure groups' counts and its queues' counts are updated in the
chunk's own transaction. The console shows a bulk decision as it goes, and the Spark refresh has
no need to fold those commits again (console.lake's `views_applied`).

The rows come out as the refresh would make them from the same events (a test holds them to it).
A chunk's ids are staged once in a temporary table, then each change is one statement.
"""

import contextlib
import io
import json
from collections import Counter

import pyarrow.compute as pc
import pyarrow.csv as pacsv
from django.db import connection
from django.utils import timezone

from console.readmodels.models import FailureGroup, MessageIndex, QueueStat

STAGED = "decided_messages"


def _q(name):
    return connection.ops.quote_name(name)


@contextlib.contextmanager
def decided_staged(decided):
    """Stage the (message_id, to_state) columns of a chunk's table in a temporary table for the
    duration; yields its name. COPY on PostgreSQL, one JSON parameter on SQLite."""
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {STAGED}")
        cursor.execute(
            f"CREATE TEMPORARY TABLE {STAGED} "
            "(message_id varchar(200) PRIMARY KEY, to_state varchar(8))"
        )
        rows = decided.select(["message_id", "to_state"])
        if connection.vendor == "postgresql":
            buffer = io.BytesIO()
            pacsv.write_csv(rows, buffer, pacsv.WriteOptions(include_header=False))
            with cursor.copy(f"COPY {STAGED} (message_id, to_state) FROM STDIN (FORMAT csv)") as c:
                c.write(buffer.getvalue())
        else:
            # One statement with the rows as one JSON parameter: SQLite unpacks it in C, several
            # times faster than an executemany of 10,000 inserts.
            cursor.execute(
                f"INSERT INTO {STAGED} (message_id, to_state) "  # noqa: S608
                "SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') "
                "FROM json_each(%s)",
                [json.dumps(list(zip(*rows.to_pydict().values(), strict=True)))],
            )
        try:
            yield STAGED
        finally:
            cursor.execute(f"DROP TABLE IF EXISTS {STAGED}")


def read_models_apply(*, decided, staged, at, reset=False, target_queue="", body=None):
    """`decided`: a table (message_id, from_queue, from_state, queue, to_state) of one chunk,
    staged by `decided_staged`. `reset`: a reprocess (R13: count reset, candidate cleared);
    `body`: an edited body's new version as {"body_version", "body_size", "body_path"} (one
    message). Call inside the chunk's transaction."""
    index = _q(MessageIndex._meta.db_table)
    mid, group, state = _q("message_id"), _q("group_id"), _q("state")
    with connection.cursor() as cursor:
        # The chunk's rows drive the join, each finding its index row by primary key: SQLite
        # would otherwise scan the whole index table (CROSS JOIN fixes its join order;
        # PostgreSQL plans it the same either way).
        cursor.execute(
            f"SELECT i.{group}, i.{state}, d.to_state, COUNT(*) FROM {staged} d "  # noqa: S608
            f"CROSS JOIN {index} i WHERE i.{mid} = d.message_id AND i.{group} <> '' "
            f"GROUP BY i.{group}, i.{state}, d.to_state"
        )
        groups = Counter()
        for group_id, old, new, n in cursor.fetchall():
            groups[(group_id, old)] -= n
            groups[(group_id, new)] += n
        for to_state in sorted(pc.unique(decided.column("to_state")).to_pylist()):
            changes = {"state": to_state, "next_attempt_at": None, "updated_at": at}
            if reset:
                changes |= {"delivery_count": 0, "candidate": False}
                if target_queue:
                    changes["queue"] = target_queue
                if body is not None:
                    changes |= body
            fields = [MessageIndex._meta.get_field(name) for name in changes]
            sets = ", ".join(f"{_q(f.column)} = %s" for f in fields)
            values = [f.get_db_prep_save(changes[f.name], connection) for f in fields]
            cursor.execute(
                f"UPDATE {index} SET {sets} WHERE {mid} IN "  # noqa: S608
                f"(SELECT message_id FROM {staged} WHERE to_state = %s)",
                [*values, to_state],
            )
    _groups_move(groups)
    queues = Counter()
    moves = decided.group_by(["from_queue", "from_state", "queue", "to_state"]).aggregate(
        [("message_id", "count")]
    )
    for move in moves.to_pylist():
        queues[(move["from_queue"], move["from_state"])] -= move["message_id_count"]
        queues[(move["queue"], move["to_state"])] += move["message_id_count"]
    _queues_move(queues)


def _moved(counts, deltas):
    counts = dict(counts)
    for state, delta in deltas.items():
        counts[state] = counts.get(state, 0) + delta
    # As the refresh counts them: only states that hold messages.
    return {state: n for state, n in counts.items() if n > 0}


def _by_key(deltas):
    out = {}
    for (key, state), delta in deltas.items():
        if delta:
            out.setdefault(key, {})[state] = delta
    return out


def _groups_move(deltas):
    by_group = _by_key(deltas)
    for group in FailureGroup.objects.select_for_update().filter(fingerprint__in=list(by_group)):
        group.states_set(_moved(group.states, by_group[group.fingerprint]))
        group.save(update_fields=["states", "ndlv", "wait"])


def _queues_move(deltas):
    by_queue = _by_key(deltas)
    now = timezone.now()
    existing = QueueStat.objects.select_for_update().filter(queue__in=list(by_queue))
    for stat in existing:
        stat.counts = _moved(stat.counts, by_queue.pop(stat.queue))
        stat.updated_at = now
        stat.save(update_fields=["counts", "updated_at"])
    QueueStat.objects.bulk_create(
        [QueueStat(queue=q, counts=_moved({}, d), updated_at=now) for q, d in by_queue.items()]
    )
