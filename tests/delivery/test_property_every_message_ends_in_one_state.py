"""Property: whatever the policies and whatever the handlers do, every ingested message ends in
exactly one state, and its history is a chain of transitions SEMANTICS.md allows."""

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console.lake.selectors import lake_paths
from console.lake.services import lake
from console.queues.models import Queue
from workers.engine import states as S

pytestmark = [pytest.mark.spark, pytest.mark.slow]

_examples = itertools.count()

policies = st.fixed_dictionaries(
    {
        "max_failed_deliveries": st.integers(0, 4),
        "exception_destination": st.sampled_from(["quarantine", "none", "queue:{dlq}"]),
        "blocked_retry_timeout": st.integers(1, 600),
        "backoff_every": st.integers(1, 3),
        "backoff_delays": st.lists(st.integers(0, 900), max_size=3),
        "on_permanent": st.sampled_from(["quarantine", "return_to_sender"]),
        "poison_match": st.sampled_from(["id", "id_or_body"]),
        "disable_after": st.sampled_from([0, 0, 3]),
    }
)
step = st.sampled_from(["ok", "t", "p", "c"])
scripts = st.lists(st.lists(step, min_size=1, max_size=4).map(",".join), min_size=1, max_size=8)
conversations = st.lists(st.sampled_from([None, "a", "b"]), min_size=8, max_size=8)


@settings(
    max_examples=5,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(policy=policies, bodies=scripts, convs=conversations)
def test_every_message_ends_in_exactly_one_state_through_allowed_transitions(
    engine, policy, bodies, convs
):
    n = next(_examples)
    queue, dlq = f"q{n}", f"q{n}.dlq"
    engine.queue(dlq, handler="tests.handlers_for_tests.always_ok")
    policy = dict(policy, exception_destination=policy["exception_destination"].format(dlq=dlq))
    engine.queue(queue, handler="tests.handlers_for_tests.sequence", **policy)
    ids = []
    for i, body in enumerate(bodies):
        mid = f"{queue}-{i}"
        engine.ingest(
            queue,
            {mid: body},
            conversation_id=convs[i] and f"{queue}-{convs[i]}",
            sender="sender@example.test",
        )
        ids.append(mid)

    # Deliver, a day later each time so everything waiting is due, re-enabling a queue that R11
    # disabled as an administrator would. Policies without a limit retry forever, so the loop is
    # bounded rather than run until idle.
    idle = False
    for _ in range(10):
        run = engine.deliver()
        engine.later(days=1)
        reenabled = Queue.objects.filter(enabled=False).update(enabled=True, consecutive_failures=0)
        if run.claimed == 0 and not reenabled:
            idle = True
            break

    ledger = lake().read_arrow("events", lake_paths(dataset="events")).to_pylist()
    by_message = {}
    for ev in sorted(ledger, key=lambda e: (e["epoch"], e["step"])):
        by_message.setdefault(ev["message_id"], []).append(ev)
    for mid in ids:
        history = by_message[mid]
        assert history[0]["from_state"] is None and history[0]["to_state"] == S.TBDL
        for before, after in itertools.pairwise(history):
            assert after["from_state"] == before["to_state"], (mid, before, after)
        for ev in history:
            assert S.is_allowed(ev["from_state"], ev["to_state"]), (mid, ev)
        final = history[-1]["to_state"]
        # Nothing is left in flight: every message is final, quarantined, or waiting its turn.
        assert final != S.DLNG, (mid, final)
        if idle:
            assert final in {S.DLVD, S.NDLV, S.ENDED, S.WAIT}, (mid, final)
        if final == S.WAIT and idle:
            assert policy["exception_destination"] == "none" or not policy["max_failed_deliveries"]
