"""Creating a lake query: who may, which criteria are accepted (and what a refusal says), the
audit entry, and the task handed to the broker once the query is committed."""

from datetime import datetime, timedelta, timezone

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from console.audit.models import AuditEntry
from console.lakequery.models import LakeQuery
from console.lakequery.services import lake_query_create

BEHIND = timezone(timedelta(hours=-5))


@pytest.fixture
def delays(monkeypatch):
    calls = []
    from console.lakequery.tasks import lake_query_task

    monkeypatch.setattr(lake_query_task, "delay", lambda *a, **k: calls.append(a))
    return calls


def test_an_operator_creates_a_queued_query_handed_to_the_spark_worker_once_committed(
    personas, delays, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        query = lake_query_create(
            actor=personas["operator"],
            criteria={"states": ["NDLV", "DLVD"], "body_contains": "declined", "sender": ""},
        )

    assert (query.status, query.requester, query.body_criteria) == (
        LakeQuery.QUEUED,
        personas["operator"],
        True,
    )
    assert query.criteria == {"states": ["DLVD", "NDLV"], "body_contains": "declined"}
    assert delays == [(query.id,)]
    entry = AuditEntry.objects.get()
    assert (entry.actor, entry.action, entry.target_type, entry.target_id) == (
        "operator",
        "lake_query.created",
        "lake_query",
        str(query.id),
    )
    assert entry.details == query.criteria


def test_nothing_is_handed_over_when_the_transaction_rolls_back(
    personas, delays, django_capture_on_commit_callbacks
):
    from django.db import transaction

    with (
        django_capture_on_commit_callbacks(execute=True),
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        lake_query_create(actor=personas["operator"], criteria={"queues": ["orders"]})
        raise RuntimeError("later step failed")

    assert delays == []
    assert not LakeQuery.objects.exists()


@pytest.mark.parametrize("role", ["viewer", "auditor", "outsider"])
def test_those_who_may_only_look_or_not_even_that_cannot_run_a_query(personas, role):
    with pytest.raises(PermissionDenied, match="may not run lake queries"):
        lake_query_create(actor=personas[role], criteria={"states": ["NDLV"]})


def test_an_admin_runs_metadata_queries(personas):
    query = lake_query_create(actor=personas["admin"], criteria={"header_name": "trace"})

    assert query.body_criteria is False


@pytest.mark.parametrize(
    "criteria",
    [
        {"body_contains": "password"},
        {"body_regex": "card=\\d+"},
        {"json_path": "$.customer.email", "json_equals": "a@example.test"},
    ],
)
def test_searching_bodies_needs_the_permission_to_read_them(personas, criteria):
    with pytest.raises(PermissionDenied, match="permission to read bodies"):
        lake_query_create(actor=personas["admin"], criteria={"queues": ["orders"], **criteria})

    assert not LakeQuery.objects.exists()


@pytest.mark.parametrize(
    ("criteria", "message"),
    [
        ({}, "give at least one criterion"),
        ({"sender": "", "queues": []}, "give at least one criterion"),
        ({"everything": True}, "unknown criterion 'everything'"),
        ({"states": ["NDLV", "LOST"]}, "unknown state 'LOST'; the states are TBDL, WAIT"),
        ({"states": "NDLV"}, "states must be a list of names"),
        ({"queues": ["orders", 7]}, "queues must be a list of names"),
        ({"sender": 42}, "sender must be text"),
        ({"sender": "x" * 301}, "sender is at most 300 characters"),
        ({"body_regex": "(unclosed"}, "body_regex is not a valid regular expression"),
        ({"json_path": "$.order.id"}, "json_path and json_equals go together"),
        ({"json_equals": "7"}, "json_path and json_equals go together"),
        ({"json_path": "order.id", "json_equals": "7"}, "json_path is a path such as"),
        ({"json_path": "$..id", "json_equals": "7"}, "json_path is a path such as"),
        ({"json_path": "$.a['b']", "json_equals": "7"}, "json_path is a path such as"),
        ({"header_value": "abc"}, "header_value needs header_name"),
        ({"enqueued_from": "yesterday"}, "enqueued_from must be a date and time"),
        (
            {"enqueued_from": "2026-03-02T00:00:00Z", "enqueued_to": "2026-03-01T00:00:00Z"},
            "enqueued_from must be before enqueued_to",
        ),
        ("states=NDLV", "the criteria are an object"),
        ({"sender": "a\x00b"}, "sender must not contain a NUL character"),
        ({"queues": ["orders\x00"]}, "queues must not contain a NUL character"),
        ({"body_contains": "\ud800"}, "body_contains is not valid Unicode text"),
        (
            {"enqueued_to": datetime(9999, 12, 31, 23, 0, tzinfo=BEHIND)},
            "enqueued_to is out of range",
        ),
    ],
)
def test_bad_criteria_are_refused_with_a_clear_message(personas, criteria, message):
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace("[", r"\[")):
        lake_query_create(actor=personas["operator"], criteria=criteria)

    assert not LakeQuery.objects.exists()


def test_times_are_kept_in_utc_and_a_time_without_zone_is_utc(personas):
    query = lake_query_create(
        actor=personas["operator"],
        criteria={"enqueued_from": "2026-03-01T13:00:00+01:00", "enqueued_to": "2026-03-02 00:00"},
    )

    assert query.criteria == {
        "enqueued_from": "2026-03-01T12:00:00+00:00",
        "enqueued_to": "2026-03-02T00:00:00+00:00",
    }


def test_a_json_path_may_index_arrays(personas):
    query = lake_query_create(
        actor=personas["operator"],
        criteria={"json_path": "$.items[0].sku-code", "json_equals": "A"},
    )

    assert query.criteria["json_path"] == "$.items[0].sku-code"
