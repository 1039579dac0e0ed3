"""Broker benchmarks (issues 13 and 32): every broker's dead letters drained and redriven by the
product, side by side in the same run with a bare client loop of that broker doing the same move.

For each broker (RabbitMQ, NATS JetStream, Redis Streams; BENCH_BROKERS="nats,redis" picks some),
three identical batches of N dead letters (default 100k, 200-byte bodies) are made the broker's
way (bench/broker_<kind>.py says how), then:

1. Drain: the first batch by the consumer the `sources` process runs (`source_consume`), from its
   start until every message is stored and acknowledged on the broker; the second by a bare loop
   of the broker's client that takes and acknowledges them without storing (the physical
   reference). Goal: the product at least half the bare loop's rate.
2. Redrive: the drained batch, quarantined by the intake handler (every broker's at once, and
   the read models refreshed: not timed), sent back by an approved "reprocess to its origin":
   from "approve" until the N are confirmed at the origin (queue depth, stream message count,
   XLEN); beside it a bare publish loop of N (confirms, JetStream acknowledgements, pipelined
   XADD) to the second batch's origin.
3. The floor, once per broker: the third batch, drained by the product (not timed) and
   quarantined with the first, reprocessed to a queue whose handler does nothing
   (workers.demo.handlers.noop), timed as a redrive is: our own decision and delivery path on
   the same messages (the same headers and properties through the lake, Arrow and the delivery
   children), without the broker. Each redrive is compared with it, wall time and CPU. Goal: at
   most 1.2 x the floor in both (what the broker adds). `bare_bound_cpu_ratio`, (floor + bare
   publish) / floor in CPU, is the least a redrive could reach if its sink cost only what the
   broker's own client and server cost in the bare publish loop.
   Beside it, once per database and first (it warms the path up), the seeded floor of earlier
   runs: N quarantined messages seeded as bench_decisions seeds them, reprocessed to the no-op
   handler. The floor, redrive and bare publish of each broker start once the servers are
   quiet (RabbitMQ writes on after confirming a burst), after WARM messages of the floor's
   batch were decided and delivered untimed (the first decision on a broker's messages takes a
   second longer than the next).
4. RabbitMQ's shovel moving N between two durable queues (the goal of issue 13), when RabbitMQ
   is benchmarked.
5. The drains' floor, once per database: the same N stored by `messages_ingest` with no broker
   at all, in the consumer's batches. A drain stores before it acknowledges, so no drain is
   faster: `store_bound_ratio` is the best drain/bare ratio any consumer could reach,
   `vs_store_floor` how close the drain comes to it. `cores_bound_ratio` is the best the drain
   could reach at its own CPU a message with every core busy.

Every timed phase also reports the CPU µs a message of every process involved
(bench.support.CpuMeter): this one's tree (with Spark's JVM and its Python workers, where the
delivery runs' handlers run, once started), the broker's server and, on PostgreSQL, the
database's (`servers_cpu_us_per_msg` is their part). The servers are shared with whatever else
runs on them. The drains all run before Spark starts, as the `sources` process has no JVM. A
broker that does not answer, or fails, gives a row saying so; the others are measured.

Runs on SQLite and then on PostgreSQL (bench.support.on_both_databases). BENCH_BROKER_MESSAGES
overrides N.
"""

import os
import threading
import time
import traceback
import uuid
from importlib import import_module

from bench.bench_decisions import _people, _seed, _shovel, _window
from bench.support import (
    POSTGRES_SERVER,
    CpuMeter,
    django_setup,
    fresh_state,
    on_both_databases,
    port_answers,
    rows_print,
    settled,
)

BODY = b"x" * 200
BROKERS = {
    "rabbitmq": "bench.broker_rabbitmq",
    "nats": "bench.broker_nats",
    "redis": "bench.broker_redis",
}
# As the RabbitMQ source was first benchmarked: half of it is the batch (consumers.py).
PREFETCH = BATCH = 5000
DRAIN_GOAL = 0.5
REDRIVE_GOAL = 1.2
POLL = 0.05
# A wait gives up after this many seconds a message (and a minute at least): a run that goes
# wrong ends with its error instead of hanging; never a measure of speed.
PATIENCE = 0.01
NOOP_HANDLER = "workers.demo.handlers.noop"
# The floor's batch holds this many more, decided before it is timed (_warm_up).
WARM = 100


