"""The request screens: asking for an action on a scope, the list of requests, one request with
its frozen set, approval, withdrawal, cancel and progress, and the links that lead there."""

import hashlib
import re

import pytest
from django.urls import reverse

from console.audit.models import AuditEntry
from console.decisions.models import ActionRequest
from console.decisions.scope import frozen_ids
from console.decisions.services import action_request_approve
from tests.browse.conftest import login
from tests.browse.test_views_untrusted_data import ATTR, LINK, PAYLOAD, SCRIPT, SVG
from tests.html_tags import assert_attributes_inert, html_tags
from tests.roles import ROLES, assert_page_answers, who

VIEW = {"viewer": 200, "operator": 200, "approver": 200, "admin": 200, "auditor": 200}
ASK = {"operator": 200, "approver": 200}


def _new(**params):
    from urllib.parse import urlencode

    return reverse("request-new") + "?" + urlencode(params, doseq=True)


# --- Who may see and do what ---------------------------------------------------------------------

PAGES = [
    ("request-list", lambda r: reverse("request-list"), VIEW),
    ("request-detail", lambda r: reverse("request-detail", args=[r.id]), VIEW),
    ("request-ids", lambda r: reverse("request-ids", args=[r.id]), VIEW),
    ("request-new", lambda r: _new(scope="message", id="m-01"), ASK),
    (
        "request-quick",
        lambda r: reverse("request-quick") + "?scope=group&group=g-missing&action=reprocess",
        ASK,
    ),
]


@pytest.mark.parametrize("role", ROLES, ids=who)
@pytest.mark.parametrize(("name", "url", "allowed"), PAGES, ids=[p[0] for p in PAGES])
def test_each_request_page_answers_each_role_as_its_permissions_say(
    requests, personas, role, name, url, allowed
):
    target = url(requests.make())

    response = login(personas[role] if role else None).get(target)

    assert_page_answers(response, role, allowed.get(role, 403))


# (name, the request it acts on, {role: status}); 302 is done (back to the request page).
DECISIONS = [
    ("request-approve", "pending", {"approver": 302}),
    ("request-reject", "pending", {"approver": 302}),
    ("request-withdraw", "pending", {"operator": 302}),  # the requester only
    ("request-cancel", "approved", {"operator": 302, "approver": 302}),
]


@pytest.mark.parametrize("role", ROLES, ids=who)
@pytest.mark.parametrize(("name", "state", "allowed"), DECISIONS, ids=[d[0] for d in DECISIONS])
def test_each_decision_answers_each_role_as_its_permissions_say(
    requests, personas, role, name, state, allowed
):
    request = requests.approved() if state == "approved" else requests.make()
    before = ActionRequest.objects.get(id=request.id).status

    response = login(personas[role] if role else None).post(
        reverse(name, args=[request.id]), {"comment": "because"}
    )

    assert_page_answers(response, role, allowed.get(role, 403))
    if response.status_code != 302 or role is None:
        assert ActionRequest.objects.get(id=request.id).status == before


@pytest.mark.parametrize("name", ["request-approve", "request-reject", "request-cancel"])
def test_decisions_are_posts_only(requests, personas, name):
    request = requests.make()

    response = login(personas["approver"]).get(reverse(name, args=[request.id]))

    assert response.status_code == 405
    assert ActionRequest.objects.get(id=request.id).status == "pending"


def test_an_unknown_request_is_a_404(requests, personas):
    client = login(personas["approver"])

    assert client.get(reverse("request-detail", args=[999])).status_code == 404
    assert client.get("/requests/99999999999999999999999999/").status_code == 404
    assert client.post(reverse("request-approve", args=[999])).status_code == 404


def test_the_decision_forms_check_csrf(requests, personas):
    from django.test import Client

    request = requests.make()
    client = Client(enforce_csrf_checks=True)
    client.force_login(personas["approver"])

    response = client.post(reverse("request-approve", args=[request.id]))

    assert response.status_code == 403
    assert ActionRequest.objects.get(id=request.id).status == "pending"


