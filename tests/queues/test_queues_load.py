"""queues_load and `manage.py load_queues`: queues as code, all or nothing."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from console.queues.models import Queue
from console.queues.services import QueueLoadError, queues_load

pytestmark = pytest.mark.django_db

ORDERS = {"name": "orders", "handler": "workers.demo.handlers.orders"}
PAYMENTS = {"name": "payments", "handler": "workers.demo.handlers.payments"}


def _load(*entries):
    return {r.name: r.status for r in queues_load(data=list(entries))}


def _command(path):
    out = StringIO()
    call_command("load_queues", str(path), stdout=out)
    return out.getvalue()


def test_it_creates_a_queue_with_the_policy_of_the_file():
    _load({**ORDERS, "max_failed_deliveries": 3, "backoff_every": 5, "backoff_delays": [300, 600]})

    queue = Queue.objects.get(name="orders")
    assert queue.handler == "workers.demo.handlers.orders"
    assert queue.max_failed_deliveries == 3
    assert queue.backoff_every == 5
    assert queue.backoff_delays == [300, 600]
    assert queue.exception_destination == "quarantine"
    assert queue.enabled is True


def test_it_reads_a_mapping_with_a_queues_key():
    results = queues_load(data={"queues": [ORDERS, PAYMENTS]})

    assert [(r.name, r.status) for r in results] == [("orders", "created"), ("payments", "created")]


def test_loading_the_same_entries_again_leaves_every_queue_unchanged():
    _load(ORDERS, PAYMENTS)
    before = Queue.objects.get(name="orders").updated_at

    assert _load(ORDERS, PAYMENTS) == {"orders": "unchanged", "payments": "unchanged"}
    assert Queue.objects.get(name="orders").updated_at == before


def test_a_changed_entry_updates_its_queue_and_names_the_changed_fields():
    _load(ORDERS, PAYMENTS)

    results = queues_load(data=[{**ORDERS, "disable_after": 5}, PAYMENTS])

    assert [(r.name, r.status, r.changed) for r in results] == [
        ("orders", "updated", ("disable_after",)),
        ("payments", "unchanged", ()),
    ]
    assert Queue.objects.get(name="orders").disable_after == 5


def test_a_field_left_out_on_reload_goes_back_to_its_default():
    _load({**ORDERS, "poison_match": "id_or_body"})

    _load(ORDERS)

    assert Queue.objects.get(name="orders").poison_match == "id"


def test_queues_missing_from_the_file_are_left_alone():
    _load(ORDERS, PAYMENTS)

    _load(ORDERS)

    assert Queue.objects.filter(name="payments").exists()


def test_it_refuses_a_handler_that_does_not_import_and_names_the_queue():
    with pytest.raises(QueueLoadError) as caught:
        _load({"name": "refunds", "handler": "workers.demo.no_such_module.refund"})

    assert "queue 'refunds'" in str(caught.value)
    assert "workers.demo.no_such_module" in str(caught.value)
    assert not Queue.objects.exists()


def test_it_refuses_a_handler_the_module_does_not_have():
    with pytest.raises(QueueLoadError, match=r"queue 'refunds'.*has no attribute 'refund'"):
        _load({"name": "refunds", "handler": "workers.demo.handlers.refund"})


def test_one_bad_entry_refuses_the_whole_file():
    _load(ORDERS)

    with pytest.raises(QueueLoadError):
        _load(
            {**ORDERS, "max_failed_deliveries": 9},
            PAYMENTS,
            {"name": "bad name!", "handler": "x.y"},
        )

    assert Queue.objects.get(name="orders").max_failed_deliveries == 5
    assert not Queue.objects.filter(name="payments").exists()


def test_it_lists_every_problem_of_the_file_at_once():
    with pytest.raises(QueueLoadError) as caught:
        _load({**ORDERS, "backoff_every": 0}, {**PAYMENTS, "on_permanent": "drop"})

    assert len(caught.value.errors) == 2
    assert "queue 'orders' (entry 1): backoff_every: must be at least 1" in caught.value.errors[0]
    assert "queue 'payments' (entry 2): on_permanent" in caught.value.errors[1]


def test_it_refuses_a_field_the_policy_does_not_know():
    with pytest.raises(QueueLoadError, match="unknown field\\(s\\): max_retries"):
        _load({**ORDERS, "max_retries": 3})


def test_it_refuses_runtime_state_in_a_file():
    with pytest.raises(QueueLoadError, match="consecutive_failures is not a policy field"):
        _load({**ORDERS, "consecutive_failures": 0})


def test_it_refuses_a_queue_defined_twice():
    with pytest.raises(
        QueueLoadError, match="queue 'orders' \\(entry 2\\): also defined by entry 1"
    ):
        _load(ORDERS, {**ORDERS, "disable_after": 5})


def test_it_refuses_an_entry_that_is_not_a_mapping():
    with pytest.raises(QueueLoadError, match="entry 1: must be a mapping"):
        _load("orders")


def test_it_refuses_a_document_that_is_not_a_list_of_queues():
    with pytest.raises(QueueLoadError, match="expected a list of queues"):
        queues_load(data={"queues": {"orders": ORDERS}})
    with pytest.raises(QueueLoadError, match="unexpected top-level key"):
        queues_load(data={"queues": [ORDERS], "version": 2})


def test_an_exception_queue_may_be_defined_later_in_the_same_file():
    shipping = {
        "name": "shipping",
        "handler": "workers.demo.handlers.shipping",
        "exception_destination": "queue:shipping.exceptions",
    }
    backout = {
        "name": "shipping.exceptions",
        "handler": "workers.demo.handlers.shipping_exceptions",
    }

    assert _load(shipping, backout) == {"shipping": "created", "shipping.exceptions": "created"}


def test_an_exception_queue_may_already_exist():
    _load({"name": "manual", "handler": "workers.demo.handlers.noop"})

    _load({**ORDERS, "exception_destination": "queue:manual"})

    assert Queue.objects.get(name="orders").exception_destination == "queue:manual"


def test_it_refuses_an_exception_queue_that_exists_nowhere():
    with pytest.raises(QueueLoadError) as caught:
        _load({**ORDERS, "exception_destination": "queue:orders.backout"})

    assert "queue 'orders' (entry 1): exception_destination 'queue:orders.backout'" in str(
        caught.value
    )
    assert "does not exist" in str(caught.value)


def test_it_refuses_a_queue_that_is_its_own_exception_queue():
    with pytest.raises(QueueLoadError, match="names the queue itself"):
        _load({**ORDERS, "exception_destination": "queue:orders"})


def test_reloading_a_file_that_says_nothing_of_enabled_keeps_a_disabled_queue_disabled():
    _load(ORDERS)
    Queue.objects.filter(name="orders").update(
        enabled=False, disabled_at=timezone.now(), disabled_reason="5 failures in a row"
    )

    assert _load(ORDERS) == {"orders": "unchanged"}

    queue = Queue.objects.get(name="orders")
    assert queue.enabled is False
    assert queue.disabled_reason == "5 failures in a row"


def test_an_explicit_enabled_true_re_enables_a_disabled_queue():
    _load(ORDERS)
    Queue.objects.filter(name="orders").update(
        enabled=False,
        disabled_at=timezone.now(),
        disabled_reason="5 failures",
        consecutive_failures=5,
    )

    assert _load({**ORDERS, "enabled": True}) == {"orders": "updated"}

    queue = Queue.objects.get(name="orders")
    assert (queue.enabled, queue.disabled_at, queue.disabled_reason) == (True, None, "")
    assert queue.consecutive_failures == 0


def test_an_explicit_enabled_false_disables_a_queue():
    _load(ORDERS)

    _load({**ORDERS, "enabled": False})

    assert Queue.objects.get(name="orders").enabled is False


def test_a_new_queue_may_start_disabled():
    _load({**ORDERS, "enabled": False})

    assert Queue.objects.get(name="orders").enabled is False


def test_the_command_reads_yaml_and_says_what_it_did_per_queue(tmp_path):
    path = tmp_path / "queues.yaml"
    path.write_text(
        "queues:\n"
        "  - name: orders\n"
        "    handler: workers.demo.handlers.orders\n"
        "  - name: payments\n"
        "    handler: workers.demo.handlers.payments\n"
    )
    assert "orders    created" in _command(path)

    path.write_text(path.read_text() + "    on_permanent: return_to_sender\n")
    output = _command(path)

    assert "orders    unchanged" in output
    assert "payments  updated (on_permanent)" in output
    assert "0 created, 1 updated, 1 unchanged" in output


def test_the_command_reads_a_top_level_json_list(tmp_path):
    path = tmp_path / "queues.json"
    path.write_text(json.dumps([ORDERS]))

    assert "orders  created" in _command(path)


def test_the_command_fails_naming_the_queue_whose_handler_does_not_import(tmp_path):
    path = tmp_path / "queues.json"
    path.write_text(json.dumps([ORDERS, {"name": "refunds", "handler": "shop.refunds.handle"}]))

    with pytest.raises(CommandError) as caught:
        _command(path)

    assert "refused, nothing was changed" in str(caught.value)
    assert "queue 'refunds' (entry 2): handler 'shop.refunds.handle' cannot be used" in str(
        caught.value
    )
    assert not Queue.objects.exists()


def test_the_command_refuses_a_file_that_does_not_parse(tmp_path):
    path = tmp_path / "queues.json"
    path.write_text("[{'name': 'orders'")

    with pytest.raises(CommandError, match="is not valid json"):
        _command(path)


def test_the_command_refuses_a_missing_file(tmp_path):
    with pytest.raises(CommandError, match="cannot read"):
        _command(tmp_path / "nope.yaml")
