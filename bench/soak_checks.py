"""What the soak (bench/soak.py) sends and what it checks: its queues and messages, each message's
expected end by its queue's policy and its handler's behaviour (bench/soak_handlers.py), the
lake's ledger read from the outside with pyarrow, and the invariants.

Each check returns a Check: a name, PASS or FAIL, a line of figures and a few offending ids."""

import json
import random
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench.soak_handlers import calls_read

ROOT = Path(__file__).resolve().parent.parent

ORDERS, INVOICES, PARKING = "soak-orders", "soak-invoices", "soak-parking"
HANDLER = "bench.soak_handlers.scripted"
# The behaviours of bench/soak_handlers.py and their shares of the load.
MIX = (("ok", 0.82), ("t2", 0.08), ("t", 0.04), ("p", 0.057), ("c", 0.003))
# Of the messages, this share goes to the orders queue; the rest to invoices.
ORDERS_SHARE = 0.6
# Figures and lists keep this many ids as examples.
EXAMPLES = 10


# --- The soak's queues and messages ---------------------------------------------------------------


def queues_define(calls_dir):
    """The soak's queues, as `manage.py load_queues` would load them (console.queues.services):
    - orders: quarantine after 4 failed deliveries, a permanent failure quarantined (R3-R6);
    - invoices: after 3 failed deliveries moved to queue parking, a permanent failure returned to
      its sender (R4 queue:<name>, R6 return_to_sender);
    - parking: an exception queue whose handler stores whatever it is given.
    Retries come back after seconds, not minutes, so that the soak settles soon after its load."""
    from console.queues.services import queues_load

    options = {"record_to": str(calls_dir)}
    queues = [
        {
            "name": PARKING,
            "handler": HANDLER,
            "handler_options": {**options, "accept_all": True},
            "backoff_delays": [1, 2],
            "periodic_interval": 30,
        },
        {
            "name": ORDERS,
            "handler": HANDLER,
            "handler_options": options,
            "max_failed_deliveries": 4,
            "exception_destination": "quarantine",
            "on_permanent": "quarantine",
            "backoff_delays": [1, 2, 4],
            "periodic_interval": 30,
        },
        {
            "name": INVOICES,
            "handler": HANDLER,
            "handler_options": options,
            "max_failed_deliveries": 3,
            "exception_destination": f"queue:{PARKING}",
            "on_permanent": "return_to_sender",
            "backoff_delays": [1, 2],
            "periodic_interval": 30,
        },
    ]
    return queues_load(data={"queues": queues}, actor="soak")


@dataclass(frozen=True)
class Planned:
    id: str
    queue: str
    do: str

    def record(self, n):
        body = {"n": n, "do": self.do, "sku": f"SKU-{n % 500:05d}", "qty": 1 + n % 4}
        return {
            "id": self.id,
            "queue": self.queue,
            "body": json.dumps(body, separators=(",", ":")),
            "content_type": "application/json",
            "sender": "shop@example.test",
        }


def plan(count, *, seed=29, mix=MIX, prefix="soak"):
    """`count` messages, the same for the same seed: each a queue and a behaviour. Bodies are
    unique (a poison match by body would otherwise quarantine every message like a crasher)."""
    rng = random.Random(seed)
    names, weights = zip(*mix, strict=True)
    return [
        Planned(
            id=f"{prefix}-{n:06d}",
            queue=ORDERS if rng.random() < ORDERS_SHARE else INVOICES,
            do=rng.choices(names, weights)[0],
        )
        for n in range(count)
    ]


# --- The lake, read from the outside --------------------------------------------------------------

# The events' columns (workers.lake.schema EVENT_SCHEMA) that no check reads, left unread: the
# stacks above all would weigh on the soak's memory.
LEDGER_UNREAD = (
    "batch_limit",
    "next_attempt_at",
    "body_version",
    "exception_type",
    "stack",
    "queue_streak",
)