# --- Asking -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"scope": "message", "id": "m-01"}, ["m-01"]),
        ({"scope": "selection", "ids": ["m-03", "m-01", "m-11"]}, ["m-01", "m-03"]),
        ({"scope": "group", "group": "g-missing"}, ["m-00", "m-02", "m-04", "m-06", "m-08"]),
        ({"scope": "filter", "queue": "payments"}, ["m-08", "m-09"]),
        (
            {"scope": "filter", "since": "2026-03-01T11:57:00Z", "exception_type": "KeyError"},
            ["m-00", "m-01", "m-02", "m-03"],
        ),
    ],
    ids=["message", "selection", "group", "filter", "filter-with-time"],
)
def test_a_request_is_made_from_each_scope_kind(quarantine, personas, params, expected):
    client = login(personas["operator"])
    page = client.get(_new(**params))
    assert page.status_code == 200
    assert f"<strong>{len(expected)}</strong> quarantined message" in page.content.decode()

    response = client.post(_new(**params), {"action": "fail", "comment": "bad data"})

    request = ActionRequest.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("request-detail", args=[request.id])
    assert [i for ids in frozen_ids(request.ids_path) for i in ids] == expected
    assert (request.action, request.requester, request.comment) == (
        "fail",
        personas["operator"],
        "bad data",
    )
    assert request.scope["kind"] == params["scope"]


def test_a_filter_scope_is_stored_as_the_browser_filter_it_came_from(quarantine, personas):
    params = {
        "scope": "filter",
        "queue": "orders",
        "since": "2026-03-01T11:57:00Z",
        "sort": "queue",
    }

    login(personas["operator"]).post(_new(**params), {"action": "fail", "comment": "x"})

    assert ActionRequest.objects.get().scope == {
        "kind": "filter",
        "filters": {"queue": "orders", "since": "2026-03-01T11:57:00+00:00"},
    }


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "the scope is one of"),
        ({"scope": "everything"}, "the scope is one of"),
        ({"scope": "message"}, "needs a message id"),
        ({"scope": "selection"}, "select at least one message"),
        ({"scope": "filter", "since": "yesterday"}, "the filter is not valid"),
        ({"scope": "lake_query", "query": "x"}, "names the query by its number"),
    ],
)
def test_a_scope_that_names_nothing_is_refused_with_a_reason(quarantine, personas, params, message):
    response = login(personas["operator"]).get(_new(**params))

    assert response.status_code == 400
    assert message in response.content.decode()


def test_a_scope_with_nothing_quarantined_shows_zero_and_the_service_refuses_it(
    quarantine, personas
):
    client = login(personas["operator"])
    page = client.get(_new(scope="message", id="m-10"))  # WAIT, not quarantined
    assert "<strong>0</strong> quarantined messages match now" in page.content.decode()

    response = client.post(_new(scope="message", id="m-10"), {"action": "fail", "comment": "x"})

    assert response.status_code == 400
    assert "no quarantined message matches this scope" in response.content.decode()
    assert not ActionRequest.objects.exists()


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"action": "end_with_error", "comment": "x"}, "takes an error code and a description"),
        ({"action": "fail", "comment": "x", "error_code": "1"}, "only end with error"),
        ({"action": "fail", "comment": "x", "canary": "3"}, "are for reprocessing"),
        ({"action": "reprocess", "comment": "   "}, "This field is required"),
        ({"action": "reprocess", "comment": "x", "rate_limit": "0"}, "greater than or equal to 1"),
        ({"action": "reprocess", "comment": "x", "canary": str(10**30)}, "less than or equal"),
        ({"action": "reprocess", "comment": "x", "target_queue": "nowhere"}, "not one of"),
        ({"action": "explode", "comment": "x"}, "not one of the available choices"),
    ],
)
def test_a_request_the_service_or_form_refuses_is_shown_in_the_form(
    quarantine, personas, form, message
):
    response = login(personas["operator"]).post(_new(scope="selection", ids=["m-01", "m-03"]), form)

    assert response.status_code == 400
    assert message in response.content.decode()
    assert not ActionRequest.objects.exists()


