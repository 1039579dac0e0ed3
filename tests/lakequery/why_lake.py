"""A failure group with two causes among ten decoys, made by real ingest, delivery and refresh:
orders delivered by a handler (tests.handlers_for_tests.booked) that refuses a booking without
`currency` in its body or with the header `x-region: eu-west-3`, in one failure group. For the
tests of "why do these fail" (tests/lakequery, tests/browser)."""

import json
import random

from console.ingest.services import messages_ingest
from console.readmodels.models import FailureGroup

NO_CURRENCY, EU_WEST, DELIVERED = 60, 40, 200
DECOY_FIELDS = ("note", "channel", "coupon", "gift", "locale")
DECOY_HEADERS = ("x-trace", "x-client", "x-retry", "x-tenant", "x-shard")


def _order(n, rng, *, currency, region):
    body = {"order": n, "amount": rng.randint(1, 500)}
    if currency:
        body["currency"] = "EUR"
    headers = {"x-region": region}
    for name in DECOY_FIELDS:
        if rng.random() < 0.5:
            body[name] = rng.choice(["a", "b"])
    for name in DECOY_HEADERS:
        if rng.random() < 0.5:
            headers[name] = rng.choice(["1", "2"])
    return json.dumps(body), headers


def failing_orders(desk):
    """The orders delivered once: 100 fail (60 without currency, 40 from eu-west-3), 200 are
    delivered. The failure group they make."""
    desk.queue("orders", handler="tests.handlers_for_tests.booked")
    rng = random.Random(46)
    causes = (
        [(False, "us-east-1")] * NO_CURRENCY
        + [(True, "eu-west-3")] * EU_WEST
        + [(True, "us-east-1")] * DELIVERED
    )
    records = []
    for n, (currency, region) in enumerate(causes):
        body, headers = _order(n, rng, currency=currency, region=region)
        records.append({"id": f"o-{n:03d}", "queue": "orders", "body": body, "headers": headers})
    result = messages_ingest(records=records, source="test")
    assert result.accepted == len(causes), result.errors
    desk.deliver_until_idle()
    desk.refresh()
    (found,) = FailureGroup.objects.filter(queue="orders")
    assert found.ndlv == NO_CURRENCY + EU_WEST
    return found
