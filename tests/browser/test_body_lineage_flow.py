"""An edited body's lineage on the message page, as an operator reads it: the original and the
edit, who made it in which request (a link to it), and the diff against the original with the
removed and added lines marked, as text. Real quarantine and reprocess with an edited body."""

import pytest

from console.decisions.execution import action_request_execute
from console.decisions.services import Action, action_request_approve, action_request_create

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ORIGINAL = "order 7\n<b>bold</b>\ncustomer: none\nend"
EDITED = "order 7\n<b>bold</b>\ncustomer: ACME\nend"


def test_the_message_page_shows_each_body_version_and_its_diff_against_the_original(
    personas, engine, refresh, settings, tab
):
    settings.REFRESH_ON_COMMIT = False
    engine.queue("orders", max_failed_deliveries=1)
    (message_id,) = engine.ingest("orders", [ORIGINAL], prefix="order")
    engine.deliver()
    refresh()
    request = action_request_create(
        actor=personas["operator"],
        scope={"kind": "message", "id": message_id},
        action=Action(kind="reprocess", edited_body=EDITED.encode()),
        comment="the customer was missing",
    )
    action_request_approve(actor=personas["approver"], request=request)  # an edit, R17
    assert action_request_execute(request_id=request.id, spark=engine.spark).status == "done"
    engine.deliver(at=engine.later(minutes=1))  # still not a body the handler knows
    refresh()

    page = tab.page
    tab.login("operator", f"/messages/{message_id}/")
    versions = page.locator("#body-versions")
    assert "the original" in page.locator("#body-version-1").inner_text()
    edit = page.locator("#body-version-2")
    assert "edited by operator" in edit.inner_text()
    assert f"request {request.id}" in edit.inner_text()
    diff = page.locator("#body-diff-2")
    assert page.locator("#body-diff-2 .diff-removed").inner_text() == "- customer: none"
    assert page.locator("#body-diff-2 .diff-added").inner_text() == "+ customer: ACME"
    assert "<b>bold</b>" in diff.inner_text()  # the markup is text, not bold
    assert page.locator("#body-diff-2 b").count() == 0
    assert versions.count() == 1

    with page.expect_navigation():
        edit.locator("a.body-version-request").click()
    assert page.url.endswith(f"/requests/{request.id}/")
    assert not tab.csp_violations and not tab.errors