@pytest.mark.parametrize(
    ("scope", "form", "expected"),
    [
        pytest.param(
            {"scope": "group", "group": "g-other"},
            {"action": "reprocess", "target_queue": "payments", "rate_limit": "50", "canary": "2"},
            {"target_queue": "payments", "rate_limit": 50, "canary": 2, "edited_body": None},
            id="reprocess_options_reach_the_request",
        ),
        pytest.param(
            {"scope": "message", "id": "m-01"},
            {
                "action": "end_with_error",
                "error_code": "127",
                "error_description": "Unable to process message.",
            },
            {
                "error_code": "127",
                "error_description": "Unable to process message.",
                "status": "pending",
            },
            id="end_with_error_takes_its_code_and_description",
        ),
    ],
)
def test_an_actions_options_reach_the_request(quarantine, personas, scope, form, expected):
    login(personas["operator"]).post(_new(**scope), {**form, "comment": "ship it"})

    request = ActionRequest.objects.get()
    assert {name: getattr(request, name) for name in expected} == expected


def test_the_action_can_be_preselected_by_the_link(quarantine, personas):
    html = login(personas["operator"]).get(_new(scope="message", id="m-01", action="fail"))

    assert re.search(
        r'<input type="radio" name="action" value="fail"[^>]*checked', html.content.decode()
    )


# --- The edited body ----------------------------------------------------------------------------


@pytest.fixture
def ingested(index, personas):
    """One quarantined message with a real body in the lake."""
    index.message("order-1", '{\n  "order": 1\n}', state="NDLV")
    return "order-1"


def test_one_message_scope_offers_its_body_to_edit_and_records_the_read(ingested, personas):
    response = login(personas["operator"]).get(_new(scope="message", id=ingested))

    html = response.content.decode()
    textarea = re.search(r'<textarea name="edited_body"[^>]*>(.*?)</textarea>', html, re.S)
    assert textarea.group(1) == "\n{\n  &quot;order&quot;: 1\n}"
    entry = AuditEntry.objects.get(action="message.body_viewed")
    assert (entry.actor, entry.target_id, entry.details) == (
        "operator",
        ingested,
        {"via": "request form"},
    )


def test_a_body_left_as_it_was_is_no_edit(ingested, personas):
    # Browsers send a textarea's line breaks as CRLF.
    login(personas["operator"]).post(
        _new(scope="message", id=ingested),
        {"action": "reprocess", "edited_body": '{\r\n  "order": 1\r\n}', "comment": "retry"},
    )

    assert ActionRequest.objects.get().edited_body is None


def test_an_edited_body_is_stored_with_the_line_breaks_it_had(ingested, personas):
    login(personas["operator"]).post(
        _new(scope="message", id=ingested),
        {"action": "reprocess", "edited_body": '{\r\n  "order": 2\r\n}', "comment": "fix it"},
    )

    assert bytes(ActionRequest.objects.get().edited_body) == b'{\n  "order": 2\n}'


def test_a_selection_or_group_scope_has_no_body_to_edit(quarantine, personas):
    html = login(personas["operator"]).get(_new(scope="group", group="g-other")).content.decode()

    assert 'name="edited_body"' not in html


# --- The request page ---------------------------------------------------------------------------