def _wait(done, n, what):
    deadline = time.monotonic() + max(60, n * PATIENCE)
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not done in {max(60, n * PATIENCE):.0f} s")
        time.sleep(POLL)


def _kinds():
    chosen = os.environ.get("BENCH_BROKERS")
    kinds = [k.strip() for k in chosen.split(",") if k.strip()] if chosen else list(BROKERS)
    unknown = set(kinds) - set(BROKERS)
    if unknown:
        raise ValueError(f"BENCH_BROKERS: unknown broker(s) {', '.join(sorted(unknown))}")
    return kinds


# The product's batches: the source that drains each, and the queue it drains into.
SOURCES = {"p": "bench-{kind}", "f": "bench-{kind}-floor"}
DEAD = {"p": "bench-{kind}-dead", "f": "bench-{kind}-floor-dead"}


def _queue_file(broker):
    """The broker's sources (the product's batch and the floor's), their dead-letter queues, the
    redrive queue and the floor's no-op queue, as a queue file names them (docs/guides/)."""
    from console.queues.sources import INTAKE_HANDLER

    kind = broker.kind
    sources = [
        {
            "name": SOURCES[batch].format(kind=kind),
            "kind": kind,
            "url_env": broker.url_env,
            "queue": DEAD[batch].format(kind=kind),
            "redrive_queue": f"bench-{kind}-redrive",
            "prefetch": PREFETCH,
            "batch_size": BATCH,
            **broker.source(batch),
        }
        for batch in SOURCES
    ]
    return {
        "queues": [
            *({"name": DEAD[b].format(kind=kind), "handler": INTAKE_HANDLER} for b in DEAD),
            {
                "name": f"bench-{kind}-redrive",
                "handler": broker.sink,
                "handler_options": {"url_env": broker.url_env},
            },
            {"name": f"bench-{kind}-noop", "handler": NOOP_HANDLER},
        ],
        "sources": sources,
    }


# --- Drain ---------------------------------------------------------------------------------------


def _drain(broker, n, servers, batch="p"):
    """The product's consumer loop on a batch, timed until the source has recorded n stored and
    acknowledged (it records a batch after its acknowledgement)."""
    from console.ingest.consumers import source_consume
    from console.ingest.models import MessageKey
    from console.queues.models import BrokerSource

    name = SOURCES[batch].format(kind=broker.kind)
    source = BrokerSource.objects.get(name=name)
    stop = threading.Event()
    thread = threading.Thread(
        target=source_consume, args=(source,), kwargs={"stop": stop, "say": lambda line: None}
    )
    with CpuMeter(servers=servers) as timed:
        thread.start()
        try:
            _wait(
                lambda: (
                    BrokerSource.objects.filter(name=name).values_list("drained", flat=True)[0] >= n
                ),
                n,
                f"the {broker.title} drain",
            )
        finally:
            stop.set()
    thread.join()
    stored = MessageKey.objects.filter(queue=DEAD[batch].format(kind=broker.kind)).count()
    assert stored == n, stored
    assert broker.drained(batch, name), "the broker still holds dead letters"
    return timed


def _bare_drain(broker, n):
    with CpuMeter(servers=broker.servers) as timed:
        taken = broker.bare_drain(n)
    assert taken == n, taken
    return timed


def _drain_row(broker, n, db, product, bare, cores, stored):
    ratio = (n / product.seconds) / (n / bare.seconds)
    return {
        "benchmark": f"drain {n:,} dead letters from {broker.title} ({db})",
        "messages": n,
        **product.figures(n),
        "reference": f"bare loop: {broker.bare_drain_said}",
        **_prefixed("ref_", bare.figures(n)),
        "ratio": round(ratio, 2),
        # The most any drain that stores before it acknowledges could reach against the bare
        # loop (its rate if taking from the broker cost nothing), and the drain against that.
        "store_bound_ratio": round(bare.seconds / stored.seconds, 2),
        "vs_store_floor": round(stored.seconds / product.seconds, 2),
        # The best ratio the drain could reach on this machine at its CPU a message (the
        # servers' included) if it kept every core busy: beyond it, only less CPU helps.
        "cores_bound_ratio": round(bare.seconds / (product.cpu_seconds / cores), 2),
        "goal": f">= {DRAIN_GOAL} x the bare loop's rate",
        "goal_met": "yes" if ratio >= DRAIN_GOAL else "no",
        "cores": cores,
    }


