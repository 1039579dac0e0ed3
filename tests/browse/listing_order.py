"""The message list's order, walked and worked out by hand: the list's keyset pages followed one
after the other, and the order they should give, computed here without the selector's SQL."""

from datetime import timedelta

from console.browse.selectors import SORTS, message_page
from tests.browse.conftest import T0


def pages_walked(filters, sort, size):
    """The ids the list shows for `filters` and `sort`, page after page, and how many pages."""
    ids, after, pages = [], None, 0
    while True:
        page = message_page(filters=filters, sort=sort, after=after, size=size)
        ids += [row.message_id for row in page.rows]
        pages += 1
        if not page.next_cursor:
            return ids, pages
        after = page.next_cursor


def order_by_hand(rows, sort):
    """By the sort column then the id, those without a value (never failed) after the others, by
    id in the same direction."""
    column, _ = SORTS[sort.lstrip("-")]
    desc = sort.startswith("-")
    valued = sorted(
        (r for r in rows if getattr(r, column) is not None),
        key=lambda r: (getattr(r, column), r.message_id),
        reverse=desc,
    )
    empty = sorted(
        (r for r in rows if getattr(r, column) is None), key=lambda r: r.message_id, reverse=desc
    )
    return [r.message_id for r in valued + empty]


def rows_with_ties(index, count, *, never_failed_every, enqueued_hours, attempts, states=("NDLV",)):
    """`count` index rows over three queues, their failure times in four tied minutes, every
    `never_failed_every`th never failed (no last_failure_at); the other columns cycle through
    `enqueued_hours`, `attempts` and `states`. Returns their ids, m-00… in order."""
    width = len(str(count - 1))
    return [
        index.row(
            f"m-{i:0{width}d}",
            queue=("orders", "payments", "shipping")[i % 3],
            last_failure_at=None if i % never_failed_every == 0 else T0 + timedelta(minutes=i % 4),
            enqueued_at=T0 - timedelta(hours=i % enqueued_hours),
            delivery_count=i % attempts,
            state=states[i % len(states)],
        ).message_id
        for i in range(count)
    ]
