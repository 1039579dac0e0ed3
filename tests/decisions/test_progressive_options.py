"""Asking for a progressive redrive (issue 15) on the request form and the API: the steps and the
re-failure threshold, their defaults, input that is refused with a reason, what the approver
sees, and the audit entries. Executing one is tests/decisions/test_progressive_redrive.py."""

import json

import pytest
from django.urls import reverse

from console.audit.models import AuditEntry
from console.decisions.models import ActionRequest
from console.decisions.services import action_request_approve
from tests.browse.conftest import api, login

TEN = {"kind": "selection", "ids": [f"m-{i:02d}" for i in range(10)]}


def _new(**params):
    from urllib.parse import urlencode

    return reverse("request-new") + "?" + urlencode(params, doseq=True)


def _create(personas, **fields):
    body = {"action": "reprocess", "scope": TEN, "comment": "the handler is fixed", **fields}
    return api(personas["operator"]).post(
        "/api/v1/requests", json.dumps(body), content_type="application/json"
    )


def _post_form(personas, **fields):
    return login(personas["operator"]).post(
        _new(scope="selection", ids=TEN["ids"]),
        {"action": "reprocess", "comment": "the handler is fixed", **fields},
    )


# --- The API -------------------------------------------------------------------------------------


def test_the_api_takes_steps_and_a_threshold_and_shows_the_steps_to_come(quarantine, personas):
    response = _create(personas, steps=[1, 3, 4], refailure_threshold=12.5)

    assert response.status_code == 201, response.content
    data = response.json()
    assert (data["steps"], data["refailure_threshold"], data["canary"]) == ([1, 3, 4], 12.5, 1)
    assert [(s["step"], s["size"], s["status"]) for s in data["progression"]] == [
        (1, 1, "waiting"),
        (2, 3, "waiting"),
        (3, 4, "waiting"),
    ]
    request = ActionRequest.objects.get()
    assert (request.steps, request.refailure_threshold, request.steps_rest) == ([1, 3, 4], 12.5, 2)


def test_progressive_in_the_api_means_the_default_steps_and_threshold(quarantine, personas):
    data = _create(personas, progressive=True).json()

    assert (data["steps"], data["refailure_threshold"]) == ([1, 10, 100, 1000], 5.0)
    # The set is 10 messages: the second step takes the 9 left, the others none.
    assert [s["size"] for s in data["progression"]] == [1, 9]


def test_a_canary_is_a_one_step_progression_none_of_whose_messages_may_fail(quarantine, personas):
    data = _create(personas, canary=2).json()

    assert (data["canary"], data["steps"], data["refailure_threshold"]) == (2, [2], 0.0)


def test_a_request_without_steps_goes_all_at_once(quarantine, personas):
    data = _create(personas).json()

    assert (data["steps"], data["progression"], data["step_now"]) == ([], [], None)


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"steps": []}, "steps"),
        ({"steps": [0, 10]}, "greater than or equal to 1"),
        ({"steps": [1, 10_001]}, "less than or equal to 10000"),
        ({"steps": list(range(1, 12))}, "no more than 10"),
        ({"steps": ["ten"]}, "valid integer"),
        ({"steps": [1.5]}, "valid integer"),
        ({"steps": "1, 10"}, "list"),
        ({"steps": [1, 10], "refailure_threshold": 101}, "less than or equal to 100"),
        ({"steps": [1, 10], "refailure_threshold": -1}, "greater than or equal to 0"),
        ({"steps": [1, 10], "refailure_threshold": "lots"}, "valid number"),
        ({"steps": [1, 10], "refailure_threshold": True}, "is a number (percent)"),
        ({"steps": [True]}, "valid integer"),
        ({"refailure_threshold": 5}, "for a request with steps or a canary"),
        ({"steps": [1, 10], "canary": 3}, "a canary or steps, not both"),
        ({"progressive": True, "canary": 3}, "a canary or steps, not both"),
        ({"steps": [1, 10], "action": "fail"}, "are for reprocessing"),
        ({"progressive": True, "action": "fail"}, "are for reprocessing"),
        ({"refailure_threshold": 5, "action": "fail"}, "is for reprocessing"),
    ],
)
def test_bad_steps_or_thresholds_are_a_400_that_says_why(quarantine, personas, fields, said):
    response = _create(personas, **fields)

    assert response.status_code == 400, response.content
    assert said in response.json()["detail"], response.json()
    assert not ActionRequest.objects.exists()


# --- The form -----------------------------------------------------------------------------------


def test_the_form_offers_the_default_steps_and_threshold(quarantine, personas):
    page = login(personas["operator"]).get(_new(scope="selection", ids=TEN["ids"]))
    html = page.content.decode()

    assert 'name="progressive"' in html
    assert 'value="1, 10, 100, 1000"' in html
    assert 'name="refailure_threshold" value="5.0"' in html


def test_the_form_makes_a_progressive_request_when_asked(quarantine, personas):
    response = _post_form(personas, progressive="on", steps=" 2,3 ", refailure_threshold="7.5")

    assert response.status_code == 302
    request = ActionRequest.objects.get()
    assert (request.steps, request.refailure_threshold) == ([2, 3], 7.5)