def test_the_page_shows_the_frozen_set_as_the_approver_approves_it(requests, personas):
    request = requests.make({"kind": "group", "group": "g-missing"})

    html = login(personas["approver"]).get(reverse("request-detail", args=[request.id]))
    html = html.content.decode()

    assert '<dd id="frozen-count">5</dd>' in html
    assert f'<code id="frozen-sha256">{request.ids_sha256}</code>' in html
    queues = re.search(r'<table id="breakdown-queues".*?</table>', html, re.S).group(0)
    assert re.search(r"<td>orders</td><td class=\"num\">4</td>.*<td>payments</td>", queues, re.S)
    groups = re.search(r'<table id="breakdown-groups".*?</table>', html, re.S).group(0)
    assert f'href="{reverse("group-detail", args=["g-missing"])}"' in groups
    sample = re.search(r'<table id="frozen-sample".*?</table>', html, re.S).group(0)
    assert re.findall(r'class="message-link" href="/messages/([^/]+)/"', sample) == [
        "m-00",
        "m-02",
        "m-04",
        "m-06",
        "m-08",
    ]
    assert "order 4 not found" in sample
    assert f'href="{reverse("request-ids", args=[request.id])}"' in html
    assert 'id="request-requester">operator <time' in html
    assert "fixed the handler" in html


def test_the_ids_download_hashes_to_the_approved_sha256(requests, personas):
    request = requests.make({"kind": "group", "group": "g-missing"})

    response = login(personas["viewer"]).get(reverse("request-ids", args=[request.id]))

    body = b"".join(response.streaming_content)
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Content-Disposition"] == f'attachment; filename="request-{request.id}-ids.txt"'
    assert body == b"m-00\nm-02\nm-04\nm-06\nm-08\n"
    assert hashlib.sha256(body).hexdigest() == request.ids_sha256


def test_the_requester_is_told_they_cannot_approve_and_gets_no_buttons(requests, personas):
    request = requests.make(by="approver")

    html = login(personas["approver"]).get(reverse("request-detail", args=[request.id]))
    html = html.content.decode()

    assert 'id="own-request-note"' in html
    assert "You cannot approve your own request" in html
    assert 'id="approve-form"' not in html and 'id="reject-form"' not in html
    assert 'id="withdraw-form"' in html


def test_self_approval_is_refused_with_403_even_when_posted(requests, personas):
    request = requests.make(by="approver")

    client = login(personas["approver"])
    response = client.post(reverse("request-approve", args=[request.id]), {"comment": "me"})
    assert response.status_code == 403
    response = client.post(reverse("request-reject", args=[request.id]), {"comment": "me"})
    assert response.status_code == 403

    assert ActionRequest.objects.get(id=request.id).status == "pending"
    entries = AuditEntry.objects.filter(target_type="request")
    assert list(entries.values_list("action", flat=True)) == ["request.created"]


def test_an_approver_sees_the_forms_and_approves(requests, personas):
    request = requests.make()
    client = login(personas["approver"])
    html = client.get(reverse("request-detail", args=[request.id])).content.decode()
    assert 'id="approve-form"' in html and 'id="reject-form"' in html
    assert 'id="own-request-note"' not in html

    response = client.post(
        reverse("request-approve", args=[request.id]),
        {"comment": "checked the sample"},
        follow=True,
    )

    request.refresh_from_db()
    assert (request.status, request.decided_by, request.decision_comment) == (
        "approved",
        personas["approver"],
        "checked the sample",
    )
    html = response.content.decode()
    assert f"Request {request.id} is approved." in html
    assert 'id="approve-form"' not in html
    assert 'id="cancel-form"' in html
    audit = re.search(r'<table id="request-audit".*?</table>', html, re.S).group(0)
    # Each action in words, its code on hover.
    said = r'<td><span class="code-said" title="[^"(]*\((request\.[a-z_]+)\)">'
    assert re.findall(said, audit) == ["request.created", "request.approved"]
    assert "checked the sample" in audit


def test_a_rejection_needs_a_reason(requests, personas):
    request = requests.make()
    client = login(personas["approver"])

    response = client.post(
        reverse("request-reject", args=[request.id]), {"comment": " "}, follow=True
    )
    assert "a rejection says why" in response.content.decode()
    assert ActionRequest.objects.get(id=request.id).status == "pending"

    client.post(reverse("request-reject", args=[request.id]), {"comment": "wrong group"})
    request.refresh_from_db()
    assert (request.status, request.decision_comment) == ("rejected", "wrong group")
    assert AuditEntry.objects.last().action == "request.rejected"


