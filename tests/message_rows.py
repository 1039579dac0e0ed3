"""Message rows (the lake's messages dataset) as tests write them by hand: every column, each one
a plain message's value unless the test says otherwise (tests.ledger_rows writes the events)."""


def message_row(mid, queue, *, body, **columns):
    """Version 1 of message `mid` in `queue`, holding `body` (every column of MESSAGE_SCHEMA),
    with `columns`."""
    return {
        "message_id": mid,
        "version": 1,
        "queue": queue,
        "body": body,
        "body_sha256": "0" * 64,
        "body_size": len(body),
        "content_type": "application/octet-stream",
        "headers": "{}",
        "conversation_id": None,
        "sender": None,
        "enqueued_at": None,
    } | columns
