"""Issue 45, point 2, in the browser: the request form shows each option only for the action it
applies to; an edited JSON body that does not parse is refused in the page, with the parser's
words, before any request is made; a double-click on Approve asks once and posts once; a filter
the message list cannot read is said on the page, and the list still shows.

The data is put in the index by hand (and one body in the lake): no Spark, no delivery run."""

import pytest
from playwright.sync_api import expect

from console.audit.models import AuditEntry
from console.decisions.models import ActionRequest
from console.decisions.services import Action, action_request_create
from tests.browse.conftest import Index

JSON = "application/json"


@pytest.fixture
def desk(transactional_db, lake_root, personas):
    """m-json (a JSON body in the lake) and m-1, m-2: quarantined in orders; payments exists."""
    index = Index()
    index.message("m-json", '{"order": 1}', ingest={"content_type": JSON}, content_type=JSON)
    index.row("m-1")
    index.row("m-2")
    index.queue("payments")
    return personas


def _posts(page):
    """The POSTs the page makes from now on."""
    made = []
    page.on("request", lambda request: made.append(request.url) if request.method == "POST" else 0)
    return made


def test_the_form_shows_each_option_only_for_its_action_and_refuses_bad_json_before_sending(
    desk, tab
):
    page = tab.page
    tab.login("operator", "/requests/new?scope=message&id=m-json")
    reprocess = page.locator("fieldset[data-for-action=reprocess]")
    ending = page.locator("fieldset[data-for-action=end_with_error]")
    send_to = page.locator("#redrive-target")
    steps = page.locator("input[name=steps]")

    # Reprocess: where and how fast; the steps only once "progressive" is ticked, and a place's
    # fields only once "send to" names it.
    expect(send_to).to_be_visible()
    expect(steps).to_be_hidden()
    page.locator("input[name=progressive]").check()
    expect(steps).to_be_visible()
    expect(page.locator("input[name=target_subject]")).to_be_hidden()
    page.locator("input[name=send_to][value=subject]").check()
    expect(page.locator("input[name=target_subject]")).to_be_visible()
    expect(page.locator("input[name=target_url]")).to_be_hidden()

    # End with error: neither "send to" nor steps, only what the sender is told.
    page.locator("input[name=action][value=end_with_error]").check()
    expect(ending).to_be_visible()
    expect(reprocess).to_be_hidden()
    expect(send_to).to_be_hidden()
    expect(steps).to_be_hidden()
    # Fail: nothing but the comment.
    page.locator("input[name=action][value=fail]").check()
    expect(ending).to_be_hidden()
    expect(reprocess).to_be_hidden()

    # An edited body that does not parse: said beside it, and nothing is sent.
    page.locator("input[name=action][value=reprocess]").check()
    page.locator("input[name=send_to][value=origin]").check()
    page.locator("input[name=progressive]").uncheck()
    page.locator("textarea[name=edited_body]").fill('{"order": 1,\n "sku": }')
    page.locator("textarea[name=comment]").fill("fix the sku")
    posts = _posts(page)
    page.locator("#request-submit").click()
    check = page.locator("#edited-body-check")
    expect(check).to_be_visible()
    said = check.inner_text()
    assert "is application/json, and this is not valid JSON" in said
    assert "(line 2, column 9)" in said, said
    assert posts == [] and not ActionRequest.objects.exists()

    # Fixed, it goes (once) and waits for a second person: an edited body always does.
    page.locator("textarea[name=edited_body]").fill('{"order": 1, "sku": "A-1"}')
    expect(check).to_be_hidden()
    with page.expect_navigation():
        page.locator("#request-submit").click()
    assert len(posts) == 1
    request = ActionRequest.objects.get()
    assert (request.status, bytes(request.edited_body)) == (
        "pending",
        b'{"order": 1, "sku": "A-1"}',
    )
    assert not tab.csp_violations and not tab.errors


def test_a_double_click_on_approve_asks_once_and_approves_once(desk, tab):
    pending = action_request_create(
        actor=desk["operator"],
        scope={"kind": "selection", "ids": ["m-1", "m-2"]},
        action=Action(kind="reprocess", target_queue="payments"),
        comment="the payments handler takes them now",
    )
    assert pending.status == "pending"
    page = tab.page
    tab.accept_dialogs = True
    tab.login("approver", f"/requests/{pending.id}/")

    posts = _posts(page)
    with page.expect_navigation():
        page.locator("#approve-submit").dblclick()

    assert [d for d in tab.dialogs if d.startswith("confirm:")] == [tab.dialogs[0]]
    assert len(tab.dialogs) == 1
    assert len(posts) == 1
    expect(page.locator("#messages li")).to_have_text([f"Request {pending.id} is approved."])
    approvals = AuditEntry.objects.filter(
        target_type="request", target_id=str(pending.id), action="request.approved"
    )
    assert approvals.count() == 1
    assert not tab.csp_violations and not tab.errors


def test_a_filter_the_list_cannot_read_is_said_and_the_list_shows(desk, tab):
    page = tab.page
    tab.login("viewer")

    response = page.goto(tab.base_url + "/messages/?since=garbage&queue=orders")

    assert response.status == 400  # part of the query was not understood; the page is whole
    expect(page.locator("#messages .flash-warning")).to_have_text(
        [
            "Not understood: failed since 'garbage': use a date like 2026-12-07 or "
            "2026-12-07 14:30 (UTC)."
        ]
    )
    expect(page.locator("#message-table tbody tr")).to_have_count(3)
    # Dropped: the field is empty, and neither the page links nor "save" carry it on.
    expect(page.locator("#id_since")).to_have_value("")
    expect(page.locator("#id_since")).to_have_attribute("type", "datetime-local")
    assert "garbage" not in page.locator("#save-filter").inner_html()
    assert not tab.csp_violations and not tab.errors