def test_deciding_twice_is_refused_with_a_message(requests, personas):
    request = requests.make()
    client = login(personas["approver"])
    client.post(reverse("request-approve", args=[request.id]))

    response = client.post(
        reverse("request-reject", args=[request.id]), {"comment": "no"}, follow=True
    )

    assert "is no longer waiting for approval" in response.content.decode()
    assert ActionRequest.objects.get(id=request.id).status == "approved"


def test_the_requester_withdraws_a_pending_request(requests, personas):
    request = requests.make()
    client = login(personas["operator"])
    assert (
        'id="withdraw-form"'
        in client.get(reverse("request-detail", args=[request.id])).content.decode()
    )

    client.post(reverse("request-withdraw", args=[request.id]), {"comment": "wrong scope"})

    assert ActionRequest.objects.get(id=request.id).status == "withdrawn"
    entry = AuditEntry.objects.last()
    assert (entry.actor, entry.action, entry.details) == (
        "operator",
        "request.withdrawn",
        {"comment": "wrong scope"},
    )


@pytest.mark.parametrize("who", ["operator", "approver"])
def test_the_requester_or_an_approver_cancels_an_approved_request(requests, personas, who):
    request = requests.approved()
    client = login(personas[who])

    response = client.post(
        reverse("request-cancel", args=[request.id]), {"comment": "stop"}, follow=True
    )

    request.refresh_from_db()
    assert (request.status, request.cancelled_by) == ("cancelled", personas[who])
    assert f"Request {request.id} is cancelled." in response.content.decode()
    entry = AuditEntry.objects.last()
    assert (entry.actor, entry.action) == (who, "request.cancelled")


def test_cancelling_a_running_request_asks_it_to_stop(requests, personas):
    request = requests.approved()
    ActionRequest.objects.filter(id=request.id).update(status="running")

    response = login(personas["operator"]).post(
        reverse("request-cancel", args=[request.id]), follow=True
    )

    request.refresh_from_db()
    assert (request.status, request.cancel_requested) == ("running", True)
    assert "stops before its next chunk" in response.content.decode()
    assert AuditEntry.objects.last().action == "request.cancel_requested"


def test_a_viewer_sees_a_request_but_no_form(requests, personas):
    request = requests.approved()

    html = login(personas["viewer"]).get(reverse("request-detail", args=[request.id])).content
    html = html.decode()

    for form in ("approve-form", "reject-form", "withdraw-form", "cancel-form"):
        assert f'id="{form}"' not in html


def test_the_progress_of_an_active_request_is_polled_by_a_static_script(requests, personas):
    request = requests.approved()
    ActionRequest.objects.filter(id=request.id).update(
        status="running", done=1, skipped=0, failed=0, chunks_done=1, chunks_total=2
    )

    html = login(personas["viewer"]).get(reverse("request-detail", args=[request.id])).content
    html = html.decode()

    tags = html_tags(html)
    scripts = [a["src"] for t, a in tags if t == "script"]
    assert "/static/js/request_progress.js" in scripts
    section = next(a for t, a in tags if a.get("id") == "execution")
    assert section["data-poll-url"] == f"/api/v1/requests/{request.id}"
    assert section["data-status"] == "running"
    assert set(section["data-active-statuses"].split()) == {"approved", "running", "canary"}
    bar = next(a for t, a in tags if a.get("id") == "progress-bar")
    assert (bar["max"], bar["value"]) == ("100", "50")
    assert (
        '<span id="progress-chunks-done">1</span> of <span id="progress-chunks-total">2</span>'
        in html
    )
    assert not any("style" in a for _, a in tags)


def test_a_finished_request_is_not_polled(requests, personas):
    request = requests.make()
    ActionRequest.objects.filter(id=request.id).update(status="done")

    html = login(personas["viewer"]).get(reverse("request-detail", args=[request.id])).content

    assert b"request_progress.js" not in html


