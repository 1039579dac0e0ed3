"""A progressive redrive (issue 15): a reprocess in steps, each next step only when the last
step's messages did not fail again more than the threshold allows. Real quarantined messages,
real delivery runs with a test handler that fails the messages whose body says so, the decisions
sweeper judging each step."""

from collections import Counter

import pytest
from django.urls import reverse

from console.audit.models import AuditEntry
from console.decisions.models import ActionChunk, ActionRequest
from console.decisions.tasks import decisions_sweep_task
from console.queues.models import Queue
from tests.browse.conftest import api, login
from tests.decisions.desk import make_desk

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture
def desk(transactional_db, lake_root, spark, personas, settings):
    return make_desk(spark, personas, settings)


def quarantined(desk, bodies):
    """Messages of queue orders, one a body, all quarantined by a first attempt that fails
    (a handler that always fails, and one failure is the most a message gets); then the queue's
    handler reads the body: "ok" is delivered, "permanent" fails again (tests.handlers_for_tests.
    scripted). Their ids sort in the order of `bodies`."""
    desk.queue(
        "orders", handler="tests.handlers_for_tests.always_transient", max_failed_deliveries=1
    )
    ids = desk.quarantine("orders", bodies)
    assert [desk.state(i)["state"] for i in ids] == ["NDLV"] * len(ids)
    Queue.objects.filter(name="orders").update(handler="tests.handlers_for_tests.scripted")
    return ids


def request_in_steps(desk, ids, steps, threshold):
    return desk.request(
        {"kind": "selection", "ids": ids}, steps=steps, refailure_threshold=threshold
    )


def step_through(desk, request):
    """Execute the request as far as it goes, deliver what it put back, and let the sweeper
    judge the step; returns the sweeper's verdict and the request as it then is."""
    desk.execute(request)
    desk.deliver()
    verdict = decisions_sweep_task()["canaries"].get(request.id)
    request.refresh_from_db()
    return verdict, request


def audit_actions(request):
    return [
        e.action
        for e in AuditEntry.objects.filter(target_type="request", target_id=str(request.id))
    ]


def test_a_progressive_redrive_goes_through_every_step_and_then_the_rest_when_deliveries_succeed(
    desk,
):
    ids = quarantined(desk, ["ok"] * 9)
    request = request_in_steps(desk, ids, [1, 2, 3], 10)

    request = desk.execute(request)
    assert (request.status, request.done, request.step_now) == ("canary", 1, 1)
    assert sorted(desk.state(i)["state"] for i in ids) == ["NDLV"] * 8 + ["TBDL"]
    assert decisions_sweep_task()["canaries"] == {request.id: "pending"}

    desk.deliver()
    assert decisions_sweep_task()["canaries"] == {request.id: "passed"}
    verdicts = [step_through(desk, request)[0], step_through(desk, request)[0]]
    assert verdicts == ["passed", "passed"]
    request = desk.execute(request)
    desk.deliver()

    assert (request.status, request.done, request.chunks_total) == ("done", 9, 4)
    assert [desk.state(i)["state"] for i in ids] == ["DLVD"] * 9
    assert [(s["step"], s["size"], s["status"], s["refailed"]) for s in request.progression] == [
        (1, 1, "passed", 0),
        (2, 2, "passed", 0),
        (3, 3, "passed", 0),
    ]
    assert request.canary_result == "step 3 of 3: all 3 message(s) delivered"
    executed = [a for a in audit_actions(request) if a.startswith("execution.")]
    assert Counter(executed) == Counter(
        {
            "execution.started": 1,
            "execution.step_started": 3,
            "execution.step_passed": 3,
            "execution.resumed": 3,
            "execution.finished": 1,
        }
    )
    # Each step is one chunk, the rest another: nothing decided twice.
    assert list(ActionChunk.objects.filter(request=request).values_list("index", "done")) == [
        (0, 1),
        (1, 2),
        (2, 3),
        (3, 3),
    ]


