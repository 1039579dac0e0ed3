"""Why do these fail (workers.jobs.failure_traits), as a pure transform on the real Spark
session: failures caused by one absent JSON field and one header value, among ten decoys that
failures and deliveries share alike, give those two causes as the top two findings, with their
counts on both sides."""

import json
import random

import pytest

from workers.jobs.failure_traits import (
    FIELD,
    HEADER_VALUE,
    NOT_JSON,
    findings,
    trait_counts,
    traits,
)

pytestmark = pytest.mark.spark

FAILURES, DELIVERIES = 200, 2000
DECOY_FIELDS = ("note", "channel", "coupon", "gift", "locale")
DECOY_HEADERS = ("x-trace", "x-client", "x-retry", "x-tenant", "x-shard")


def _message(message_id, *, currency, region, rng):
    body = {"order": message_id, "amount": rng.randint(1, 500)}
    if currency:
        body["currency"] = "EUR"
    for name in DECOY_FIELDS:
        if rng.random() < 0.5:
            body[name] = rng.choice(["a", "b", "c"])
    headers = {"x-region": region}
    for name in DECOY_HEADERS:
        if rng.random() < 0.5:
            headers[name] = rng.choice(["1", "2", "3"])
    text = json.dumps(body).encode()
    return {
        "message_id": message_id,
        "body": text,
        "headers": json.dumps(headers),
        "content_type": "application/json",
        "sender": rng.choice(["shop", "app"]),
        "body_size": len(text),
    }


def _side(prefix, count, *, lacking, from_eu, rng):
    """`count` messages, the first `lacking` without `currency`, the first `from_eu` from
    eu-west-3."""
    return [
        _message(
            f"{prefix}-{n}",
            currency=n >= lacking,
            region="eu-west-3" if n < from_eu else "us-east-1",
            rng=rng,
        )
        for n in range(count)
    ]


def _lake(rng):
    """194 of the failures lack `currency` and 180 come from eu-west-3; of the deliveries, 4
    lack it and 20 come from there."""
    failures = _side("f", FAILURES, lacking=194, from_eu=180, rng=rng)
    return failures, _side("d", DELIVERIES, lacking=4, from_eu=20, rng=rng)


def _counts(spark, rows):
    frame = spark.createDataFrame(
        rows,
        "message_id string, body binary, headers string, content_type string, "
        "sender string, body_size long",
    )
    return [tuple(r) for r in trait_counts(traits(frame)).collect()]


def test_the_absent_field_and_the_header_value_are_the_top_two_findings(spark):
    failures, deliveries = _lake(random.Random(7))
    found = findings(_counts(spark, failures), _counts(spark, deliveries), FAILURES, DELIVERIES)
    first, second = found[:2]
    assert (first.kind, first.name, first.absent) == (FIELD, "currency", True)
    assert (first.failures, first.failures_total, first.deliveries, first.deliveries_total) == (
        194,
        200,
        4,
        2000,
    )
    assert (second.kind, second.name, second.value) == (HEADER_VALUE, "x-region", "eu-west-3")
    assert (second.failures, second.deliveries) == (180, 20)
    assert round(first.failures_share, 3) == 0.97
    assert round(first.deliveries_share, 3) == 0.002
    # No decoy is anywhere near: each is as common among deliveries as among failures.
    decoys = [f for f in found[2:] if f.name in DECOY_FIELDS + DECOY_HEADERS]
    assert all(f.failures_share - f.deliveries_share < 0.15 for f in decoys)


def test_a_body_that_is_not_json_is_a_trait_of_its_own(spark):
    rng = random.Random(3)
    failures = [
        {**_message(f"f-{n}", currency=True, region="us-east-1", rng=rng), "body": b"\xff\x00"}
        for n in range(20)
    ]
    deliveries = [_message(f"d-{n}", currency=True, region="us-east-1", rng=rng) for n in range(20)]
    (top, *_) = findings(_counts(spark, failures), _counts(spark, deliveries), 20, 20)
    assert (top.kind, top.failures, top.deliveries) == (NOT_JSON, 20, 0)