def test_the_progress_script_sets_values_as_text_and_uses_no_inline_html():
    from django.conf import settings

    source = (settings.BASE_DIR / "static" / "js" / "request_progress.js").read_text()

    assert "innerHTML" not in source and "eval(" not in source
    assert "data-poll-url" in source and "textContent" in source


# --- Hostile text -------------------------------------------------------------------------------


@pytest.fixture
def hostile_request(quarantine, personas, requests):
    from console.readmodels.models import MessageIndex

    MessageIndex.objects.filter(message_id="m-01").update(reason=PAYLOAD, group_id=SVG)
    request = requests.make(
        {"kind": "selection", "ids": ["m-01", "m-03"]},
        kind="end_with_error",
        error_code=SCRIPT,
        error_description=PAYLOAD,
        comment=PAYLOAD,
    )
    return action_request_approve(actor=personas["approver"], request=request, comment=PAYLOAD)


def _assert_inert(html):
    for tag, attrs in html_tags(html):
        assert tag not in ("svg", "iframe", "object", "embed")
        assert_attributes_inert(tag, attrs)
        if tag == "script":
            assert attrs.get("src", "").startswith("/static/"), attrs
    assert "<script>alert" not in html
    assert "<svg onload" not in html


def test_hostile_comments_reasons_and_codes_are_shown_as_text(hostile_request, personas):
    client = login(personas["approver"])
    pages = [
        reverse("request-detail", args=[hostile_request.id]),
        reverse("request-list"),
    ]
    for url in pages:
        html = client.get(url).content.decode()
        _assert_inert(html)
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html, url
    html = client.get(pages[0]).content.decode()
    comment = re.search(r'<pre id="request-comment" class="comment">(.*?)</pre>', html, re.S)
    assert comment.group(1) == (
        "&lt;script&gt;alert(1)&lt;/script&gt; &quot; onerror=&quot;alert(2) "
        f"{LINK} &lt;svg onload=alert(4)&gt;"
    )
    assert ATTR not in html


def test_hostile_ids_in_a_selection_link_to_their_messages(quarantine, personas):
    from console.readmodels.models import MessageIndex

    evil = f'm/{SCRIPT}"?#{ATTR}'
    MessageIndex.objects.filter(message_id="m-05").update(message_id=evil)
    client = login(personas["operator"])
    page = client.get(_new(scope="selection", ids=[evil, "m-01"]))
    _assert_inert(page.content.decode())

    client.post(_new(scope="selection", ids=[evil, "m-01"]), {"action": "fail", "comment": "x"})

    request = ActionRequest.objects.get()
    html = client.get(reverse("request-detail", args=[request.id])).content.decode()
    _assert_inert(html)
    assert reverse("message-detail", args=[evil]).replace("'", "&#x27;") in html


# --- The list and the dashboard -----------------------------------------------------------------


def test_the_list_shows_newest_first_and_filters_mine_and_waiting(requests, personas):
    first = requests.make()
    mine = requests.make(by="approver")
    done = requests.approved({"kind": "message", "id": "m-05"})

    def ids(client, **params):
        html = client.get(reverse("request-list"), params).content.decode()
        return [int(i) for i in re.findall(r'class="request-link" href="/requests/(\d+)/"', html)]

    approver = login(personas["approver"])
    assert ids(approver) == [done.id, mine.id, first.id]
    assert ids(approver, show="mine") == [mine.id]
    assert ids(approver, show="waiting") == [first.id]
    assert ids(approver, status="approved") == [done.id]
    assert ids(login(personas["operator"]), show="waiting") == []
    assert (
        login(personas["approver"]).get(reverse("request-list"), {"status": "x"}).status_code == 400
    )


