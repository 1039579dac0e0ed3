"""R9 with a real `manage.py deliver` process: an entry reported to the poison list while a run
is going on reaches that run before its next batch. The reported message is quarantined "on the
poison list" without its handler being called."""

import pytest

from console.browse.selectors import message_detail
from console.delivery.poison import poison_report
from console.ingest.services import messages_ingest
from console.queues.models import Queue
from tests.processes.conftest import wait_for
from workers.engine import states as S

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_an_entry_reported_mid_run_reaches_the_run_before_its_next_batch(
    processes, personas, tmp_path
):
    # disable_after keeps the queue's messages in one partition, in the order they came in.
    Queue.objects.create(
        name="orders", handler="tests.handlers_for_tests.held_and_recorded", disable_after=100
    )
    calls, flag = tmp_path / "calls", tmp_path / "hold"
    calls.mkdir()
    flag.touch()
    records = [
        {
            "id": "first",
            "queue": "orders",
            "body": "{}",
            "headers": {"record-to": str(calls), "hold-while": str(flag)},
        },
        {"id": "second", "queue": "orders", "body": "{}", "headers": {"record-to": str(calls)}},
    ]
    assert messages_ingest(records=records, source="test").accepted == 2

    deliver = processes.start(
        "manage.py",
        "deliver",
        log=tmp_path / "deliver.log",
        # One message a batch: the second one's batch starts after the report.
        env={"DELIVERY_BATCH_SIZE": "1", "REFRESH_ON_COMMIT": "false"},
    )
    wait_for(
        lambda: message_detail(message_id="second")["state"] == S.DLNG,
        timeout=180,
        what="the run to claim both messages",
    )
    poison_report(
        actor=personas["application"], message_id="second", reason="crashed the billing app"
    )
    flag.unlink()
    assert deliver.wait(timeout=180) == 0

    assert message_detail(message_id="first")["state"] == S.DLVD
    second = message_detail(message_id="second")
    assert second["state"] == S.NDLV
    assert second["reason"] == f"{S.REASON_POISON_LIST}: crashed the billing app"
    assert sorted(p.name for p in calls.iterdir()) == ["first"]  # its handler never ran
