"""A request's outcome: of the messages it froze, where each is now (delivered, failed again,
still on its way, final, not decided by it), read from the message index and the events
committed since its refresh, and held to a fold of the lake's ledger. Real quarantined
messages, a real reprocess and a real delivery run where some are delivered and some fail
again; then the links to each number's messages, "retry the ones that failed again" as a new
request of its own scope, and who may see and do what."""

import pyarrow.compute as pc
import pytest
from django.urls import reverse

from console.decisions.models import ActionRequest
from console.decisions.outcome import request_outcome
from console.decisions.scope import frozen_ids
from console.decisions.services import action_request_approve, action_request_cancel
from console.lake.selectors import lake_state_inputs
from console.lake.services import lake
from console.queues.models import Queue
from tests.browse.conftest import api, login
from tests.decisions.desk import make_desk
from workers.jobs.decisions.plan import latest_by_id

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# The test's own reading of a state: what the report must say of a decided message in it.
NOW = {
    "DLVD": "delivered",
    "WAIT": "failed_again",
    "NDLV": "failed_again",
    "TBDL": "pending",
    "DLNG": "pending",
    "FAIL": "final",
    "ENDED": "final",
}


@pytest.fixture
def desk(transactional_db, lake_root, spark, personas, settings):
    return make_desk(spark, personas, settings)


@pytest.fixture
def retried(desk):
    """Twelve quarantined messages reprocessed by one request: orders' handler is fixed (four
    delivered), payments' is not (three fail permanently again, two transiently), invoices' are
    not delivered yet (two pending), and one order was failed by another request before the
    reprocess ran (skipped). One delivery run of orders and payments, then a refresh."""
    desk.queue("orders")
    desk.queue("payments")
    desk.queue("invoices")
    orders = desk.ingest("orders", ["permanent"] * 5, prefix="o")
    payments = desk.ingest("payments", ["permanent"] * 3, prefix="p")
    payments += desk.ingest("payments", {"p-t0": "transient", "p-t1": "transient"})
    invoices = desk.ingest("invoices", ["permanent"] * 2, prefix="i")
    # Quarantined together: one series of delivery runs and one refresh for them all.
    desk.deliver_until_idle()
    desk.refresh()
    ids = orders + payments + invoices
    request = desk.request({"kind": "selection", "ids": ids})
    desk.execute(desk.request({"kind": "message", "id": orders[4]}, kind="fail"))
    request = desk.execute(request)
    assert (request.status, request.done, request.skipped) == ("done", 11, 1)
    Queue.objects.filter(name="orders").update(handler="tests.handlers_for_tests.always_ok")
    desk.deliver(at=desk.later(minutes=1), queues=["orders", "payments"])
    return request, ids


def ledger_outcome(request, ids):
    """{category: ids} of the frozen ids from a fold of the ledger (each id's latest event, and
    whether this request wrote a decision event for it), and {id: its state}."""
    inputs = lake_state_inputs()
    events = lake().read_arrow(
        "events",
        [*inputs.snapshot_paths, *inputs.event_paths],
        filter=pc.field("message_id").isin(ids),
    )
    latest = {row["message_id"]: row["to_state"] for row in latest_by_id(events).to_pylist()}
    mine = events.filter(pc.equal(events.column("run_id"), f"request:{request.id}"))
    decided = set(mine.column("message_id").to_pylist())
    found = {}
    for message_id in ids:
        category = NOW[latest[message_id]] if message_id in decided else "skipped"
        found.setdefault(category, set()).add(message_id)
    return found, latest


EXPECTED = {
    "delivered": 4,
    "failed_again": 5,
    "pending": 2,
    "final": 0,
    "gone": 0,
    "skipped": 1,
    "not_reached": 0,
}


def test_the_numbers_are_a_fold_of_the_ledger_before_and_after_the_index_is_refreshed(
    desk, retried
):
    request, ids = retried
    ledger, _ = ledger_outcome(request, ids)
    assert {k: len(v) for k, v in ledger.items()} == {k: n for k, n in EXPECTED.items() if n}

    # The delivery run is not folded into the index yet: its events are read beside it, as
    # the steps of a progressive redrive are watched, so the outcome does not lag behind them.
    before = request_outcome(request=request)
    assert before.unfolded >= 1
    assert before.counts == EXPECTED
    assert before.states == {"DLVD": 4, "NDLV": 3, "WAIT": 2, "TBDL": 2}

    desk.refresh()
    outcome = request_outcome(request=request)

    assert outcome.unfolded == 0
    assert outcome.refresh is not None
    assert outcome.counts == EXPECTED
    assert sum(outcome.counts.values()) == request.count == 12
    assert outcome.states == {"DLVD": 4, "NDLV": 3, "WAIT": 2, "TBDL": 2}
    assert outcome.counts["skipped"] == request.skipped + request.failed
    reasons = {(r.exception_type, r.waiting, r.quarantined) for r in outcome.reasons}
    assert reasons == {("PermanentFailure", 0, 3), ("ConnectionError", 2, 0)}
    assert outcome.retryable == 3