def test_the_forms_offered_steps_do_nothing_unless_progressive_is_ticked(quarantine, personas):
    _post_form(personas, steps="1, 10, 100, 1000", refailure_threshold="5")

    request = ActionRequest.objects.get()
    assert (request.steps, request.canary) == ([], 0)


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"steps": "1, ten"}, "whole numbers separated by commas"),
        ({"steps": "1,,10"}, "whole numbers separated by commas"),
        ({"steps": "-1, 10"}, "whole numbers separated by commas"),
        ({"steps": ""}, "A progressive redrive needs its steps."),
        ({"steps": "0, 10"}, "each step is a whole number of messages from 1 to 10000"),
        ({"steps": "1, 20000"}, "each step is a whole number of messages from 1 to 10000"),
        ({"steps": ", ".join(["1"] * 11)}, "a list of 1 to 10 message counts"),
        ({"steps": "1, 10", "refailure_threshold": "100.5"}, "less than or equal to 100"),
        ({"steps": "1, 10", "refailure_threshold": "-3"}, "greater than or equal to 0"),
        ({"steps": "1, 10", "canary": "4"}, "a canary or steps, not both"),
    ],
)
def test_bad_steps_or_thresholds_on_the_form_are_shown_with_the_reason(
    quarantine, personas, fields, said
):
    response = _post_form(personas, progressive="on", **fields)

    assert response.status_code == 400
    assert said in response.content.decode()
    assert not ActionRequest.objects.exists()


# --- The approver and the audit trail ------------------------------------------------------------


def test_the_approver_sees_the_steps_and_threshold_and_they_are_in_the_audit_trail(
    quarantine, personas
):
    created = _create(personas, steps=[1, 4], refailure_threshold=2.5).json()
    assert created["status"] == "pending"

    page = login(personas["approver"]).get(reverse("request-detail", args=[created["id"]]))
    html = page.content.decode()
    steps = html[html.index('id="request-steps"') :]
    assert steps[: steps.index("</dd>")] == (
        'id="request-steps">1, 4 messages, then the rest (5); each next step only if at most '
        "2.5% of the last step's messages failed again"
    )
    assert "in steps of 1, 4, stopping over 2.5% failed again?" in html  # the approve button
    request = ActionRequest.objects.get(id=created["id"])
    action_request_approve(actor=personas["approver"], request=request)

    entries = {
        e.action: e.details
        for e in AuditEntry.objects.filter(target_type="request", target_id=str(request.id))
    }
    options = {"rate_limit": None, "steps": [1, 4], "refailure_threshold": 2.5}
    assert options.items() <= entries["request.created"].items()
    assert options.items() <= entries["request.approved"].items()


def test_a_canary_says_so_on_the_request_page(quarantine, personas):
    created = _create(personas, canary=3).json()

    html = login(personas["viewer"]).get(reverse("request-detail", args=[created["id"]]))
    text = html.content.decode()
    steps = text[text.index('id="request-steps"') :]
    assert steps[: steps.index("</dd>")] == (
        'id="request-steps">a canary of 3 messages, then the rest (7); each next step only if '
        "none of the last step's messages failed again"
    )


# --- Requests made before progressive redrives ----------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_migration_makes_each_canary_a_one_step_progression_and_keeps_its_verdict():
    from django.conf import settings
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    before = [("decisions", "0004_selection")]
    leaves = [key for key in executor.loader.graph.leaf_nodes() if key[0] == "decisions"]
    executor.migrate(before)
    try:
        apps = executor.loader.project_state(before).apps
        user = apps.get_model(settings.AUTH_USER_MODEL).objects.create(username="old-timer")
        old = apps.get_model("decisions", "ActionRequest")
        rows = {
            "watching": ("canary", 3, ""),
            "passed": ("running", 2, "all 2 canary message(s) delivered"),
            "stopped": ("failed", 1, "message m-1 failed again: boom"),
            "no canary": ("done", 0, ""),
        }
        ids = {
            name: old.objects.create(
                action="reprocess",
                comment=name,
                scope={"kind": "selection", "ids": ["m-1"]},
                ids_path="x",
                ids_sha256="0" * 64,
                count=10,
                requester=user,
                status=status,
                needs_approval=False,
                canary=canary,
                canary_result=result,
            ).id
            for name, (status, canary, result) in rows.items()
        }
        executor = MigrationExecutor(connection)
        executor.migrate(leaves)

        got = {
            name: ActionRequest.objects.values_list(
                "steps", "refailure_threshold", "step_results"
            ).get(id=ids[name])
            for name in rows
        }
        assert got == {
            "watching": ([3], 0.0, []),
            "passed": ([2], 0.0, [{"step": 1, "verdict": "passed"}]),
            "stopped": ([1], 0.0, [{"step": 1, "verdict": "failed"}]),
            "no canary": ([], 0.0, []),
        }
        assert [s["status"] for s in ActionRequest.objects.get(id=ids["passed"]).progression] == [
            "passed"
        ]
    finally:
        # Every app's newest migration: going back also took away those of other apps that
        # depend on these (a later test reads the plan as "every migration applied").
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
