"""Issue 45, point 2, on the server: each request form offers and takes only what applies to the
action chosen (R13: reprocess takes where and how fast, end with error what the sender is told,
fail nothing but the comment); an edited body of a JSON message must parse, in the form and in
the API; the overlap with other open requests is told before sending; approving twice is one
approval, said once."""

import json
import re
from urllib.parse import urlencode

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from console.audit.models import AuditEntry
from console.decisions.models import ActionRequest
from tests.browse.conftest import api, login

JSON = "application/json"
BROKEN = '{"order": 1,\n "sku": }'


def _new(**params):
    return reverse("request-new") + "?" + urlencode(params, doseq=True)


def _quick(**params):
    return reverse("request-quick") + "?" + urlencode(params, doseq=True)


def _errors(response):
    return " ".join(response.context["form"].non_field_errors())


def _flash_warnings(response):
    return re.findall(r'<li class="flash-warning">([^<]*)</li>', response.content.decode())


def _parser_says(text):
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return f"{exc.msg} at line {exc.lineno}, column {exc.colno}"
    raise AssertionError("the text parses")


@pytest.fixture
def json_message(index):
    """m-json: a quarantined JSON message, ingested for real (its body in the lake)."""
    index.message(
        "m-json",
        '{"order": 1}',
        ingest={"content_type": JSON},
        content_type=JSON,
        state="NDLV",
    )
    return "m-json"


# --- Only what applies ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("posted", "said"),
    [
        (
            {"action": "end_with_error", "send_to": "subject", "target_subject": "orders.retry"},
            "Sending elsewhere than their origin is for reprocessing",
        ),
        (
            {"action": "end_with_error", "progressive": "on"},
            "canaries and steps are for reprocessing",
        ),
        ({"action": "fail", "rate_limit": "5"}, "canaries and steps are for reprocessing"),
        ({"action": "fail", "target_queue": "payments"}, "Another queue is for reprocessing"),
        ({"action": "reprocess", "error_code": "E1"}, "only end with error tells"),
    ],
    ids=["end-send-to", "end-progressive", "fail-rate", "fail-queue", "reprocess-error-code"],
)
def test_an_option_of_another_action_is_refused_above_the_form_saying_which(
    quarantine, personas, posted, said
):
    form = {"comment": "x", "error_code": "", "error_description": "", **posted}
    if posted["action"] == "end_with_error":
        form.update(error_code="E1", error_description="gone")

    response = login(personas["operator"]).post(_new(scope="selection", ids=["m-01"]), form)

    assert response.status_code == 400
    assert said in _errors(response)
    assert 'id="request-errors"' in response.content.decode()
    assert not ActionRequest.objects.exists()


def test_the_page_without_script_ends_with_an_error_though_it_sends_every_field_as_offered(
    quarantine, personas
):
    client = login(personas["operator"])
    page = client.get(_new(scope="selection", ids=["m-01"], action="end_with_error"))
    offered = page.context["form"]

    response = client.post(
        _new(scope="selection", ids=["m-01"]),
        {
            "action": "end_with_error",
            "send_to": offered["send_to"].value(),
            "steps": offered["steps"].value(),
            "refailure_threshold": offered["refailure_threshold"].value(),
            "target_queue": "",
            "error_code": "E1",
            "error_description": "the order is gone",
            "comment": "the customer cancelled",
        },
    )

    assert response.status_code == 302, _errors(response)
    request = ActionRequest.objects.get()
    assert (request.action, request.redrive_target, request.steps) == ("end_with_error", None, [])


def test_the_page_marks_each_option_for_the_script_that_shows_it_only_where_it_applies(
    quarantine, personas
):
    html = login(personas["operator"]).get(_new(scope="selection", ids=["m-01"])).content.decode()

    assert 'id="request-form"' in html and "data-once" in html
    assert "js/request_form.js" in html
    assert re.search(r'<fieldset data-for-action="reprocess">.*id="redrive-target"', html, re.S)
    assert len(re.findall(r'data-with="progressive"', html)) == 2  # steps and threshold
    for place in ("exchange", "subject", "stream", "url"):
        assert f'data-send-to="{place}"' in html


def test_the_one_click_confirmation_offers_more_options_only_to_a_reprocess(quarantine, personas):
    client = login(personas["operator"])

    def offers_more(action):
        page = client.get(_quick(scope="group", group="g-missing", action=action))
        return 'id="quick-full-form"' in page.content.decode()

    assert offers_more("reprocess")
    assert not offers_more("fail")
    assert not offers_more("end_with_error")


# --- An edited JSON body -------------------------------------------------------------------------


def test_an_edited_json_body_that_does_not_parse_is_refused_with_the_parsers_line_and_column(
    json_message, personas
):
    response = login(personas["operator"]).post(
        _new(scope="message", id=json_message),
        {"action": "reprocess", "edited_body": BROKEN, "comment": "fix the sku"},
    )

    assert response.status_code == 400
    said = " ".join(response.context["form"].errors["edited_body"])
    assert f"not valid JSON: {_parser_says(BROKEN)}" in said
    assert "line 2, column" in said
    assert not ActionRequest.objects.exists()


def test_an_edited_json_body_that_parses_is_asked_for(json_message, personas):
    response = login(personas["operator"]).post(
        _new(scope="message", id=json_message),
        {"action": "reprocess", "edited_body": '{"order": 2}', "comment": "fix the order"},
    )

    assert response.status_code == 302
    assert bytes(ActionRequest.objects.get().edited_body) == b'{"order": 2}'


