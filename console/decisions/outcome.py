"""What a request's decisions came to: of the N messages it froze, how many are delivered now,
failed again, still on their way, failed or ended for good, or were never decided by it.

Which messages a request decided is in the lake: each committed chunk's decision events (one per
member it decided; an end with error's siblings come after CONVERSATION_STEP_BASE), and the plan's
chunk-ids file numbers every frozen id with its chunk. Where each of them is now is the message
index's, as of its last refresh, brought up to the newest lake commit by the events committed
since (delivery runs, which only a refresh folds into the index): the same events a progressive
redrive's steps are watched by, so the page's steps and its outcome never say two things. The
frozen set is walked a batch at a time, one query by key a batch, so a million ids cost a hundred
queries and never a million ids in memory."""

from collections import Counter
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from django.core.cache import cache
from django.db import connection

from console.decisions.models import ActionChunk
from console.lake.models import LakeCommit
from console.lake.services import lake
from console.readmodels.models import FailureGroup, MessageIndex, MessageState, RefreshRun
from console.sql import in_values
from workers.engine.states import DLNG, DLVD, ENDED, FAIL, NDLV, TBDL, WAIT
from workers.jobs.conversations import CONVERSATION_STEP_BASE
from workers.jobs.decisions.plan import latest_by_id

DELIVERED = "delivered"
FAILED_AGAIN = "failed_again"
PENDING = "pending"
FINAL = "final"
GONE = "gone"
SKIPPED = "skipped"
NOT_REACHED = "not_reached"
# Every frozen id is in exactly one, so they add up to the request's count. (category, label)
CATEGORIES = (
    (DELIVERED, "delivered (DLVD)"),
    (FAILED_AGAIN, "failed again (WAIT or NDLV)"),
    (PENDING, "still on their way (TBDL or DLNG)"),
    (FINAL, "failed or ended for good (FAIL or ENDED)"),
    (GONE, "decided, no longer in the index (purged)"),
    (SKIPPED, "not decided: changed before their chunk ran, unknown, or not edited by its patch"),
    (NOT_REACHED, "not decided: their chunk has not run (cancelled, failed or still running)"),
)
LABELS = dict(CATEGORIES)
BY_STATE = {
    DLVD: DELIVERED,
    WAIT: FAILED_AGAIN,
    NDLV: FAILED_AGAIN,
    TBDL: PENDING,
    DLNG: PENDING,
    FAIL: FINAL,
    ENDED: FINAL,
}
BATCH = 10_000
QUERY_BATCH = 1000
OUTCOME_CACHE_KEY = "decisions:outcome:{}:{}:{}:{}:{}"
OUTCOME_CACHE_SECONDS = 3600
REASONS_SHOWN = 50


@dataclass
class Reason:
    """Messages that failed again alike: the index's exception type and failure group."""

    exception_type: str
    group_id: str
    pattern: str | None = None
    waiting: int = 0  # WAIT: the engine retries them
    quarantined: int = 0  # NDLV: someone must decide again

    @property
    def count(self):
        return self.waiting + self.quarantined


@dataclass
class Outcome:
    total: int
    counts: dict  # category -> messages, every category of CATEGORIES
    states: dict  # state -> decided messages in it now
    reasons: list  # Reason, most first, at most REASONS_SHOWN
    more_reasons: int
    refresh: RefreshRun | None  # the newest committed refresh: the index is as of it
    unfolded: int  # events commits the index has not folded yet (delivery runs since)
    unreadable_chunks: list = field(default_factory=list)  # chunks whose events are gone

    @property
    def rows(self):
        """[(category, label, messages)] in CATEGORIES' order."""
        return [(name, label, self.counts[name]) for name, label in CATEGORIES]

    @property
    def retryable(self):
        """Of those that failed again, the quarantined ones: what a retry would reprocess."""
        return self.states.get(NDLV, 0)


class OutcomeUnknown(Exception):
    """The request has not decided anything yet, or its plan is no longer in the lake."""


def outcome_available(request):
    """Whether a request has decided anything to report on (a chunk committed)."""
    return bool(request.plan_path) and request.chunks_done > 0


class _Decided:
    """The members each committed chunk of a request decided, read from its events commit,
    one chunk at a time (chunks are contiguous in the frozen order)."""

    UNREADABLE = object()

    def __init__(self, request):
        chunks = dict(
            ActionChunk.objects.filter(request=request).values_list("index", "events_commit")
        )
        paths = dict(
            LakeCommit.objects.filter(id__in=[c for c in chunks.values() if c]).values_list(
                "id", "path"
            )
        )
        self.paths = {index: paths.get(commit) for index, commit in chunks.items()}
        self.commits = chunks
        self.unreadable = []
        self._chunk, self._ids = None, None

    def of(self, chunk):
        """The ids chunk `chunk` decided; None if it is not committed; UNREADABLE if its
        events are no longer in the lake."""
        if chunk not in self.commits:
            return None
        if chunk != self._chunk:
            self._chunk, self._ids = chunk, self._read(chunk)
        return self._ids

    def _read(self, chunk):
        if self.commits[chunk] is None:
            return frozenset()  # nothing decided in it
        path = self.paths.get(chunk)
        try:
            events = lake().read_arrow("events", [path], columns=["message_id", "step"])
        except (FileNotFoundError, TypeError):
            self.unreadable.append(chunk)
            return self.UNREADABLE
        members = events.filter(pc.less(events.column("step"), CONVERSATION_STEP_BASE))
        return frozenset(members.column("message_id").to_pylist())


