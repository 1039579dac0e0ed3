"""The shared poison list and delivery runs (R9): a failure an outside application reports
through the client keeps the message from its handler; several entries sharing a body neither
deliver a message twice nor quarantine it twice. Real ingest, real Spark, a live server."""

import hashlib

import pytest

from console.delivery.poison import poison_entries_put
from tests.delivery.conftest import both_paths
from tests.poison_client import poison_list
from workers.engine import states as S

pytestmark = [pytest.mark.spark, pytest.mark.slow, both_paths]


def test_a_message_an_application_reported_is_quarantined_without_calling_its_handler(
    engine, live_server, personas, tmp_path
):
    engine.queue(handler="tests.handlers_for_tests.calls_recorded")
    engine.ingest("orders", {"order-7": "x", "order-8": "y"}, headers={"record-to": str(tmp_path)})
    poison = poison_list(live_server, personas["application"])
    poison.load()

    poison.report("order-7", "crashed the billing app", queue="orders", body=b"x")
    engine.deliver()

    state = engine.state("order-7")
    assert (state["state"], state["delivery_count"]) == (S.NDLV, 0)
    assert state["reason"] == "on the poison list: crashed the billing app"
    assert not (tmp_path / "order-7").exists()
    assert engine.state("order-8")["state"] == S.DLVD
    assert (tmp_path / "order-8").read_text() == "called\n"


def test_a_body_several_entries_share_delivers_or_quarantines_a_message_once(
    engine, personas, tmp_path
):
    engine.queue(handler="tests.handlers_for_tests.calls_recorded")
    engine.queue(
        "orders.strict",
        handler="tests.handlers_for_tests.calls_recorded",
        poison_match="id_or_body",
    )
    bad = hashlib.sha256(b"same").hexdigest()
    poison_entries_put(
        entries=[("old-1", "orders", "crashed", bad), ("old-2", "orders", "crashed too", bad)],
        source="engine",
    )
    headers = {"record-to": str(tmp_path)}
    engine.ingest("orders", {"lenient": "same"}, headers=headers)
    engine.ingest("orders.strict", {"strict": "same"}, headers=headers)

    engine.deliver()

    assert (tmp_path / "lenient").read_text() == "called\n"
    assert engine.transitions("lenient") == [(None, S.TBDL), (S.TBDL, S.DLNG), (S.DLNG, S.DLVD)]
    assert not (tmp_path / "strict").exists()
    assert engine.transitions("strict") == [(None, S.TBDL), (S.TBDL, S.DLNG), (S.DLNG, S.NDLV)]