def test_a_body_that_is_not_json_is_not_parsed(index, personas):
    index.message("m-text", "plain words", ingest={"content_type": "text/plain"}, state="NDLV")

    response = login(personas["operator"]).post(
        _new(scope="message", id="m-text"),
        {"action": "reprocess", "edited_body": "{not json", "comment": "reworded"},
    )

    assert response.status_code == 302


def test_the_body_field_of_a_json_message_says_so_to_the_script(json_message, personas):
    html = login(personas["operator"]).get(_new(scope="message", id=json_message)).content
    html = html.decode()

    assert re.search(r'<textarea[^>]*data-json="application/json"', html)
    assert 'id="edited-body-check"' in html


@pytest.mark.parametrize("field", ["edited_body", "edited_body_base64"])
def test_the_api_refuses_an_edited_json_body_that_does_not_parse_in_the_same_words(
    json_message, personas, field
):
    import base64

    value = BROKEN if field == "edited_body" else base64.b64encode(BROKEN.encode()).decode()
    response = api(personas["operator"]).post(
        "/api/v1/requests",
        {
            "action": "reprocess",
            "scope": {"kind": "message", "id": json_message},
            "comment": "fix the sku",
            field: value,
        },
        format="json",
    )

    assert response.status_code == 400
    assert f"not valid JSON: {_parser_says(BROKEN)}" in " ".join(response.json()["errors"][field])
    assert not ActionRequest.objects.exists()


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ({"action": "end_with_error", "redrive_target": {"subject": "x"}}, "only reprocess"),
        ({"action": "end_with_error", "progressive": True}, "are for reprocessing"),
        ({"action": "fail", "target_queue": "payments"}, "only reprocess"),
        ({"action": "reprocess", "error_code": "E1"}, "only end with error"),
    ],
    ids=["end-redrive-target", "end-progressive", "fail-queue", "reprocess-error-code"],
)
def test_the_api_refuses_an_option_of_another_action(quarantine, personas, extra, said):
    body = {"scope": {"kind": "selection", "ids": ["m-01"]}, "comment": "x", **extra}
    if extra["action"] == "end_with_error":
        body.update(error_code="E1", error_description="gone")

    response = api(personas["operator"]).post("/api/v1/requests", body, format="json")

    assert response.status_code == 400
    assert said in response.json()["detail"]
    assert not ActionRequest.objects.exists()


# --- Overlaps, before sending --------------------------------------------------------------------


def test_the_form_tells_before_sending_which_open_request_holds_some_of_the_messages(
    requests, personas
):
    earlier = requests.make({"kind": "selection", "ids": ["m-01"]}, target_queue="payments")

    html = login(personas["approver"]).get(_new(scope="selection", ids=["m-01", "m-03"]))
    html = html.content.decode()

    told = re.search(r'<p id="overlaps-total">(.*?)</p>', html, re.S).group(1)
    assert "1 of these 2 messages is also in" in re.sub(r"<[^>]+>", "", told)
    assert f'href="/requests/{earlier.id}/"' in told
    assert "sending this request too may skip them" in told


def test_the_one_click_confirmation_tells_the_overlap_too(requests, personas):
    requests.make({"kind": "selection", "ids": ["m-02"]}, target_queue="payments")

    page = login(personas["approver"]).get(_quick(scope="group", group="g-missing", action="fail"))

    assert 'id="overlaps-total"' in page.content.decode()


def test_a_scope_that_no_open_request_holds_says_so(requests, personas):
    requests.make({"kind": "selection", "ids": ["m-05"]}, target_queue="payments")

    html = login(personas["operator"]).get(_new(scope="selection", ids=["m-01"])).content.decode()

    assert 'id="overlaps-none"' in html and 'id="overlaps-total"' not in html


# --- The list's filters -------------------------------------------------------------------------


def test_the_request_list_says_a_status_it_does_not_know_and_lists_all(requests, personas):
    made = requests.make()

    response = login(personas["auditor"]).get(reverse("request-list"), {"status": "x"})

    assert response.status_code == 400
    assert [r.id for r in response.context["page"].rows] == [made.id]
    assert _flash_warnings(response)[0].startswith(
        "Not understood: status &#x27;x&#x27;: not one of"
    )


# --- Approving twice -----------------------------------------------------------------------------


def test_approving_twice_is_one_approval_said_once(requests, personas):
    pending = requests.make(target_queue="payments")
    assert pending.status == "pending"
    approver = login(personas["approver"])
    url = reverse("request-approve", args=[pending.id])

    # A double-click: the second post leaves before the first one's page is shown.
    first = approver.post(url, {"comment": ""})
    second = approver.post(url, {"comment": ""})
    shown = approver.get(second["Location"]).content.decode()

    assert first.status_code == second.status_code == 302
    flash = re.search(r'<ul id="messages".*?</ul>', shown, re.S).group(0)
    assert re.findall(r"<li[^>]*>([^<]*)</li>", flash) == [f"Request {pending.id} is approved."]
    approvals = AuditEntry.objects.filter(
        target_type="request", target_id=str(pending.id), action="request.approved"
    )
    assert approvals.count() == 1


def test_someone_elses_approval_is_still_no_longer_waiting_for_a_second_approver(
    requests, personas, django_user_model
):
    from console.decisions.services import action_request_approve
    from tests.conftest import settled

    pending = requests.make(target_queue="payments")
    action_request_approve(actor=personas["approver"], request=pending)
    other = django_user_model.objects.create_user("approver2")
    other.groups.add(*personas["approver"].groups.all())
    other = settled(other)

    response = login(other).post(reverse("request-approve", args=[pending.id]), {"comment": ""})

    said = [str(m) for m in get_messages(response.wsgi_request)]
    assert said == [f"request {pending.id} is no longer waiting for approval"]
