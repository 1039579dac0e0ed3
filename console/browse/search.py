"""The search box: one query, looked up where a person would look for it.

A message id, whole or its beginning, goes straight to the message (its page reads the lake, so a
message that never failed is found too). Any other text is looked up as
- the start of message ids (every accepted message's key, not only the indexed ones);
- words of the latest failure's reason (PostgreSQL's trigram index on it);
- a sender or a conversation, exactly (their indexes);
- failure groups, by pattern, exception type or queue; queues, by name.

Each look-up is bounded: a count stops at SEARCH_COUNT_CAP, a list at what the page shows. Text
shorter than MIN_TEXT is looked up as an id, a sender and a conversation only: two letters match
half of every reason, and no index helps with that.
"""

from dataclasses import dataclass, field

from django.db import connection
from django.db.models import Q

from console.browse.selectors import MatchCount, message_match_count
from console.ingest.models import MessageKey
from console.queues.models import Queue
from console.readmodels.models import FailureGroup

QUERY_MAX = 200
MIN_TEXT = 3
IDS_SHOWN = 20
GROUPS_SHOWN = 20
QUEUES_SHOWN = 20
SEARCH_COUNT_CAP = 1_000


@dataclass
class SearchResult:
    query: str
    # The message to open at once: the id matched exactly, or it is the only one starting so and
    # nothing else matched.
    go_to: str | None = None
    ids: list = field(default_factory=list)
    more_ids: bool = False
    reasons: MatchCount | None = None
    senders: MatchCount | None = None
    conversations: MatchCount | None = None
    groups: list = field(default_factory=list)
    queues: list = field(default_factory=list)
    too_short: bool = False

    @property
    def found(self):
        counts = (self.reasons, self.senders, self.conversations)
        return bool(self.ids or self.groups or self.queues or any(c and c.count for c in counts))


def query_clean(raw):
    """The query as searched: stripped, at most QUERY_MAX characters, no control characters."""
    text = "".join(ch for ch in (raw or "") if ch.isprintable())
    return text.strip()[:QUERY_MAX]


def ids_starting(prefix, *, limit):
    """Up to `limit` accepted message ids that start with `prefix`, in order."""
    if connection.vendor == "sqlite":
        # SQLite's LIKE ignores ASCII case and walks no index; in its binary order the ids that
        # start with `prefix` are a range of the primary key.
        qs = MessageKey.objects.filter(message_id__gte=prefix, message_id__lt=prefix + "\U0010ffff")
    else:
        # PostgreSQL walks the primary key's varchar_pattern_ops index for LIKE 'prefix%'.
        qs = MessageKey.objects.filter(message_id__startswith=prefix)
    ids = qs.order_by("message_id").values_list("message_id", flat=True)[:limit]
    return [i for i in ids if i.startswith(prefix)]


def search(*, query, groups=True):
    """What `query` finds. `groups`: whether the person may see failure groups."""
    q = query_clean(query)
    result = SearchResult(query=q)
    if not q:
        return result
    if MessageKey.objects.filter(message_id=q).exists():
        result.go_to = q
        return result
    ids = ids_starting(q, limit=IDS_SHOWN + 1)
    result.ids, result.more_ids = ids[:IDS_SHOWN], len(ids) > IDS_SHOWN
    cap = SEARCH_COUNT_CAP
    result.senders = message_match_count(filters={"sender": q}, cap=cap)
    result.conversations = message_match_count(filters={"conversation": q}, cap=cap)
    if len(q) < MIN_TEXT:
        result.too_short = True
    else:
        result.reasons = message_match_count(filters={"q": q}, cap=cap)
        if groups:
            result.groups = list(
                FailureGroup.objects.filter(
                    Q(pattern__icontains=q) | Q(exception_type__icontains=q) | Q(queue__icontains=q)
                ).order_by("-ndlv", "-wait", "-count", "fingerprint")[:GROUPS_SHOWN]
            )
        result.queues = list(
            Queue.objects.filter(name__icontains=q)
            .order_by("name")
            .values_list("name", flat=True)[:QUEUES_SHOWN]
        )
    if len(result.ids) == 1 and not result.more_ids:
        others = (result.reasons, result.senders, result.conversations)
        if not (result.groups or result.queues or any(c and c.count for c in others)):
            result.go_to = result.ids[0]
    return result
