"""The metrics, as Prometheus reads them: one collector that asks the selectors at each scrape.
Every number comes from the console database, which every process writes, so no worker keeps a
counter of its own in memory, and one killed loses none (the library's multiprocess mode is not
needed)."""

from django.utils import timezone
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.registry import Collector, CollectorRegistry

from console.delivery.models import DeliveryRun
from console.metrics import selectors
from console.runs.totals import (
    DURATION_BUCKETS,
    DURATION_COUNT,
    DURATION_LE,
    DURATION_SUM,
    HANDLER_COUNT,
    HANDLER_LE,
    HANDLER_SUM,
    OUTCOMES,
    RUNS,
    bucket_label,
    handler_label,
)
from workers.engine.states import FLOW_QUARANTINED, FLOW_RELEASED, NDLV, STATES
from workers.engine.timings import HANDLER_BUCKETS

# Every metric's name and what it says, in words (the HELP line; docs/guides/production.md lists
# them too).
HELP = {
    "antidote_messages": "Messages by queue and state, as of the last refresh of the read models "
    "(the dashboard's counts).",
    "antidote_quarantined": "Messages quarantined (NDLV) now, by queue, as the dashboard counts "
    "them.",
    "antidote_quarantine_oldest_age_seconds": "Seconds since the oldest quarantined message of "
    "the queue last failed, as the refresh's task last found it.",
    "antidote_quarantine_inflow": "Messages that entered quarantine (NDLV), by queue, as the "
    "read models' hourly flows count them.",
    "antidote_quarantine_outflow": "Messages that left quarantine by a decision (reprocessed, "
    "failed or ended), by queue, as the read models' hourly flows count them.",
    "antidote_delivery_runs": "Delivery runs that finished, by the status they ended with.",
    "antidote_delivery_attempts": "Messages committed delivery runs took, by outcome: the state "
    "each was left in (DLVD delivered, WAIT to retry, NDLV quarantined, TBDL handed back, ...).",
    "antidote_delivery_run_duration_seconds": "How long finished delivery runs took, from start "
    "to leaving running (claim, handlers and commit).",
    "antidote_handler_duration_seconds": "How long each queue's handler took per call, in the "
    "delivery runs committed (from the call to its return; calls of an isolation batch whose "
    "process died are not counted).",
    "antidote_refresh_lag_seconds": "Seconds since the oldest lake events commit the read models "
    "have not folded yet was committed; 0 when they hold every commit.",
    "antidote_action_requests": "Action requests not finished yet, by status (pending: waiting "
    "for approval).",
    "antidote_action_request_pending_oldest_age_seconds": "Seconds since the oldest action "
    "request still waiting for approval was asked; 0 when none waits.",
    "antidote_break_glass_unreviewed": "Decisions carried out by break-glass (R17) still waiting "
    "for their review, by whether the review is overdue (past BREAK_GLASS_REVIEW_HOURS).",
    "antidote_alert_outbox_pending": "Alert deliveries (email, webhook, the console's bell) not "
    "sent yet.",
    "antidote_queue_disabled": "1 if the queue is disabled (by R11 or by a person), else 0.",
    "antidote_source_lag_messages": "Dead letters waiting on a broker source's broker, as its "
    "consumer last read it.",
    "antidote_process_heartbeat_age_seconds": "Seconds since a process's last heartbeat, for "
    "every process that has not stopped cleanly.",
}

# The hourly flows exported as counters (the dashboard's rates have the others: deliveries and
# failed attempts are the delivery runs' counters here).
FLOW_COUNTERS = {
    FLOW_QUARANTINED: "antidote_quarantine_inflow",
    FLOW_RELEASED: "antidote_quarantine_outflow",
}