def _read_files(directories, columns):
    """The `columns` of the events-like rows of committed directories, whoever wrote them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from workers.lake.schema import EVENT_SCHEMA
    from workers.lake.store import conform, parquet_files

    schema = pa.schema([EVENT_SCHEMA.field(c) for c in columns])
    tables = []
    for directory in directories:
        for path in parquet_files(directory):
            table = pq.read_table(path, columns=columns)
            tables.append(conform(table, schema))
    return pa.concat_tables(tables) if tables else schema.empty_table()


def _retrying(read):
    # A compaction may swap the directories out between the catalog's read and the files'.
    for _ in range(4):
        try:
            return read()
        except FileNotFoundError:
            time.sleep(1)
    return read()


def ledger():
    """{message id: [event dict]}: every event of every message, oldest first, from the
    history generations and the events commits after them (as console.delivery.selectors reads
    one message's history)."""
    from console.lake.selectors import lake_history_inputs
    from console.lake.services import lake
    from workers.lake.schema import EVENT_SCHEMA

    columns = [name for name in EVENT_SCHEMA.names if name not in LEDGER_UNREAD]

    def read():
        inputs = lake_history_inputs()
        store = lake()
        directories = [store.path(g.path) for g in inputs.generations]
        directories += [store.path(p) for _, p, _ in inputs.events]
        return _read_files(directories, columns)

    table = _retrying(read)
    table = table.sort_by(
        [("message_id", "ascending"), ("epoch", "ascending"), ("step", "ascending")]
    )
    history = {}
    for row in table.to_pylist():
        history.setdefault(row["message_id"], []).append(row)
    return history


def current_states():
    """{message id: state} from the newest state snapshot and the events after it: the cheap
    read the soak polls while it waits."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from console.lake.selectors import lake_state_inputs
    from console.lake.services import lake

    def read():
        inputs = lake_state_inputs()
        store = lake()
        directories = [store.path(p) for p in [*inputs.snapshot_paths, *inputs.event_paths]]
        return _read_files(directories, ["message_id", "epoch", "step", "to_state"])

    table = _retrying(read)
    if not table.num_rows:
        return {}
    table = table.sort_by(
        [("message_id", "ascending"), ("epoch", "ascending"), ("step", "ascending")]
    )
    ids = table.column("message_id")
    # The last row of each id: where the next row's id differs.
    last = pc.not_equal(ids.slice(0, len(ids) - 1), ids.slice(1))
    latest = table.filter(pa.concat_arrays([*last.chunks, pa.array([True])]))
    return dict(
        zip(
            latest.column("message_id").to_pylist(),
            latest.column("to_state").to_pylist(),
            strict=True,
        )
    )


# --- The invariants -------------------------------------------------------------------------------


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    examples: list = field(default_factory=list)

    def row(self):
        return {"soak": self.name, "result": "PASS" if self.ok else "FAIL", "detail": self.detail}


@dataclass
class Facts:
    """What the checks read: the plan, what the product took in, its ledger and the handlers'
    records of their successful calls."""

    planned: dict  # id -> Planned
    accepted: set
    history: dict  # id -> [event], oldest first
    calls: dict  # id -> [(queue, attempt, time)]

    @classmethod
    def gather(cls, planned, accepted, calls_dir):
        return cls(
            planned={p.id: p for p in planned},
            accepted=set(accepted),
            history=ledger(),
            calls=calls_read(calls_dir),
        )

    def final(self, message_id):
        events = self.history.get(message_id)
        return events[-1] if events else None


def _examples(ids):
    return sorted(set(ids))[:EXAMPLES]


def _recoveries(events):
    """The events a sweeper wrote for a run that died (a killed worker): R7 by lease."""
    return [e for e in events if (e["actor"] or "").startswith("sweeper/")]


def _blacklisted_by_a_dead_run(last):
    """NDLV by R7's second strike, the strike a sweeper's: the message was in flight in two runs
    that died, the second time alone. R7 allows it for any message; it is the kills', not a
    crasher's."""
    from workers.engine import states as S

    return (
        last["to_state"] == S.NDLV
        and (last["reason"] or "").startswith(S.REASON_BLACKLISTED)
        and (last["actor"] or "").startswith("sweeper/")
    )


def check_nothing_lost(f):
    from workers.engine import states as S

    missing = [m for m in f.accepted if m not in f.history]
    unborn = [m for m in f.accepted if m in f.history and f.history[m][0]["from_state"] is not None]
    bad = missing + unborn
    states = Counter(f.final(m)["to_state"] for m in f.accepted if m in f.history)
    detail = f"{len(f.accepted) - len(missing):,} of {len(f.accepted):,} accepted ids found"
    if unborn:
        detail += f"; {len(unborn)} without their ingest event"
    detail += " (" + ", ".join(f"{s} {states[s]:,}" for s in S.STATES if states[s]) + ")"
    return Check("nothing lost (R14)", not bad, detail, _examples(bad))


def check_delivered_after_success(f):
    from workers.engine import states as S

    delivered = [m for m in f.history if f.final(m)["to_state"] == S.DLVD]
    bad = [
        m
        for m in delivered
        if not any(queue == f.final(m)["queue"] for queue, _, _ in f.calls.get(m, ()))
    ]
    return Check(
        "no delivery without a successful call",
        not bad,
        f"{len(delivered) - len(bad):,} of {len(delivered):,} DLVD messages have a recorded "
        "success in their queue",
        _examples(bad),
    )


def check_no_success_lost(f):
    from workers.engine import states as S

    succeeded = [m for m in f.calls if m in f.history]
    excused, bad = [], []
    for m in succeeded:
        last = f.final(m)
        if last["to_state"] == S.DLVD:
            continue
        (excused if _blacklisted_by_a_dead_run(last) else bad).append(m)
    unknown = [m for m in f.calls if m not in f.history]
    detail = f"{len(succeeded) - len(bad) - len(excused):,} of {len(succeeded):,} messages "
    detail += "with a recorded success are DLVD"
    if excused:
        detail += f"; {len(excused)} NDLV by R7 after two runs that died holding them"
    if unknown:
        detail += f"; {len(unknown)} successes of ids the lake does not know"
    return Check("no success lost", not bad and not unknown, detail, _examples(bad + unknown))


def _flagged_by_a_crash(events):
    """Made a blacklist candidate by a batch-mate's crash (R8) at least once, not by a kill."""
    before = False
    for e in events:
        if e["candidate"] and not before and not (e["actor"] or "").startswith("sweeper/"):
            return True
        before = e["candidate"]
    return False


def check_crashers_isolated(f):
    """R7, R8, R10: every crasher ends NDLV blacklisted; a crash is charged to the crasher only
    (no one else's history says "fatal error in handler"); no batch-mate is quarantined (but by
    R7 for being held by two runs that died: the kills', counted apart)."""
    from workers.engine import states as S

    crashers = [m for m, p in f.planned.items() if p.do == "c" and m in f.history]
    not_blacklisted = [
        m
        for m in crashers
        if not (
            f.final(m)["to_state"] == S.NDLV
            and (f.final(m)["reason"] or "").startswith(S.REASON_BLACKLISTED)
        )
    ]
    others = [m for m, p in f.planned.items() if p.do != "c" and m in f.history]
    charged = [
        m for m in others if any(S.REASON_FATAL in (e["reason"] or "") for e in f.history[m])
    ]
    flagged = [m for m in others if _flagged_by_a_crash(f.history[m])]
    quarantined, by_kills = [], []
    for m in others:
        last = f.final(m)
        if last["to_state"] == S.NDLV and (last["reason"] or "").startswith(S.REASON_BLACKLISTED):
            (by_kills if _blacklisted_by_a_dead_run(last) else quarantined).append(m)
    bad = not_blacklisted + charged + quarantined
    detail = (
        f"{len(crashers) - len(not_blacklisted)} of {len(crashers)} crashers blacklisted; "
        f"{len(flagged)} batch-mates flagged, {len(quarantined)} of them quarantined, "
        f"{len(charged)} charged with a crash"
    )
    if by_kills:
        detail += f"; {len(by_kills)} others NDLV by R7 (held by two runs that died)"
    return Check("crashers isolated (R7, R8, R10)", not bad, detail, _examples(bad))


def expected(planned):
    """(queue, state, reason prefix) a message ends in after the soak, by its queue's policy
    and its handler's behaviour; reprocessing changes none (the same behaviour, the same end)."""
    from workers.engine import states as S

    if planned.do in ("ok", "t2"):
        return planned.queue, S.DLVD, ""
    if planned.do == "c":
        return planned.queue, S.NDLV, S.REASON_BLACKLISTED
    if planned.queue == ORDERS:
        if planned.do == "t":
            return ORDERS, S.NDLV, S.REASON_MAX_FAILED
        return ORDERS, S.NDLV, S.REASON_PERMANENT
    if planned.do == "t":
        return PARKING, S.DLVD, ""
    return INVOICES, S.ENDED, S.REASON_RETURNED


def check_policies(f):
    """Each message where its queue's policy sends it (R3, R4, R6; R5's retries end delivered).
    A message the kills charged (R7 counts a dead run's hold as a failed attempt, R2) may reach
    its maximum of failed deliveries sooner, or be blacklisted: such ends are the kills', counted
    apart, when a sweeper's recovery is in its history."""
    from workers.engine import states as S

    by_outcome = Counter()
    excused, bad = [], []
    for m, p in f.planned.items():
        last = f.final(m)
        if last is None:
            continue  # nothing lost says so
        queue, state, reason = expected(p)
        by_outcome[(p.do, p.queue)] += 1
        if (last["queue"], last["to_state"]) == (queue, state) and (
            last["reason"] or ""
        ).startswith(reason):
            continue
        charged_by_kills = _recoveries(f.history[m]) and (
            _blacklisted_by_a_dead_run(last)
            or (last["reason"] or "").startswith(S.REASON_MAX_FAILED)
            or (last["queue"] == PARKING and last["to_state"] == S.DLVD)
        )
        (excused if charged_by_kills else bad).append(m)
    detail = f"{len(f.planned) - len(bad) - len(excused):,} as their policy says"
    if excused:
        detail += f"; {len(excused)} ended sooner by the kills' charges (R2, R7)"
    return Check("each failure where its policy sends it (R3-R6)", not bad, detail, _examples(bad))


def check_duplicates(f):
    """At-least-once: a second successful call only for a message held by a run that died
    after its handler had succeeded."""
    duplicates = [m for m, c in f.calls.items() if len(c) > 1]
    unexplained = [m for m in duplicates if not _recoveries(f.history.get(m, []))]
    extra = sum(len(f.calls[m]) - 1 for m in duplicates)
    return Check(
        "second successes only after a kill",
        not unexplained,
        f"{len(duplicates):,} messages called successfully twice or more ({extra:,} extra "
        f"calls), {len(unexplained)} of them never held by a run that died",
        _examples(unexplained),
    )


def counts_verify_command(env):
    """manage.py counts_verify --json, as an operator runs it: (status, the check). A busy
    answer (decisions kept committing under it) is asked again."""
    for _ in range(6):
        done = subprocess.run(
            [sys.executable, "manage.py", "counts_verify", "--json"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode == 2:
            time.sleep(10)
            continue
        try:
            return json.loads(done.stdout)
        except json.JSONDecodeError:
            raise RuntimeError(
                f"counts_verify answered {done.returncode}:\n{done.stdout[-2000:]}\n"
                f"{done.stderr[-2000:]}"
            ) from None
    raise RuntimeError("counts_verify stayed busy")


def check_counts(f, env):
    """The console's counts: manage.py counts_verify clean (every count recounted from the lake
    by the product), and each queue's counts by state (the dashboard's, /api/v1/stats) equal to
    the ledger's, read here with pyarrow."""
    from console.readmodels.models import CountsCheck, QueueStat

    check = counts_verify_command(env)
    ledger_counts = Counter()
    for events in f.history.values():
        ledger_counts[(events[-1]["queue"], events[-1]["to_state"])] += 1
    shown = Counter()
    for stat in QueueStat.objects.all():
        for state, n in stat.counts.items():
            if n:
                shown[(stat.queue, state)] = n
    differ = {
        f"{q} {s}": (shown[(q, s)], ledger_counts[(q, s)])
        for q, s in sorted(set(shown) | set(ledger_counts))
        if shown[(q, s)] != ledger_counts[(q, s)]
    }
    periodic = Counter(
        CountsCheck.objects.exclude(actor="manage.py counts_verify").values_list(
            "status", flat=True
        )
    )
    ok = check["status"] == CountsCheck.CLEAN and not differ
    detail = (
        f"counts_verify {check['status']} ({check['messages']:,} messages, "
        f"{check['differences']} differences); dashboard per queue and state "
        + ("equal to the ledger" if not differ else f"differs: {differ} (shown, ledger)")
    )
    if periodic:
        detail += "; beat's checks during the soak: " + ", ".join(
            f"{s} {n}" for s, n in sorted(periodic.items())
        )
    return Check("counts equal to a recount", ok, detail, check["drift"][:EXAMPLES])


def check_no_stuck_work(lease_seconds):
    """Nothing left running or queued whose heartbeat (or, before its first beat, its start)
    is older than a lease: its worker died and nothing took it over. And every dead delivery
    run's messages recovered (R7)."""
    from datetime import timedelta

    from django.utils import timezone

    from console.decisions.models import ActionRequest
    from console.delivery.models import DeliveryRun
    from console.lake.models import CompactionRun
    from console.lakequery.models import LakeQuery
    from console.readmodels.models import CountsCheck, RefreshRun
    from console.retention.models import PurgeRun

    stale = timezone.now() - timedelta(seconds=lease_seconds)
    found = []
    for model, active in (
        (DeliveryRun, [DeliveryRun.RUNNING]),
        (RefreshRun, [RefreshRun.RUNNING]),
        (CompactionRun, [CompactionRun.RUNNING]),
        (CountsCheck, [CountsCheck.RUNNING]),
        (PurgeRun, list(PurgeRun.ACTIVE)),
        (LakeQuery, [LakeQuery.QUEUED, LakeQuery.RUNNING]),
        (ActionRequest, [ActionRequest.APPROVED, ActionRequest.RUNNING, ActionRequest.CANARY]),
    ):
        for row in model.objects.filter(status__in=active):
            beat = next(
                (
                    at
                    for name in ("heartbeat_at", "started_at", "created_at")
                    if (at := getattr(row, name, None)) is not None
                ),
                None,
            )
            if beat is None or beat < stale:
                found.append(f"{model.__name__} {row.id} {row.status} since {beat}")
    unrecovered = DeliveryRun.objects.filter(
        status__in=[DeliveryRun.CRASHED, DeliveryRun.FAILED], recovered=False
    ).count()
    if unrecovered:
        found.append(f"{unrecovered} dead delivery runs not recovered")
    runs = Counter(DeliveryRun.objects.values_list("status", flat=True))
    detail = "delivery runs: " + ", ".join(f"{s} {n:,}" for s, n in sorted(runs.items()))
    detail += f"; {len(found)} stuck" + (f": {found[:3]}" if found else "")
    return Check("no stuck work", not found, detail, found[:EXAMPLES])


def check_requests_done(made):
    from console.decisions.models import ActionRequest

    rows = ActionRequest.objects.all()
    statuses = Counter(r.status for r in rows)
    decided = sum(r.done for r in rows)
    bad = [f"request {r.id} {r.status}" for r in rows if r.status != ActionRequest.DONE]
    detail = f"{len(rows)} requests ({len(made)} answered 201), " + ", ".join(
        f"{s} {n}" for s, n in sorted(statuses.items())
    )
    detail += f"; {decided:,} messages reprocessed"
    return Check("every request done", not bad, detail, bad[:EXAMPLES])


def check_audit():
    from console.audit.selectors import audit_verify

    result = audit_verify()
    return Check(
        "the audit chain verifies",
        result.ok,
        f"{result.entries:,} entries, {len(result.problems)} problems",
        result.problems[:EXAMPLES],
    )
