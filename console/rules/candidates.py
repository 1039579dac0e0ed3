"""What a standing rule matches now: the quarantined messages it would act on and those it leaves
alone, and why, counted for its page (the preview) and streamed in id order for the request it
makes (a scope of kind "standing_rule", which console.decisions freezes like any other).

Which messages, by kind (a message's quarantine time is the time of its latest event, the
index's `updated_at`: for a quarantined message, the event that quarantined it):
- archive: quarantined in the rule's queue (and its group, or with its exception type) at least
  `days` days ago;
- auto-retry: quarantined in the rule's group since the rule became active (its new failures),
  at least `delay_seconds` ago;
- redirect: quarantined in the rule's queue (what a reprocess back to their queue would send on).

Left alone, whatever the kind, a message someone investigates (it, or its failure group); and
for archive and auto-retry, one an open request holds (a person's decision is under way). An
archive leaves alone too a message someone wrote a note on since its quarantine: with no event
since its quarantine (it is still quarantined, and its quarantine is its latest event: no
decision, edit or delivery since), no note since, no open request and no investigation, a message
is "untouched". An auto-retry leaves alone a message it reprocessed `max_attempts` times already."""

from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from itertools import islice

import pyarrow as pa
import pyarrow.compute as pc
from django.db.models import Exists, OuterRef
from django.utils import timezone

from console.decisions.models import ActionRequest
from console.decisions.overlaps import OPEN
from console.decisions.scope import frozen_ids
from console.notes.models import MESSAGE, Note
from console.notes.selectors import OWNED, UNOWNED, message_owner_q
from console.readmodels.models import MessageIndex
from console.rules.models import ARCHIVE, AUTO_RETRY, RuleRetry, StandingRule
from workers.engine.states import NDLV

# The preview streams at most this many messages past its counts (the held ones are read from
# the open requests' frozen files); above, its count says "more than".
PREVIEW_MAX = 100_000
SAMPLE_SIZE = 20
_BATCH = 5000


@dataclass
class Preview:
    """What a rule would do at `at`: `count` messages acted on (at least, when `more`), the first
    of them in `sample`, and those it leaves alone by reason."""

    at: datetime
    matching: int = 0  # of its queue, group, age (or delay): before what it leaves alone
    investigated: int = 0  # someone investigates them or their group
    touched: int = 0  # archive: a note written since their quarantine
    exhausted: int = 0  # auto-retry: reprocessed max_attempts times already
    held: int = 0  # an open request holds them
    count: int = 0
    more: bool = False
    sample: list = field(default_factory=list)
    waiting: int = 0  # auto-retry: new failures still within the delay

    def left_alone(self):
        """{reason: messages} of what it leaves alone, for its application's record."""
        return {
            "investigated": self.investigated,
            "touched": self.touched,
            "exhausted": self.exhausted,
            "held": self.held,
        }

    def as_dict(self):
        said = asdict(self)
        said["at"] = self.at.isoformat()
        return said


def _since(rule, now):
    """An auto-retry's new failures are those quarantined since it became active (none yet for
    one waiting for approval)."""
    return rule.decided_at if rule.status == StandingRule.ACTIVE and rule.decided_at else now


def _matching(rule, now):
    qs = MessageIndex.objects.filter(state=NDLV)
    if rule.kind == ARCHIVE:
        qs = qs.filter(queue=rule.queue, updated_at__lte=now - timedelta(days=rule.days))
        if rule.group:
            qs = qs.filter(group_id=rule.group)
        if rule.exception_type:
            qs = qs.filter(exception_type=rule.exception_type)
        return qs
    if rule.kind == AUTO_RETRY:
        return qs.filter(
            group_id=rule.group,
            updated_at__gte=_since(rule, now),
            updated_at__lte=now - timedelta(seconds=rule.delay_seconds),
        )
    return qs.filter(queue=rule.queue)


