"""The operations commands: deliver, sweep_leases, and a handler that stopped importing."""

import re

import pytest
from django.core.management import CommandError, call_command

from console.delivery.models import DeliveryRun
from console.queues.models import Queue
from workers.engine import states as S

pytestmark = [pytest.mark.spark]


def test_deliver_until_idle_runs_until_nothing_is_due(engine, settings, capsys):
    engine.queue(handler="tests.handlers_for_tests.always_ok")
    ids = engine.ingest("orders", ["ok"] * 3)
    call_command("deliver", "--until-idle")
    out = capsys.readouterr().out
    assert re.search(r"^run \d+: 3 claimed; DLVD 3$", out, re.M)
    assert re.search(r"^run \d+: 0 claimed; nothing due$", out, re.M)
    assert out.endswith("2 run(s)\n")
    assert all(engine.state(m)["state"] == S.DLVD for m in ids)


def test_deliver_refuses_an_unknown_queue(engine):
    with pytest.raises(CommandError, match="unknown queue"):
        call_command("deliver", "--queue", "nope")


def test_deliver_only_the_queue_named(engine):
    engine.queue(handler="tests.handlers_for_tests.always_ok")
    engine.queue("other", handler="tests.handlers_for_tests.always_ok")
    (mine,) = engine.ingest("orders", ["ok"])
    (theirs,) = engine.ingest("other", ["ok"])
    call_command("deliver", "--queue", "orders")
    assert engine.state(mine)["state"] == S.DLVD
    assert engine.state(theirs)["state"] == S.TBDL


def test_sweep_leases_with_nothing_dead_recovers_nothing(engine, capsys):
    call_command("sweep_leases")
    assert "0 message(s) recovered" in capsys.readouterr().out
    assert not DeliveryRun.objects.exists()


def test_a_handler_that_no_longer_imports_gives_a_clear_state_and_loses_nothing(engine):
    # Validated when saved; this one broke afterwards (a deployment without its module).
    Queue.objects.create(
        name="orders",
        handler="tests.gone_module.handle",
        max_failed_deliveries=2,
        backoff_delays=[1],
    )
    (mid,) = engine.ingest("orders", ["ok"])
    engine.deliver()
    state = engine.state(mid)
    assert state["state"] == S.WAIT
    assert state["reason"].startswith("handler cannot be imported: cannot import module")
    assert state["exception_type"] == "HandlerImportError"
    engine.later(minutes=1)
    engine.deliver_until_idle()
    assert engine.state(mid)["state"] == S.NDLV
