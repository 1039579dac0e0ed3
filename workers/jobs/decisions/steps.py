"""A step's outcome (progressive redrive; a canary is its one step), from the events that
followed it: what the decisions sweeper reads to let the next step go or stop the request."""

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from workers.engine import states as S
from workers.jobs.decisions.plan import latest_by_id

STEP_PASSED, STEP_FAILED, STEP_PENDING = "passed", "failed", "pending"
CANARY_PASSED, CANARY_FAILED, CANARY_PENDING = STEP_PASSED, STEP_FAILED, STEP_PENDING
MAIN_REASONS = 3  # the new reasons a stopped step names, most frequent first
REASON_CHARS = 300


@dataclass(frozen=True)
class StepOutcome:
    """What became of one step's reprocessed messages since: how many failed an attempt again
    (back in WAIT or NDLV, or crashed: workers.engine.states.is_failure), how many reached a
    final state without failing (delivered, or ended with their conversation), and the first
    new failure's reason of each that failed, counted."""

    size: int
    delivered: int
    refailed: int
    reasons: list  # [(reason, messages)], most first, at most MAIN_REASONS
    first_failure: dict | None  # the earliest failure event: message_id, reason

    @property
    def pending(self):
        return self.size - self.delivered - self.refailed

    @property
    def rate(self):
        """The re-failure rate, in percent of the step's messages."""
        return 100 * self.refailed / self.size if self.size else 0.0

    def verdict(self, threshold):
        """failed as soon as more than `threshold` percent of the messages failed again (more
        outcomes can only add failures); passed once every message has an outcome and at most
        `threshold` percent failed again; pending otherwise. A threshold of 0: none may fail."""
        if 100 * self.refailed > threshold * self.size:
            return STEP_FAILED
        if self.pending <= 0:
            return STEP_PASSED
        return STEP_PENDING


def step_outcome(reprocessed, later: pa.Table) -> StepOutcome:
    """The outcome of a step that reprocessed the ids `reprocessed`, from the events committed
    after it. Events of other messages in `later` do not count."""
    events = later.filter(pc.is_in(later.column("message_id"), value_set=reprocessed))
    # A failure as workers.engine.states.is_failure says it, column-wise.
    failures = events.filter(
        pc.and_(
            pc.and_(
                pc.equal(events.column("from_state"), S.DLNG),
                pc.is_in(events.column("to_state"), value_set=pa.array(sorted(S.FAILED_TO))),
            ),
            pc.greater(events.column("attempt"), 0),
        )
    )
    first = None
    firsts = {}
    if failures.num_rows:
        first = failures.slice(0, 1).select(["message_id", "reason"]).to_pylist()[0]
        # A step is at most a few thousand messages: their failures fit in a dict.
        ordered = failures.sort_by([("epoch", "ascending"), ("step", "ascending")])
        for row in ordered.select(["message_id", "reason"]).to_pylist():
            firsts.setdefault(row["message_id"], (row["reason"] or "")[:REASON_CHARS])
    counted = {}
    for reason in firsts.values():
        counted[reason] = counted.get(reason, 0) + 1
    reasons = sorted(counted.items(), key=lambda item: (-item[1], item[0]))[:MAIN_REASONS]
    latest = latest_by_id(events)
    settled = pc.and_(
        pc.is_in(latest.column("to_state"), value_set=pa.array(sorted(S.FINAL_STATES))),
        pc.invert(
            pc.is_in(latest.column("message_id"), value_set=pa.array(list(firsts), pa.string()))
        ),
    )
    return StepOutcome(
        size=len(reprocessed),
        delivered=pc.sum(settled.cast(pa.int64())).as_py() or 0,
        refailed=len(firsts),
        reasons=[list(item) for item in reasons],
        first_failure=first,
    )


def percent(value):
    """12.5 -> "12.5%", 5.0 -> "5%"."""
    return f"{value:.2f}".rstrip("0").rstrip(".") + "%"


def step_detail(outcome: StepOutcome, verdict, *, step, steps, threshold):
    """What a step's outcome says on the request page: `step` (from 1) of `steps`. A request
    with one step calls it the canary."""
    noun = "canary message(s)" if steps == 1 else "message(s)"
    where = "" if steps == 1 else f"step {step} of {steps}: "
    if verdict == STEP_FAILED:
        said = "; ".join(f"{reason} ({n})" for reason, n in outcome.reasons)
        return (
            f"{where}{outcome.refailed} of {outcome.size} {noun} failed again: {said} \u2014 "
            f"{percent(outcome.rate)} is over the threshold of {percent(threshold)}"
        )
    if verdict == STEP_PASSED and not outcome.refailed:
        return f"{where}all {outcome.size} {noun} delivered"
    if verdict == STEP_PASSED:
        return (
            f"{where}{outcome.delivered} of {outcome.size} {noun} delivered, "
            f"{outcome.refailed} failed again ({percent(outcome.rate)}, at most "
            f"{percent(threshold)} allowed)"
        )
    return (
        f"{where}{outcome.size - outcome.pending} of {outcome.size} {noun} have an outcome "
        f"({outcome.refailed} failed again)"
    )


def canary_verdict(reprocessed, later: pa.Table):
    """(verdict, detail) of a canary, a step none of whose messages may fail again: failed if
    any of the `reprocessed` ids failed an attempt since (the first such event says which and
    why), passed when each has reached a final state (delivered, or ended), pending
    otherwise."""
    outcome = step_outcome(reprocessed, later)
    verdict = outcome.verdict(0)
    if verdict == STEP_FAILED:
        first = outcome.first_failure
        return verdict, f"message {first['message_id']} failed again: {first['reason']}"
    if verdict == STEP_PASSED:
        return verdict, f"all {outcome.delivered} canary message(s) delivered"
    return verdict, f"{outcome.delivered} of {outcome.size} canary message(s) have an outcome"