STORE_FLOOR_QUEUE = "bench-store-floor"


def _store_floor(n, servers):
    """The same n stored with no broker at all: messages_ingest in the consumer's batches (half
    the prefetch), from records shaped as a drained dead letter's (the 200-byte body, a dozen
    headers). Every drain costs at least this, since nothing is acknowledged before it is
    stored: the drains' rates are bounded by it whatever the broker's client does."""
    from console.ingest.services import messages_ingest
    from console.queues.services import queues_load
    from console.queues.sources import INTAKE_HANDLER

    queues_load(data={"queues": [{"name": STORE_FLOOR_QUEUE, "handler": INTAKE_HANDLER}]})
    headers = {f"x-origin-{i}": f"origin value {i}" for i in range(12)}
    batch = BATCH // 2
    with CpuMeter(servers=servers) as timed:
        for start in range(0, n, batch):
            result = messages_ingest(
                records=[
                    {
                        "id": f"floor-{i}",
                        "queue": STORE_FLOOR_QUEUE,
                        "body": BODY,
                        "headers": headers,
                    }
                    for i in range(start, min(n, start + batch))
                ],
                source="bench:store-floor",
                errors_kept=None,
            )
            assert result.accepted == min(n, start + batch) - start, result.errors[:3]
    return timed


def _reference_row(benchmark, n, timed, goal, cores, **extra):
    """A row of one of the references the drains and redrives are compared with."""
    return {
        "benchmark": benchmark,
        "messages": n,
        **timed.figures(n),
        **extra,
        "goal": goal,
        "cores": cores,
    }


def _store_floor_row(n, db, stored, cores):
    return _reference_row(
        f"store {n:,} messages with no broker: the drains' floor ({db})",
        n,
        stored,
        "(reference: what every drain stores before it acknowledges)",
        cores,
    )


def _prefixed(prefix, figures):
    return {prefix + key: value for key, value in figures.items()}


# --- Redrive and its floor ----------------------------------------------------------------------


def _deliver(spark, queue, n):
    """Delivery runs of `queue` until n of its messages were delivered (or nothing is due): how
    many were."""
    from console.delivery.execution import delivery_run

    delivered = 0
    while delivered < n:
        run = delivery_run(queues=[queue], spark=spark)
        if run is None or not run.claimed:
            break
        delivered += (run.outcomes or {}).get("states", {}).get("DLVD", 0)
    return delivered


def _deliver_until_idle(spark, queues):
    from console.delivery.execution import delivery_run

    while True:
        run = delivery_run(queues=queues, spark=spark)
        if run is None or not run.claimed:
            return


def _refreshed(spark):
    """The read models up to date: a decision's filter reads them."""
    from console.readmodels.execution import read_models_refresh

    read_models_refresh(spark=spark)