def test_the_page_and_its_list_of_messages_say_where_they_are_before_a_refresh(
    desk, retried, personas
):
    request, ids = retried
    ledger, _ = ledger_outcome(request, ids)
    operator = login(personas["operator"])

    page = operator.get(reverse("request-detail", args=[request.id])).content.decode()
    url = f"{reverse('request-outcome', args=[request.id])}?state=delivered"
    listed = operator.get(url)

    assert f'id="outcome-delivered" href="{url}">4<' in page
    assert "later commit" in page  # and says it read them
    assert {m for m, _ in listed.context["page"].rows} == ledger["delivered"]


def test_each_number_opens_its_messages_and_the_retry_is_a_new_request_of_exactly_those(
    desk, retried, personas
):
    request, ids = retried
    desk.refresh()
    ledger, latest = ledger_outcome(request, ids)
    operator = login(personas["operator"])

    page = operator.get(reverse("request-detail", args=[request.id])).content.decode()
    for category in ("delivered", "failed_again", "pending", "skipped"):
        url = f"{reverse('request-outcome', args=[request.id])}?state={category}"
        assert f'href="{url}"' in page
        listed = operator.get(url)
        assert listed.status_code == 200
        shown = {message_id for message_id, _ in listed.context["page"].rows}
        assert shown == ledger[category], category
    assert f'href="{reverse("request-retry", args=[request.id])}"' in page
    assert "PermanentFailure" in page and "ConnectionError" in page

    # Retry: a new reprocess whose frozen set is the three quarantined again (not the two
    # waiting, which the engine retries), and which waits for approval like any bulk request.
    confirm = operator.get(reverse("request-retry", args=[request.id]))
    assert confirm.status_code == 200
    assert 'id="retry-full-form"' in confirm.content.decode()
    full_form = operator.get(f"{reverse('request-new')}?scope=failed_again&request={request.id}")
    assert full_form.status_code == 200
    assert f'href="{reverse("request-detail", args=[request.id])}"' in full_form.content.decode()
    assert "second person must approve" in confirm.content.decode()
    response = operator.post(reverse("request-retry", args=[request.id]), {"comment": ""})
    retry = ActionRequest.objects.exclude(id=request.id).order_by("-id").first()
    assert response.status_code == 302
    assert response["Location"] == reverse("request-detail", args=[retry.id])
    assert retry.scope == {"kind": "failed_again", "request": request.id}
    assert (retry.action, retry.status, retry.count) == ("reprocess", "pending", 3)
    frozen = [i for batch in frozen_ids(retry.ids_path) for i in batch]
    assert frozen == sorted(m for m in ledger["failed_again"] if latest[m] == "NDLV")
    assert len(frozen) == 3
    assert retry.requester == personas["operator"]

    # The API says the same, and starts the same kind of request.
    client = api(personas["approver"])
    answer = client.get(f"/api/v1/requests/{request.id}").json()
    assert answer["outcome"] == f"/api/v1/requests/{request.id}/outcome"
    numbers = client.get(answer["outcome"]).json()
    assert numbers["counts"]["failed_again"] == 5 and numbers["total"] == 12
    assert numbers["refreshed"]["id"] == request_outcome(request=request).refresh.id
    listed = client.get(f"/api/v1/requests/{request.id}/outcome/messages?state=delivered").json()
    assert {row["message_id"] for row in listed["results"]} == ledger["delivered"]
    assert {row["state"] for row in listed["results"]} == {"DLVD"}
    created = client.post(answer["outcome"].replace("outcome", "retry"), {}, format="json")
    assert created.status_code == 201
    assert created.json()["scope"] == {"kind": "failed_again", "request": request.id}
    assert created.json()["count"] == 3

    # Approved by a second person and run, the retry's messages are back in their queue.
    retry = action_request_approve(actor=personas["approver"], request=retry)
    retry = desk.execute(retry)
    assert (retry.status, retry.done) == ("done", 3)
    assert {desk.index_state(m) for m in frozen} == {"TBDL"}
    assert request_outcome(request=request).counts["failed_again"] == 2


