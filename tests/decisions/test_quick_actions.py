"""One click on a failure group or on the message list: Retry, Fail or End with error, after a
short confirmation that says how many, in which queues and whether a second person must
approve. The request is the one the full form would make."""

import re
from urllib.parse import urlencode

from django.urls import reverse

from console.decisions.models import ActionRequest
from tests.browse.conftest import login


def _quick(**params):
    return reverse("request-quick") + "?" + urlencode(params)


def _html(response, status=200):
    assert response.status_code == status, response.status_code
    return response.content.decode()


def test_an_operator_retries_a_failure_group_in_two_clicks(quarantine, index, personas):
    index.group("g-missing", pattern="order <n> not found", queue="orders", count=6)
    client = login(personas["operator"])
    group_page = _html(client.get(reverse("group-detail", args=["g-missing"])))
    retry = re.search(r'id="quick-retry" href="([^"]+)"', group_page).group(1)

    confirm = _html(client.get(retry.replace("&amp;", "&")))
    assert "Retry 5 quarantined messages?" in confirm
    assert re.search(r"In <strong>orders</strong> \(4\), <strong>payments</strong> \(1\)", confirm)
    assert (
        "It covers 5 messages, more than the 1 message one person may decide alone: a second "
        "person must approve it" in confirm
    )
    assert "order &lt;n&gt; not found" in confirm  # the group by its pattern, not its hash

    response = client.post(retry.replace("&amp;", "&"), {"comment": ""})
    request = ActionRequest.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("request-detail", args=[request.id])
    assert (request.action, request.status, request.count) == ("reprocess", "pending", 5)
    assert request.scope == {"kind": "group", "group": "g-missing"}
    assert request.comment == "Retry: failure group 'order <n> not found' (one click)"


def test_a_comment_given_is_the_requests_own(quarantine, personas):
    login(personas["operator"]).post(
        _quick(scope="group", group="g-other", action="fail"), {"comment": "obsolete orders"}
    )
    request = ActionRequest.objects.get()
    assert (request.action, request.comment) == ("fail", "obsolete orders")


def test_ending_with_error_asks_what_the_sender_is_told(quarantine, personas):
    client = login(personas["operator"])
    url = _quick(scope="filter", queue="payments", action="end_with_error")

    page = _html(client.post(url, {"comment": ""}), status=400)
    assert page.count('class="error"') >= 2 and not ActionRequest.objects.exists()

    client.post(url, {"error_code": "E42", "error_description": "no such order"})
    request = ActionRequest.objects.get()
    assert (request.action, request.error_code, request.count) == ("end_with_error", "E42", 2)
    assert request.scope == {"kind": "filter", "filters": {"queue": "payments"}}


def test_the_message_list_offers_the_three_actions_on_its_filter(quarantine, personas):
    page = _html(login(personas["operator"]).get(reverse("message-list"), {"queue": "payments"}))

    for action in ("reprocess", "fail", "end_with_error"):
        assert f"scope=filter&amp;queue=payments&amp;action={action}" in page
    viewer_page = _html(login(personas["viewer"]).get(reverse("message-list")))
    assert 'id="quick-retry"' not in viewer_page


def test_nothing_quarantined_means_nothing_to_confirm(quarantine, personas):
    page = _html(
        login(personas["operator"]).get(_quick(scope="filter", state="WAIT", action="fail"))
    )

    assert 'id="quick-nothing"' in page and 'id="quick-form"' not in page


def test_an_unknown_action_or_scope_is_refused_with_the_reason(quarantine, personas):
    client = login(personas["operator"])

    page = _html(client.get(_quick(scope="group", group="g-missing", action="delete")), 400)
    assert "the action is one of reprocess, fail, end_with_error" in page
    page = _html(client.get(_quick(scope="message", id="m-01", action="fail")), 400)
    assert "one click acts on a failure group, a selection or a filter" in page