def _vacuumed():
    """On PostgreSQL, the tables vacuumed and analysed, as autovacuum would have left them long
    before anyone decides (bench_decisions)."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")


def _request(people, filters, target, n, scope=None):
    """A "reprocess to `target`" request of the n quarantined messages `filters` select (or
    `scope` names)."""
    from console.decisions.services import Action, action_request_create

    request = action_request_create(
        actor=people["operator"],
        scope=scope or {"kind": "filter", "filters": filters},
        action=Action(kind="reprocess", target_queue=target),
        comment=f"bench: reprocess to {target}",
    )
    assert request.count == n, request.count
    return request


def _carry_out(people, spark, request, target, n, started):
    """Approve and execute `request`, then deliver `target`: the seconds from `started` (a
    perf_counter) to the end of the decision and to the end of the delivery runs, and how many
    the delivery runs delivered."""
    from console.decisions.execution import action_request_execute
    from console.decisions.services import action_request_approve

    action_request_approve(actor=people["approver"], request=request)
    request = action_request_execute(request_id=request.id, spark=spark)
    assert request.status == "done", request.status
    decided = time.perf_counter() - started
    delivered = _deliver(spark, target, n)
    return decided, time.perf_counter() - started, delivered


def _redrive(broker, people, spark, n, servers):
    """The drained batch, reprocessed to its origin: timed until the origin holds n more."""
    target = f"bench-{broker.kind}-redrive"
    request = _request(people, {"queue": f"bench-{broker.kind}-dead"}, target, n)
    before = broker.origin_count()
    with CpuMeter(servers=servers) as timed:
        decided = _carry_out(people, spark, request, target, n, timed.started_at())
        _wait(lambda: broker.origin_count() >= before + n, n, f"the {broker.title} redrive")
    assert broker.origin_count() == before + n, broker.origin_count()
    return timed, decided


def _bare_publish(broker, n):
    with CpuMeter(servers=broker.servers) as timed:
        sent = broker.bare_publish(n)
    assert sent == n, sent
    return timed


def _same_floor(broker, people, spark, n, servers):
    """The redrive's decision and delivery with a handler that does nothing, over the n messages
    of the floor's batch: drained as the redriven ones were, so they carry the same headers."""
    target = f"bench-{broker.kind}-noop"
    request = _request(people, {"queue": DEAD["f"].format(kind=broker.kind)}, target, n)
    with CpuMeter(servers=servers) as timed:
        decided = _carry_out(people, spark, request, target, n, timed.started_at())
    assert decided[2] == n, decided[2]
    return timed, decided


def _warm_up(broker, people, spark):
    """WARM of the floor's batch reprocessed to the no-op handler, not timed: the first decision
    and delivery on a broker's messages take a second longer than the next (Spark and the
    interpreter warming to their shape), and the floor that comes next must not pay for it."""
    from console.readmodels.models import MessageIndex
    from workers.engine.states import NDLV

    target = f"bench-{broker.kind}-noop"
    ids = MessageIndex.objects.filter(queue=DEAD["f"].format(kind=broker.kind), state=NDLV)
    selection = {"kind": "selection", "ids": list(ids.values_list("message_id", flat=True)[:WARM])}
    request = _request(people, None, target, WARM, scope=selection)
    _, _, delivered = _carry_out(people, spark, request, target, WARM, time.perf_counter())
    assert delivered == WARM, delivered


def _floor(people, spark, n, servers):
    """The redrive's decision and delivery with a handler that does nothing, over n quarantined
    messages seeded beside the drained ones (not timed)."""
    from console.lake.services import lake
    from console.queues.services import queues_load
    from console.readmodels.execution import read_models_refresh
    from console.readmodels.models import QueueStat

    queues_load(data={"queues": [{"name": "bench-floor", "handler": NOOP_HANDLER}]})
    _seed(lake(), n)
    # The drained batches' quarantine as well: every decision's filter reads the read models.
    _refreshed(spark)
    _vacuumed()
    request = _request(people, _window(0, n), "bench-floor", n)
    with CpuMeter(servers=servers) as timed:
        decided = _carry_out(people, spark, request, "bench-floor", n, timed.started_at())
    read_models_refresh(spark=spark)
    delivered = QueueStat.objects.get(queue="bench-floor").counts.get("DLVD", 0)
    assert delivered == n, delivered
    return timed, decided