def test_who_may_see_the_outcome_and_ask_for_a_retry(desk, retried, personas):
    request, _ = retried
    desk.refresh()
    pages = {
        "outcome": (f"/api/v1/requests/{request.id}/outcome", "get"),
        "messages": (f"/api/v1/requests/{request.id}/outcome/messages?state=delivered", "get"),
        "retry": (f"/api/v1/requests/{request.id}/retry", "post"),
    }
    allowed = {
        "outcome": {"viewer", "operator", "approver", "admin", "auditor"},
        "messages": {"viewer", "operator", "approver", "admin"},
        "retry": {"operator", "approver"},
    }
    for name, (url, method) in pages.items():
        for role in ("viewer", "operator", "approver", "admin", "auditor", "outsider"):
            status = getattr(api(personas[role]), method)(url, {}, format="json").status_code
            ok = 201 if method == "post" else 200
            assert (status == ok) == (role in allowed[name]), (name, role, status)
            if role not in allowed[name]:
                assert status == 403, (name, role, status)
        assert getattr(api(), method)(url).status_code == 401
    html = {
        "request-outcome": f"{reverse('request-outcome', args=[request.id])}?state=pending",
        "request-retry": reverse("request-retry", args=[request.id]),
    }
    for name, url in html.items():
        for role in ("viewer", "auditor", "outsider"):
            may = name == "request-outcome" and role == "viewer"
            assert login(personas[role]).get(url).status_code == (200 if may else 403)
    viewer_page = login(personas["viewer"]).get(reverse("request-detail", args=[request.id]))
    assert 'id="outcome-counts"' in viewer_page.content.decode()
    assert 'id="outcome-retry"' not in viewer_page.content.decode()


def test_a_request_that_has_decided_nothing_has_no_outcome_and_no_retry(desk, personas):
    desk.queue("orders")
    ids = desk.quarantine("orders", ["permanent"] * 2)
    request = desk.request({"kind": "selection", "ids": ids}, approve=False)
    client = api(personas["operator"])
    assert client.get(f"/api/v1/requests/{request.id}").json()["outcome"] is None
    assert client.get(f"/api/v1/requests/{request.id}/outcome").status_code == 404
    refused = client.post(f"/api/v1/requests/{request.id}/retry", {}, format="json")
    assert refused.status_code == 400
    assert "decided nothing yet" in refused.json()["detail"]
    page = login(personas["operator"]).get(reverse("request-detail", args=[request.id]))
    assert 'id="outcome"' not in page.content.decode()


def test_reasons_are_inert_text_on_the_outcome_pages(desk, personas):
    evil = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    desk.queue("orders")
    ids = desk.quarantine("orders", [evil] * 2)  # scripted: "unexpected body ..." with it
    request = desk.execute(desk.request({"kind": "selection", "ids": ids}))
    desk.deliver(at=desk.later(days=1))
    desk.refresh()
    client = login(personas["operator"])
    for url in (
        reverse("request-detail", args=[request.id]),
        f"{reverse('request-outcome', args=[request.id])}?state=failed_again",
    ):
        html = client.get(url).content.decode()
        assert "<script>alert(1)" not in html and "<img src=x" not in html
        assert "&lt;script&gt;alert(1)" in html


def test_a_cancelled_request_counts_what_it_never_reached_and_retries_none_of_it(desk, personas):
    desk.queue("orders")
    ids = desk.quarantine("orders", ["permanent"] * 6)
    request = desk.request({"kind": "selection", "ids": ids}, rate_limit=2)

    def sleep(seconds):
        action_request_cancel(actor=personas["approver"], request=request)

    request = desk.execute(request, sleep=sleep, clock=lambda: 0.0)
    assert (request.status, request.done) == ("cancelled", 2)

    outcome = request_outcome(request=request)
    assert {k: n for k, n in outcome.counts.items() if n} == {"pending": 2, "not_reached": 4}
    # Still quarantined, but never reprocessed by it: they did not fail *again*.
    assert outcome.retryable == 0
    refused = api(personas["operator"]).post(
        f"/api/v1/requests/{request.id}/retry", {}, format="json"
    )
    assert refused.status_code == 400
    assert "no quarantined message matches" in refused.json()["detail"]