def test_the_list_pages_by_id(requests, personas, monkeypatch):
    from console.decisions import views

    monkeypatch.setattr(views, "REQUESTS_PAGE", 2)
    made = [requests.make({"kind": "message", "id": f"m-0{i}"}).id for i in range(5)]
    client = login(personas["viewer"])

    html = client.get(reverse("request-list")).content.decode()
    assert re.findall(r'class="request-link" href="/requests/(\d+)/"', html) == [
        str(i) for i in made[:2:-1]
    ]
    older = re.search(r'id="page-next" rel="next" href="([^"]+)"', html).group(1)
    html = client.get(older.replace("&amp;", "&")).content.decode()
    assert re.findall(r'class="request-link" href="/requests/(\d+)/"', html) == [
        str(made[2]),
        str(made[1]),
    ]


def test_the_dashboard_tells_an_approver_how_many_requests_wait(requests, personas):
    requests.make()
    requests.make(by="approver")  # their own: not waiting for them

    html = login(personas["approver"]).get(reverse("dashboard")).content.decode()
    assert re.search(r'id="requests-waiting".*<strong>1</strong> request waiting', html, re.S)

    html = login(personas["operator"]).get(reverse("dashboard")).content.decode()
    assert 'id="requests-waiting"' not in html


# --- The links that lead to a request -----------------------------------------------------------


def test_select_all_matching_leads_to_a_request_on_the_filter(quarantine, personas):
    client = login(personas["operator"])
    response = client.post(reverse("message-list"), {"queue": "payments"})

    html = response.content.decode()
    assert "next release" not in html
    form = re.search(r'<form id="request-on-filter".*?</form>', html, re.S).group(0)
    assert f'action="{reverse("request-new")}"' in form and 'method="get"' in form
    assert '<input type="hidden" name="scope" value="filter">' in form
    assert '<input type="hidden" name="queue" value="payments">' in form
    assert "Request an action on these 4" in form

    page = client.get(reverse("request-new"), {"scope": "filter", "queue": "payments"})
    assert "<strong>2</strong> quarantined messages match now" in page.content.decode()


def test_each_quarantined_row_has_a_checkbox_for_a_selection(quarantine, personas):
    html = login(personas["operator"]).get(reverse("message-list")).content.decode()

    assert re.search(
        r'<form id="selection-bar" class="selection-bar" method="post" '
        r'action="/requests/selection"',
        html,
    )
    boxes = re.findall(
        r'<input type="checkbox" class="select-message" name="ids" value="([^"]+)" '
        r'form="selection-bar"',
        html,
    )
    assert sorted(boxes) == [f"m-{i:02d}" for i in range(10)]  # not m-10 and m-11 (WAIT)


def test_those_who_may_not_ask_see_no_request_links(quarantine, personas, index):
    index.group("g-missing")
    client = login(personas["viewer"])

    listing = client.post(reverse("message-list"), {"queue": "payments"}).content.decode()
    group = client.get(reverse("group-detail", args=["g-missing"])).content.decode()
    message = client.get(reverse("message-detail", args=["m-01"])).content.decode()

    assert "request-on-filter" not in listing and "selection-bar" not in listing
    assert 'name="ids"' not in listing
    assert "group-request-link" not in group
    assert "message-request-link" not in message


def test_the_group_and_message_pages_link_to_a_request(quarantine, personas, index):
    index.group("g-missing")
    client = login(personas["operator"])

    group = client.get(reverse("group-detail", args=["g-missing"])).content.decode()
    assert 'href="/requests/new?scope=group&amp;group=g-missing"' in group
    message = client.get(reverse("message-detail", args=["m-01"])).content.decode()
    assert 'href="/requests/new?scope=message&amp;id=m-01"' in message
    waiting = client.get(reverse("message-detail", args=["m-10"])).content.decode()
    assert "message-request-link" not in waiting  # WAIT: nothing to decide


def test_a_lake_query_scope_is_passed_through_and_frozen_when_asked(quarantine, personas):
    client = login(personas["operator"])

    page = client.get(_new(scope="lake_query", query="5"))
    assert page.status_code == 200
    assert "are frozen, counted and hashed when you send the request" in page.content.decode()

    response = client.post(_new(scope="lake_query", query="5"), {"action": "fail", "comment": "x"})

    assert response.status_code == 400
    assert "there is no lake query 5" in response.content.decode()