class AntidoteCollector(Collector):
    def collect(self):
        now = timezone.now()
        yield from self._messages()
        yield from self._flows()
        yield from self._deliveries(now)
        yield from self._requests(now)
        yield from self._operations(now)

    def _messages(self):
        messages = _gauge("antidote_messages", ["queue", "state"])
        quarantined = _gauge("antidote_quarantined", ["queue"])
        holding = []
        for queue, counts in selectors.queue_state_counts():
            for state, n in counts:
                messages.add_metric([queue, state], n)
            n = dict(counts).get(NDLV, 0)
            quarantined.add_metric([queue], n)
            if n:
                holding.append(queue)
        oldest = _gauge("antidote_quarantine_oldest_age_seconds", ["queue"])
        for queue, seconds in selectors.quarantine_oldest(queues=holding).items():
            oldest.add_metric([queue], seconds)
        yield from (messages, quarantined, oldest)

    def _flows(self):
        flows = {flow: _counter(name, ["queue"]) for flow, name in FLOW_COUNTERS.items()}
        for queue, flow, n in selectors.flow_totals():
            if flow in flows:
                flows[flow].add_metric([queue], n)
        yield from flows.values()

    def _deliveries(self, now):
        totals = selectors.delivery_totals(now=now)
        runs = _counter("antidote_delivery_runs", ["status"])
        for status, _ in DeliveryRun.STATUSES:
            if status != DeliveryRun.RUNNING:
                runs.add_metric([status], totals.get((RUNS, status), 0))
        attempts = _counter("antidote_delivery_attempts", ["outcome"])
        for state in STATES:
            attempts.add_metric([state], totals.get((OUTCOMES, state), 0))
        name = "antidote_delivery_run_duration_seconds"
        buckets = [
            (bucket_label(b), totals.get((DURATION_LE, bucket_label(b)), 0))
            for b in DURATION_BUCKETS
        ]
        count = totals.get((DURATION_COUNT, ""), 0)
        durations = HistogramMetricFamily(
            name,
            HELP[name],
            buckets=[*buckets, ("+Inf", count)],
            sum_value=totals.get((DURATION_SUM, ""), 0),
        )
        yield from (runs, attempts, durations, _handler_durations(totals))

    def _requests(self, now):
        counts = selectors.action_request_counts()
        requests = _gauge("antidote_action_requests", ["status"])
        for status, n in counts.by_status.items():
            requests.add_metric([status], n)
        oldest = counts.oldest_pending
        name = "antidote_action_request_pending_oldest_age_seconds"
        age = max((now - oldest).total_seconds(), 0.0) if oldest else 0.0
        yield from (requests, GaugeMetricFamily(name, HELP[name], value=age))
        unreviewed = _gauge("antidote_break_glass_unreviewed", ["overdue"])
        for overdue, n in selectors.break_glass_unreviewed_counts(now=now).items():
            unreviewed.add_metric(["true" if overdue else "false"], n)
        yield unreviewed

    def _operations(self, now):
        name = "antidote_refresh_lag_seconds"
        yield GaugeMetricFamily(name, HELP[name], value=selectors.read_models_lag(now=now))
        name = "antidote_alert_outbox_pending"
        yield GaugeMetricFamily(name, HELP[name], value=selectors.alert_outbox_backlog())
        disabled = _gauge("antidote_queue_disabled", ["queue"])
        for queue, enabled in selectors.queue_enabled_list():
            disabled.add_metric([queue], 0 if enabled else 1)
        lag = _gauge("antidote_source_lag_messages", ["source", "kind"])
        for source, kind, n in selectors.source_lag_list():
            lag.add_metric([source, kind], n)
        beats = _gauge("antidote_process_heartbeat_age_seconds", ["kind", "process"])
        for (kind, host, pid), seconds in sorted(selectors.heartbeat_ages(now=now).items()):
            beats.add_metric([kind, f"{host}:{pid}"], seconds)
        yield from (disabled, lag, beats)


def _handler_durations(totals):
    name = "antidote_handler_duration_seconds"
    family = HistogramMetricFamily(name, HELP[name], labels=["queue"])
    queues = sorted(label for metric, label in totals if metric == HANDLER_COUNT)
    for queue in queues:
        count = totals[(HANDLER_COUNT, queue)]
        buckets = [
            (le, totals.get((HANDLER_LE, handler_label(queue, le)), 0))
            for le in map(bucket_label, HANDLER_BUCKETS)
        ]
        family.add_metric(
            [queue], [*buckets, ("+Inf", count)], sum_value=totals[(HANDLER_SUM, queue)]
        )
    return family


def _gauge(name, labels):
    return GaugeMetricFamily(name, HELP[name], labels=labels)


def _counter(name, labels):
    return CounterMetricFamily(name, HELP[name], labels=labels)


def registry():
    """A registry holding only this collector: the web process's own CPU and memory say little
    of the product, and each web worker would report only its own."""
    found = CollectorRegistry(auto_describe=False)
    found.register(AntidoteCollector())
    return found
