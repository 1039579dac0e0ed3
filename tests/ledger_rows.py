"""Ledger rows (the lake's events dataset) as tests write them by hand: every column, each one an
uneventful row's value unless the test says otherwise."""

from workers.lake.schema import NEW_MESSAGE_COLUMNS


def event_row(mid, epoch, step, frm, to, *, at, queue, **columns):
    """`mid` moved from `frm` to `to` at `at` (every column of EVENT_SCHEMA), with `columns`."""
    return {
        "message_id": mid,
        "epoch": epoch,
        "step": step,
        "at": at,
        "from_state": frm,
        "to_state": to,
        "queue": queue,
        **NEW_MESSAGE_COLUMNS,
        "actor": "test",
        "run_id": None,
        "reason": None,
        "exception_type": None,
        "stack": None,
        "queue_streak": None,
    } | columns


def naive(t):
    """Spark hands timestamps back as naive datetimes in the session's time zone (UTC)."""
    return t.replace(tzinfo=None)