def _redrive_row(broker, n, db, figures, seeded, cores):
    """The redrive against its broker's floor (the same messages to the no-op handler: the goal)
    and against the seeded floor (our path at its lightest, as earlier runs compared)."""
    redrive, floor, bare = figures["redrive"], figures["floor"], figures["bare_publish"]
    wall, cpu = redrive.seconds / floor.seconds, redrive.cpu_seconds / floor.cpu_seconds
    met = wall <= REDRIVE_GOAL and cpu <= REDRIVE_GOAL
    return {
        "benchmark": f"redrive {n:,} to {broker.title} ({db})",
        "messages": n,
        **redrive.figures(n),
        **_split(figures["decided"]),
        "reference": "the floor: the same messages to a no-op handler",
        **_prefixed("ref_", floor.figures(n)),
        **_prefixed("ref_", _split(figures["floor_decided"])),
        "ratio": round(wall, 2),
        "cpu_ratio": round(cpu, 2),
        "goal": f"<= {REDRIVE_GOAL} x the floor, wall and CPU",
        "goal_met": "yes" if met else "no",
        # The least any redrive could cost against its floor, in CPU: the floor plus the bare
        # publish loop of the same n (the broker's server included), as if the sink cost no
        # more than that loop.
        "bare_bound_cpu_ratio": round(
            (floor.cpu_seconds + bare.cpu_seconds) / floor.cpu_seconds, 2
        ),
        "seeded_ratio": round(redrive.seconds / seeded.seconds, 2),
        "seeded_cpu_ratio": round(redrive.cpu_seconds / seeded.cpu_seconds, 2),
        "bare": f"bare loop: {broker.bare_publish_said}",
        **_prefixed("bare_", bare.figures(n)),
        "cores": cores,
    }


def _split(decided):
    # Of `seconds`: to the end of the decision, and of the delivery runs.
    return {"decision_s": round(decided[0], 2), "delivered_s": round(decided[1], 2)}


def _floor_row(n, db, floor, decided, cores):
    return _reference_row(
        f"seeded floor: {n:,} seeded messages reprocessed to a no-op handler ({db})",
        n,
        floor,
        "(reference: our path at its lightest; the goal's floors are the brokers' own)",
        cores,
        **_split(decided),
    )


def _failed_row(broker_title, n, db, why):
    return {
        "benchmark": f"{broker_title}, {n:,} ({db})",
        "messages": n,
        "goal": "not measured",
        "goal_met": why,
    }


# --- The run -----------------------------------------------------------------------------------


class _Bench:
    """One database's run: the brokers that answer, their figures, the rows."""

    def __init__(self, n, db, cores, people):
        self.n, self.db, self.cores, self.people = n, db, cores, people
        self.db_servers = POSTGRES_SERVER if db == "postgresql" else ()
        self.brokers = {}  # kind -> broker object, while it is measured
        self.figures = {}  # kind -> {phase: CpuMeter}
        self.failed = {}  # kind -> why, for people
        self.tag = uuid.uuid4().hex[:6]

    def _attempt(self, kind, step):
        """Run step(); a broker that fails is reported, not the whole run."""
        try:
            step()
        except Exception as exc:
            traceback.print_exc()
            self.failed[kind] = f"failed: {exc.__class__.__name__}: {str(exc)[:300]}"

    def drains(self, kinds):
        from console.queues.services import queues_load

        self.stored = _store_floor(self.n, self.db_servers)
        for kind in kinds:
            module = import_module(BROKERS[kind])
            if not port_answers(module.PORT, host=module.HOST):
                self.failed[kind] = f"not measured: nothing answers at {module.HOST}:{module.PORT}"
                continue

            def step(kind=kind, module=module):
                broker = self.brokers[kind] = module.BROKER(self.tag, BODY)
                for batch in "pb":
                    broker.dead_letters(batch, self.n)
                broker.dead_letters("f", self.n + WARM)
                queues_load(data=_queue_file(broker))
                bare = _bare_drain(broker, self.n)
                product = _drain(broker, self.n, (*broker.servers, *self.db_servers))
                self.figures[kind] = {"bare_drain": bare, "drain": product}
                # The floor's batch: drained as the first, not timed.
                _drain(broker, self.n + WARM, (), batch="f")

            self._attempt(kind, step)

    def quarantine(self, spark):
        """Every drained batch quarantined by the intake handler (not timed; once for all, to
        save a refresh a broker: the seeded floor's refresh follows)."""
        measured = [kind for kind in self.brokers if kind not in self.failed]
        try:
            _deliver_until_idle(
                spark, [dead.format(kind=kind) for kind in measured for dead in DEAD.values()]
            )
        except Exception as exc:
            traceback.print_exc()
            for kind in measured:
                self.failed[kind] = f"failed: the quarantine: {exc.__class__.__name__}: {exc}"

    def redrives(self, spark):
        """Each broker's floor, redrive and bare publish, each once the servers are quiet. The
        floor's CPU is this process's and the database's: no broker takes part in it."""
        for kind in [kind for kind in self.brokers if kind not in self.failed]:

            def step(kind=kind, broker=self.brokers[kind]):
                figures = self.figures[kind]
                servers = (*broker.servers, *self.db_servers)
                _warm_up(broker, self.people, spark)
                self._quiet(servers)
                figures["floor"], figures["floor_decided"] = _same_floor(
                    broker, self.people, spark, self.n, self.db_servers
                )
                self._quiet(servers)
                figures["redrive"], figures["decided"] = _redrive(
                    broker, self.people, spark, self.n, servers
                )
                self._quiet(servers)
                figures["bare_publish"] = _bare_publish(broker, self.n)

            self._attempt(kind, step)

    def _quiet(self, servers):
        _vacuumed()
        settled(servers)

    def close(self):
        for broker in self.brokers.values():
            try:
                broker.close()
            except Exception:
                traceback.print_exc()

    def rows(self, kinds, floor, floor_decided):
        n, db, cores = self.n, self.db, self.cores
        rows = []
        for kind in kinds:
            title = import_module(BROKERS[kind]).BROKER.title
            if kind in self.failed:
                rows.append(_failed_row(title, n, db, self.failed[kind]))
                continue
            figures, broker = self.figures[kind], self.brokers[kind]
            rows.append(
                _drain_row(
                    broker, n, db, figures["drain"], figures["bare_drain"], cores, self.stored
                )
            )
            rows.append(_redrive_row(broker, n, db, figures, floor, cores))
        rows.append(_store_floor_row(n, db, self.stored, cores))
        rows.append(_floor_row(n, db, floor, floor_decided, cores))
        return rows