class _Since:
    """The latest event of each message in the events commits after the refresh's cursor: what
    became of them that the index has not folded yet (a delivery run's outcome), read once a
    report. With no refresh, nothing: the index alone (it was never filled from the lake)."""

    COLUMNS = ["message_id", "epoch", "step", "to_state"]

    def __init__(self, refresh):
        self.latest = None
        if refresh is None or refresh.upto_commit is None:
            return
        paths = list(
            LakeCommit.objects.filter(
                dataset="events", retired=False, id__gt=refresh.upto_commit
            ).values_list("path", flat=True)
        )
        if not paths:
            return
        try:
            events = lake().read_arrow("events", paths, columns=self.COLUMNS)
        except FileNotFoundError:
            return  # compacted away meanwhile: the index alone, as of the refresh
        self.latest = latest_by_id(events).select(["message_id", "to_state"])

    def states(self, ids):
        """{message_id: its state now} of those of `ids` whose events came after the refresh."""
        if self.latest is None or not self.latest.num_rows:
            return {}
        found = self.latest.filter(
            pc.is_in(self.latest.column("message_id"), value_set=pa.array(ids, pa.string()))
        )
        return dict(
            zip(
                found.column("message_id").to_pylist(),
                found.column("to_state").to_pylist(),
                strict=True,
            )
        )


def _newest_refresh():
    return RefreshRun.objects.filter(status=RefreshRun.COMMITTED).order_by("-id").first()


def _chunk_ids_path(plan_path):
    """Where execution numbered the frozen ids with their chunk: beside the plan (as
    console.decisions.execution writes it; that module imports the scopes, which import this
    one, so its helper is not imported here)."""
    return f"{plan_path.rsplit('/', 1)[0]}/chunk-ids.parquet"


def _frozen_batches(request, batch_size=BATCH):
    """(ids, their chunks) of the frozen set in its order, a batch at a time, from the plan's
    chunk-ids file: every id with the chunk execution gave it."""
    path = lake().path(_chunk_ids_path(request.plan_path))
    try:
        parquet = pq.ParquetFile(path)
    except FileNotFoundError:
        raise OutcomeUnknown("the request's plan is no longer in the lake") from None
    for batch in parquet.iter_batches(batch_size=batch_size, columns=["message_id", "chunk"]):
        yield batch.column(0).to_pylist(), batch.column(1).to_pylist()


def _by_key(model, columns, ids):
    """{message_id: (columns...)} of those of `ids` `model`'s table holds, QUERY_BATCH ids a
    query: PostgreSQL finds a thousand keys by its primary key, where it would scan the whole
    table for ten thousand (measured at a million rows: 6 ms against 200 ms a query)."""
    table = connection.ops.quote_name(model._meta.db_table)
    names = ", ".join(connection.ops.quote_name(c) for c in ("message_id", *columns))
    found = {}
    with connection.cursor() as cursor:
        for start in range(0, len(ids), QUERY_BATCH):
            where, params = in_values("message_id", ids[start : start + QUERY_BATCH])
            cursor.execute(f"SELECT {names} FROM {table} WHERE {where}", params)  # noqa: S608
            found.update((row[0], row[1:]) for row in cursor.fetchall())
    return found


def _states(ids):
    """{message_id: state} of those of `ids` the index holds."""
    return {message_id: row[0] for message_id, row in _by_key(MessageState, ["state"], ids).items()}


def _placement(ids):
    """{message_id: (exception_type, group_id, queue)} of `ids` in the index."""
    return _by_key(MessageIndex, ["exception_type", "group_id", "queue"], ids)


def _walk(request, *, after=-1, decided=None, since=None):
    """(position, message_id, category, state) of every frozen id past position `after`, in
    the frozen order, a batch of queries at a time; each state the index's brought up to date
    by the events since its refresh (`since`, a _Since)."""
    decided = decided or _Decided(request)
    since = since or _Since(_newest_refresh())
    position = -1
    for ids, chunks in _frozen_batches(request):
        if position + len(ids) <= after:
            position += len(ids)
            continue  # before the page: not even looked up
        states = _states(ids)
        states.update(since.states(ids))
        for message_id, chunk in zip(ids, chunks, strict=True):
            position += 1
            if position <= after:
                continue
            members = decided.of(chunk)
            state = states.get(message_id)
            if members is None:
                category = NOT_REACHED
            elif members is not _Decided.UNREADABLE and message_id not in members:
                category = SKIPPED
            elif state is None:
                category = GONE
            else:
                category = BY_STATE.get(state, GONE)
            yield position, message_id, category, state


