"""Quarantined messages of orders put in the index by hand (no Spark, no delivery run), for the
pages that list them."""

from datetime import timedelta

from tests.browse.conftest import T0, Index


def quarantined_orders(ids):
    """`ids` quarantined in orders, each failing a minute after the one before; returned as the
    message list shows them, the newest failure first."""
    index = Index()
    index.queue("orders")
    for minute, message_id in enumerate(ids):
        index.row(message_id, last_failure_at=T0 + timedelta(minutes=minute))
    return list(reversed(ids))