def _shovel_row(n, db, bench, cores):
    """RabbitMQ's shovel (issue 13's reference): its rate, and the product's against it."""
    seconds = _shovel(n, body_size=len(BODY))
    row = {
        "benchmark": f"RabbitMQ's shovel, {n:,} between two queues ({db})",
        "messages": n,
        "seconds": round(seconds, 2),
        "msgs_per_s": round(n / seconds),
        "goal": "(issue 13: drain and redrive >= 1 x the shovel)",
        "cores": cores,
    }
    figures = bench.figures.get("rabbitmq", {})
    for phase in ("drain", "redrive"):
        if phase in figures:
            row[f"{phase}_vs_shovel"] = round(seconds / figures[phase].seconds, 2)
    return row


def run():
    """Both databases; when the second fails, the first's rows are kept with the error (the
    bench's runner writes an exception's `rows`): a run of half an hour is not lost whole."""
    done = []

    def here():
        done.extend(run_here())
        return done

    try:
        return on_both_databases(here, "bench.bench_brokers")
    except RuntimeError as exc:
        if done:
            exc.rows = [*done, {"benchmark": "PostgreSQL", "goal_met": f"failed: {exc}"[:500]}]
        raise


def run_here():
    django_setup()
    from django.conf import settings
    from django.db import connection

    from console.spark import spark_from_settings

    settings.REFRESH_ON_COMMIT = False
    n = int(os.environ.get("BENCH_BROKER_MESSAGES", 100_000))
    kinds = _kinds()
    # Before Spark starts: the redrive handlers run in its Python workers, whose environment is
    # the JVM's, fixed when it starts.
    for kind in kinds:
        module = import_module(BROKERS[kind])
        os.environ[module.URL_ENV] = module.URL
    fresh_state("brokers")
    bench = _Bench(n, connection.vendor, os.cpu_count(), _people())
    try:
        # Every drain before Spark starts: the `sources` process runs no JVM.
        bench.drains(kinds)
        spark = spark_from_settings()
        bench.quarantine(spark)
        # First: it also warms the decision and delivery path (the first decision of a process
        # takes a second longer), so that no broker's floor or redrive pays for that.
        floor, floor_decided = _floor(bench.people, spark, n, bench.db_servers)
        bench.redrives(spark)
    finally:
        bench.close()
    rows = bench.rows(kinds, floor, floor_decided)
    if "rabbitmq" in kinds and "rabbitmq" not in bench.failed:
        rows.append(_shovel_row(n, bench.db, bench, bench.cores))
    return rows


if __name__ == "__main__":
    rows_print(run_here())
