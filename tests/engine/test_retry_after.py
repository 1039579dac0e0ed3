"""A handler may say when a transient failure is worth trying again (TransientFailure's
`retry_after`, an HTTP receiver's Retry-After): the message waits for the later of that and the
queue's backoff (R5), never less."""

from datetime import timedelta

import pytest

from tests.engine.rows import T0, rule_policy, rule_row
from workers.engine import isolation as iso
from workers.engine import rules
from workers.engine import states as S
from workers.engine.handlers import (
    RETRY_AFTER_LIMIT,
    Message,
    TransientFailure,
    retry_after_seconds,
)


def _fail(policy, retry_after, **row):
    return rules.failed_transiently(
        rule_row(**row),
        policy,
        at=T0,
        actor="w",
        run_id="r",
        reason="503 Service Unavailable",
        retry_after=retry_after,
    )


def test_a_retry_after_later_than_the_backoff_sets_the_wait():
    (ev,) = _fail(rule_policy(backoff_delays=[60]), 3600)
    assert ev["to_state"] == S.WAIT
    assert ev["next_attempt_at"] == T0 + timedelta(hours=1)


def test_a_retry_after_sooner_than_the_backoff_changes_nothing():
    (ev,) = _fail(rule_policy(backoff_delays=[600]), 5)
    assert ev["next_attempt_at"] == T0 + timedelta(seconds=600)


def test_without_a_retry_after_the_backoff_alone_decides():
    (ev,) = _fail(rule_policy(backoff_delays=[600]), None)
    assert ev["next_attempt_at"] == T0 + timedelta(seconds=600)


def test_a_retry_after_also_holds_back_a_periodic_retry():
    policy = rule_policy(backoff_delays=[], periodic_interval=900)
    (ev,) = _fail(policy, 7200)
    assert ev["next_attempt_at"] == T0 + timedelta(hours=2)


def test_a_retry_after_never_saves_a_message_from_max_failed_deliveries():
    (ev,) = _fail(rule_policy(max_failed_deliveries=3), 3600, delivery_count=2)
    assert ev["to_state"] == S.NDLV


def test_a_blocked_message_waits_for_the_later_of_retry_after_and_blocked_retry_timeout():
    policy = rule_policy(
        max_failed_deliveries=1, exception_destination="none", blocked_retry_timeout=60
    )
    (ev,) = _fail(policy, 600)
    assert (ev["to_state"], ev["next_attempt_at"]) == (S.WAIT, T0 + timedelta(seconds=600))


@pytest.mark.parametrize(
    ("given", "seconds"),
    [
        (0, 0.0),
        (2.5, 2.5),
        (10**12, float(RETRY_AFTER_LIMIT)),
        (float("inf"), float(RETRY_AFTER_LIMIT)),
        (-1, None),
        (float("nan"), None),
        (True, None),
        ("60", None),
        (None, None),
    ],
)
def test_only_a_number_of_seconds_is_taken_and_a_week_at_most(given, seconds):
    assert retry_after_seconds(given) == seconds
    assert TransientFailure("busy", retry_after=given).retry_after == seconds


def test_the_isolated_batch_reports_what_each_failure_asked_for():
    def handler(message):
        if message.body == b"busy":
            raise TransientFailure("429 Too Many Requests", retry_after=120)
        if message.body == b"down":
            raise ConnectionError("refused")
        if message.body == b"tampered":
            exc = TransientFailure("503")
            exc.retry_after = "soon"  # not a number: not believed
            raise exc

    messages = [
        Message(id=f"m{i}", queue="q", body=body, content_type="text/plain")
        for i, body in enumerate([b"busy", b"down", b"ok", b"tampered"])
    ]
    result = iso.run_isolated(messages, handler)
    assert result.codes == [iso.TRANSIENT, iso.TRANSIENT, iso.SUCCESS, iso.TRANSIENT]
    assert result.failures[0][:2] == ("429 Too Many Requests", "TransientFailure")
    assert result.retry_after == {0: 120.0}
