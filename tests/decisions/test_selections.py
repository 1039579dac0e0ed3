"""A selection from the message list, across its pages: posted once (up to 10,000 ids, which no
URL and no form of separate fields holds), kept for the person who made it, and named by its key
on the request screens."""

import re
from datetime import timedelta

from django.urls import reverse

from console.decisions.models import ActionRequest, Selection
from console.decisions.scope import MAX_SELECTION
from tests.browse.conftest import login


def _post(client, ids, then="new", *, as_lines=True):
    data = {"ids": "\n".join(ids), "then": then} if as_lines else {"ids": ids, "then": then}
    return client.post(reverse("selection-post"), data)


def _follow(client, response):
    assert response.status_code == 302, response.content.decode()[:500]
    return client.get(response["Location"])


def test_an_operator_acts_on_ten_thousand_selected_messages(quarantine, personas):
    client = login(personas["operator"])
    ids = [f"m-{i:02d}" for i in range(12)] + [f"gone-{i}" for i in range(MAX_SELECTION - 12)]

    response = _post(client, ids)
    key = r"/requests/new\?scope=selection&selection=[0-9a-f-]{36}"
    assert re.fullmatch(key, response["Location"])
    page = _follow(client, response).content.decode()
    assert f"{MAX_SELECTION} ids:" in page
    assert "<strong>10</strong> quarantined messages match now" in page  # m-10, m-11 wait

    created = client.post(response["Location"], {"action": "fail", "comment": "obsolete"})
    request = ActionRequest.objects.get()
    assert created["Location"] == reverse("request-detail", args=[request.id])
    assert (request.action, request.count) == ("fail", 10)
    assert request.scope == {"kind": "selection", "ids": ids}


def test_one_more_than_the_limit_is_refused_and_says_what_to_do(quarantine, personas):
    ids = [f"x-{i}" for i in range(MAX_SELECTION + 1)]

    response = _post(login(personas["operator"]), ids)

    assert response.status_code == 400
    said = "10,001 messages are selected; a selection holds at most 10,000"
    assert said in response.content.decode()
    assert not Selection.objects.exists()


def test_without_script_the_ticked_boxes_post_as_separate_fields(quarantine, personas):
    client = login(personas["operator"])

    response = _post(client, ["m-03", "m-01", "m-03"], as_lines=False)

    page = _follow(client, response).content.decode()
    assert "2 ids:" in page
    assert Selection.objects.get().ids == ["m-03", "m-01"]  # in the order ticked, each once


def test_a_selection_goes_to_the_one_click_confirmation(quarantine, personas):
    client = login(personas["operator"])

    response = _post(client, ["m-01", "m-02", "m-11"], then="end_with_error")

    assert response["Location"].startswith("/requests/quick?scope=selection&selection=")
    assert response["Location"].endswith("&action=end_with_error")
    page = _follow(client, response).content.decode()
    assert "The 3 selected messages, those of them that are quarantined." in page
    client.post(response["Location"], {"error_code": "E1", "error_description": "gone"})
    request = ActionRequest.objects.get()
    assert (request.action, request.count) == ("end_with_error", 2)


def test_a_selection_is_its_owners_alone(quarantine, personas):
    response = _post(login(personas["operator"]), ["m-01"])

    other = login(personas["approver"]).get(response["Location"])

    assert other.status_code == 400
    assert "select the messages again" in other.content.decode()


def test_a_day_old_selection_is_forgotten(quarantine, personas):
    client = login(personas["operator"])
    response = _post(client, ["m-01"])
    Selection.objects.update(created_at=Selection.objects.get().created_at - timedelta(hours=25))

    assert client.get(response["Location"]).status_code == 400
    _post(client, ["m-02"])  # making a new one sweeps the old
    assert [s.ids for s in Selection.objects.all()] == [["m-02"]]


def test_a_key_that_is_not_ours_is_a_clear_error(quarantine, personas):
    client = login(personas["operator"])

    for key in ("not-a-key", "00000000-0000-0000-0000-000000000000"):
        page = client.get(reverse("request-new"), {"scope": "selection", "selection": key})
        assert page.status_code == 400 and 'id="scope-error"' in page.content.decode()


def test_nothing_selected_or_an_unknown_destination_is_refused(quarantine, personas):
    client = login(personas["operator"])

    assert "select at least one message" in _post(client, ["", "  "]).content.decode()
    assert _post(client, ["m-01"], then="explode").status_code == 400
    assert not Selection.objects.exists()


def test_a_viewer_cannot_keep_a_selection(quarantine, personas):
    assert _post(login(personas["viewer"]), ["m-01"]).status_code == 403
    assert not Selection.objects.exists()