def test_a_re_failure_spike_at_a_later_step_stops_the_request_and_leaves_the_rest_untouched(desk):
    bodies = (
        ["ok"]  # step 1
        + ["ok", "permanent", "ok", "ok"]  # step 2: 1 of 4 fails again, 25%: under 30%
        + ["permanent", "ok", "permanent", "ok"]  # step 3: 2 of 4, 50%: over 30%
        + ["ok"] * 5  # the rest
    )
    ids = quarantined(desk, bodies)
    request = request_in_steps(desk, ids, [1, 4, 4], 30)

    assert step_through(desk, request)[0] == "passed"
    verdict, request = step_through(desk, request)
    assert (verdict, request.status) == ("passed", "running")
    assert request.canary_result == (
        "step 2 of 3: 3 of 4 message(s) delivered, 1 failed again (25%, at most 30% allowed)"
    )
    verdict, request = step_through(desk, request)

    assert (verdict, request.status, request.done) == ("failed", "failed", 9)
    said = (
        "step 3 of 3: 2 of 4 message(s) failed again: permanent failure: missing field: "
        "customer (2) \u2014 50% is over the threshold of 30%"
    )
    assert request.canary_result == said
    assert request.error == f"stopped: {said}. The rest of the set (5 message(s)) was not touched."
    # The rest was never reprocessed: still quarantined, and the request cannot be run again.
    assert [desk.state(i)["state"] for i in ids[9:]] == ["NDLV"] * 5
    assert [desk.state(i)["state"] for i in ids[5:9]] == ["NDLV", "DLVD", "NDLV", "DLVD"]
    assert {e["message_id"] for e in desk.decision_events(request.id)} == set(ids[:9])
    assert desk.execute(request) is None
    assert [(s["step"], s["status"], s["refailed"], s["rate"]) for s in request.progression] == [
        (1, "passed", 0, 0.0),
        (2, "passed", 1, 25.0),
        (3, "failed", 2, 50.0),
    ]

    stopped = AuditEntry.objects.get(
        target_type="request", target_id=str(request.id), action="execution.step_failed"
    )
    assert stopped.actor == "system"
    assert {k: stopped.details[k] for k in ("step", "steps", "rate", "refailure_threshold")} == {
        "step": 3,
        "steps": 3,
        "rate": 50.0,
        "refailure_threshold": 30.0,
    }
    assert stopped.details["reasons"] == [["permanent failure: missing field: customer", 2]]
    assert stopped.details["result"] == said


def test_the_request_page_and_the_api_show_each_step_and_why_it_stopped(desk):
    ids = quarantined(desk, ["ok", "permanent", "permanent"] + ["ok"] * 3)
    request = request_in_steps(desk, ids, [1, 2], 0)
    step_through(desk, request)
    verdict, request = step_through(desk, request)
    assert verdict == "failed"

    data = api(desk.personas["viewer"]).get(f"/api/v1/requests/{request.id}").json()
    assert (data["steps"], data["refailure_threshold"], data["step_now"]) == ([1, 2], 0.0, None)
    assert [
        (s["step"], s["size"], s["status"], s["delivered"], s["refailed"], s["rate"])
        for s in data["progression"]
    ] == [(1, 1, "passed", 1, 0, 0.0), (2, 2, "failed", 0, 2, 100.0)]
    assert data["progression"][1]["reasons"] == [["permanent failure: missing field: customer", 2]]
    assert data["error"].startswith("stopped: step 2 of 2: 2 of 2 message(s) failed again")
    assert "step_failed" in " ".join(e["action"] for e in data["audit"])

    url = reverse("request-detail", args=[request.id])
    page = login(desk.personas["viewer"]).get(url).content.decode()
    row = page[page.index('id="step-2"') :]
    row = row[: row.index("</tr>")]
    assert ">failed<" in row and ">100%<" in row
    assert "permanent failure: missing field: customer (2)" in row
    assert "The rest of the set (3 message(s)) was not touched." in page


def test_a_worker_that_died_between_committing_a_step_and_handing_it_over_waits_for_its_outcome(
    desk,
):
    ids = quarantined(desk, ["ok"] * 4)
    request = desk.execute(request_in_steps(desk, ids, [1, 1], 0))
    assert request.status == "canary"
    # What a worker killed right after the step's commit leaves: the chunk committed, the request
    # running under a worker whose heartbeat stopped, nothing handed to the sweeper.
    ActionRequest.objects.filter(id=request.id).update(
        status="running", worker="dead", heartbeat_at=None, canary_commit=None, step_results=[]
    )

    request = desk.execute(request)
    assert (request.status, request.chunks_done, request.done) == ("canary", 1, 1)
    desk.deliver()
    assert decisions_sweep_task()["canaries"] == {request.id: "passed"}
    assert step_through(desk, request)[0] == "passed"
    request = desk.execute(request)
    assert (request.status, request.done) == ("done", 4)
    assert ActionChunk.objects.filter(request=request).count() == 3


def test_a_step_that_is_the_last_of_the_set_is_not_waited_for(desk):
    ids = quarantined(desk, ["ok"] * 3)
    request = desk.execute(request_in_steps(desk, ids, [1, 10], 5))
    assert request.status == "canary"
    desk.deliver()
    assert decisions_sweep_task()["canaries"] == {request.id: "passed"}

    request = desk.execute(request)
    assert (request.status, request.done) == ("done", 3)
    assert [(s["size"], s["status"]) for s in request.progression] == [
        (1, "passed"),
        (2, "reprocessed"),
    ]
