"""The scene the tests of a queue's oldest quarantined message share: quarantined messages behind
an older message of another state, which must not count."""

from datetime import timedelta


def quarantined_behind_an_older_message(index, now, *, state, older):
    """Queue orders: a message of `state` failed `older` ago, then two quarantined ones, the
    oldest failed 5 hours ago and the other 1 hour ago."""
    index.stats("orders", NDLV=2, **{state: 1})
    index.row(f"older-{state.lower()}", state=state, last_failure_at=now - older)
    index.row("oldest", last_failure_at=now - timedelta(hours=5))
    index.row("newer", last_failure_at=now - timedelta(hours=1))