def request_outcome(*, request):
    """The request's Outcome; OutcomeUnknown when it has decided nothing yet.

    Kept in the cache until the index may have changed: only a refresh and a lake commit (a
    decision's chunk, a purge) change it, so the key names the newest of each. A million ids
    cost seconds to walk (5.5 s measured on PostgreSQL); a page that shows it again does not."""
    if not outcome_available(request):
        raise OutcomeUnknown("the request has decided nothing yet")
    # As of this refresh: read before the index is, so the numbers are at least that fresh.
    refresh = _newest_refresh()
    newest = LakeCommit.objects.order_by("-id").values_list("id", flat=True).first()
    key = OUTCOME_CACHE_KEY.format(
        request.id,
        request.created_at.timestamp(),  # another database's request of the same number
        request.chunks_done,
        refresh.id if refresh else 0,
        newest or 0,
    )
    outcome = cache.get(key)
    if outcome is None:
        outcome = _outcome(request, refresh)
        cache.set(key, outcome, OUTCOME_CACHE_SECONDS)
    return outcome


def _outcome(request, refresh):
    unfolded = LakeCommit.objects.filter(dataset="events", views_applied=False)
    if refresh is not None and refresh.upto_commit is not None:
        unfolded = unfolded.filter(id__gt=refresh.upto_commit)
    counts = Counter()
    states = Counter()
    reasons = {}
    failed = []
    decided = _Decided(request)
    since = _Since(refresh)

    def reasons_add(state_of):
        for message_id, (exception_type, group_id, _) in _placement(list(state_of)).items():
            key = (exception_type or "", group_id or "")
            reason = reasons.setdefault(key, Reason(*key))
            if state_of[message_id] == WAIT:
                reason.waiting += 1
            else:
                reason.quarantined += 1

    for _, message_id, category, state in _walk(request, decided=decided, since=since):
        counts[category] += 1
        if category not in (SKIPPED, NOT_REACHED) and state is not None:
            states[state] += 1
        if category == FAILED_AGAIN:
            failed.append((message_id, state))
            if len(failed) >= BATCH:
                reasons_add(dict(failed))
                failed = []
    if failed:
        reasons_add(dict(failed))
    ranked = sorted(reasons.values(), key=lambda r: (-r.count, r.exception_type, r.group_id))
    shown = ranked[:REASONS_SHOWN]
    patterns = dict(
        FailureGroup.objects.filter(
            fingerprint__in=[r.group_id for r in shown if r.group_id]
        ).values_list("fingerprint", "pattern")
    )
    for reason in shown:
        reason.pattern = patterns.get(reason.group_id)
    return Outcome(
        total=request.count,
        counts={name: counts[name] for name, _ in CATEGORIES},
        states=dict(states),
        reasons=shown,
        more_reasons=max(0, len(ranked) - REASONS_SHOWN),
        refresh=refresh,
        unfolded=unfolded.count(),
        unreadable_chunks=decided.unreadable,
    )


@dataclass
class OutcomePage:
    rows: list  # [(message_id, its MessageIndex row or None)]
    next_after: int | None  # `after` for the next page


def outcome_page(*, request, category, after=-1, size=50):
    """The frozen ids in `category`, in the frozen order, `size` at a time from past position
    `after` (the previous page's next_after). A rare category of a large set reads the whole
    set's states to fill a page: a hundred queries by key for a million ids."""
    if category not in LABELS:
        raise ValueError(f"the category is one of {', '.join(LABELS)}")
    if not outcome_available(request):
        raise OutcomeUnknown("the request has decided nothing yet")
    found = []
    for position, message_id, in_category, _ in _walk(request, after=after):
        if in_category == category:
            found.append((position, message_id))
            if len(found) > size:
                break
    more = len(found) > size
    found = found[:size]
    indexed = MessageIndex.objects.in_bulk([message_id for _, message_id in found])
    return OutcomePage(
        rows=[(message_id, indexed.get(message_id)) for _, message_id in found],
        next_after=found[-1][0] if more else None,
    )


def failed_again_quarantined(*, request):
    """(message_id, queue, group_id) of the messages the request decided that are quarantined
    (NDLV) again, in the frozen order: what "retry the ones that failed again" freezes. Those
    waiting for a retry (WAIT) are the engine's to retry, not a person's."""
    batch = []

    def placed(batch):
        places = _placement(batch)
        for message_id in batch:
            if message_id in places:
                _, group_id, queue = places[message_id]
                yield message_id, queue, group_id

    for _, message_id, category, state in _walk(request):
        if category == FAILED_AGAIN and state == NDLV:
            batch.append(message_id)
            if len(batch) >= BATCH:
                yield from placed(batch)
                batch = []
    if batch:
        yield from placed(batch)