def _noted():
    """A note on the message since its quarantine (its latest event)."""
    return Exists(
        Note.objects.filter(
            kind=MESSAGE, target_id=OuterRef("pk"), created_at__gte=OuterRef("updated_at")
        )
    )


def _exhausted(rule):
    return RuleRetry.objects.filter(rule=rule, attempts__gte=rule.max_attempts).values("message_id")


def _held_ids(rule):
    """The ids the open requests hold, of those whose frozen set has messages of the rule's queue
    (or group): one array, or None when none does."""
    open_requests = ActionRequest.objects.filter(status__in=OPEN)
    if rule.queue:
        open_requests = open_requests.filter(breakdown__queues__has_key=rule.queue)
    else:
        open_requests = open_requests.filter(breakdown__groups__has_key=rule.group)
    held = [
        pa.array(ids, pa.string())
        for path in open_requests.values_list("ids_path", flat=True)
        for ids in frozen_ids(path)
    ]
    return pa.concat_arrays(held) if held else None


@dataclass
class _Candidates:
    preview: Preview
    rest: object  # the queryset of what is left after the reasons SQL can tell


def _candidates(rule, now):
    matching = _matching(rule, now)
    preview = Preview(at=now, matching=matching.count())
    if not preview.matching:
        return _Candidates(preview, matching.none())
    preview.investigated = matching.filter(message_owner_q(OWNED)).count()
    rest = matching.filter(message_owner_q(UNOWNED))
    if rule.kind == ARCHIVE:
        preview.touched = rest.filter(_noted()).count()
        rest = rest.filter(~_noted())
    if rule.kind == AUTO_RETRY:
        preview.exhausted = rest.filter(pk__in=_exhausted(rule)).count()
        rest = rest.exclude(pk__in=_exhausted(rule))
    return _Candidates(preview, rest)


def _streamed(rule, rest, held_count):
    """(id, queue, group) of `rest`, in id order, but those an open request holds (each counted
    with held_count(n)); redirects hold nothing back: a person's reprocess is their decision."""
    held = _held_ids(rule) if rule.kind in (ARCHIVE, AUTO_RETRY) else None
    rows = iter(
        rest.order_by("message_id")
        .values_list("message_id", "queue", "group_id")
        .iterator(chunk_size=_BATCH)
    )
    while batch := list(islice(rows, _BATCH)):
        if held is None:
            yield from batch
            continue
        ids = pa.array([row[0] for row in batch], pa.string())
        free = pc.invert(pc.is_in(ids, value_set=held)).to_pylist()
        held_count(len(batch) - sum(free))
        yield from (row for row, keep in zip(batch, free, strict=True) if keep)


def rule_preview(*, rule, now=None, limit=PREVIEW_MAX):
    """What `rule` would act on at `now` (this moment by default), and what it would leave
    alone and why: a Preview. Counts past the reasons the database tells are streamed, up to
    `limit` messages (then `more`)."""
    now = now or timezone.now()
    found = _candidates(rule, now)
    preview = found.preview
    if rule.kind == AUTO_RETRY:
        preview.waiting = MessageIndex.objects.filter(
            state=NDLV,
            group_id=rule.group,
            updated_at__gte=_since(rule, now),
            updated_at__gt=now - timedelta(seconds=rule.delay_seconds),
        ).count()
    if not preview.matching:
        return preview

    def held(n):
        preview.held += n

    for message_id, _, _ in _streamed(rule, found.rest, held):
        if preview.count >= limit:
            preview.more = True
            break
        preview.count += 1
        if len(preview.sample) < SAMPLE_SIZE:
            preview.sample.append(message_id)
    return preview


def rule_rows(*, rule, now):
    """(id, queue, group) of what `rule` acts on at `now`, in id order: its request's scope."""
    found = _candidates(rule, now)
    if not found.preview.matching:
        return iter(())
    return _streamed(rule, found.rest, lambda n: None)
