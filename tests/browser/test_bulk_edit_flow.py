"""A bulk edit in Chromium (issue 46, point 3): an operator opens a failure group's page, follows
"Edit in bulk", writes a JSON Patch, previews it (each body's diff, as text), and sends the
request; the approver reads the patch and the preview on the request's page and approves it; once
carried out, a message's page shows its new version's diff. Real quarantine, real execution."""

import pytest
from playwright.sync_api import expect

from console.decisions.execution import action_request_execute
from console.decisions.models import ActionRequest
from console.readmodels.models import FailureGroup

pytestmark = [pytest.mark.spark, pytest.mark.slow]

PATCH = '[{"op": "add", "path": "/customer", "value": "<b>ACME</b>"}]'


def test_an_operator_makes_a_bulk_edit_with_its_preview_and_an_approver_approves_it(
    personas, engine, refused, refresh, tab
):
    group = FailureGroup.objects.get(queue="orders")
    page = tab.page
    tab.login("operator", f"/groups/{group.fingerprint}/")
    with page.expect_navigation():
        page.locator("#group-edit-link").click()
    assert page.url.endswith("#bulk-edit")

    page.locator("textarea[name=patch]").fill(PATCH)
    with page.expect_navigation():
        page.locator("#patch-preview-submit").click()
    rows = page.locator("#patch-preview .patch-preview-row")
    expect(rows).to_have_count(5)
    expect(page.locator("#patch-preview .patch-preview-row.applies")).to_have_count(5)
    added = page.locator("#preview-diff-1 .diff-added")
    expect(added.last).to_have_text('+   "customer": "<b>ACME</b>"')
    assert page.locator("#patch-preview b").count() == 0  # the markup is text
    expect(page.locator("#patch-previewed")).to_be_visible()
    assert not ActionRequest.objects.exists()

    page.locator("textarea[name=comment]").fill("the shop's customer was lost: it is ACME")
    with page.expect_navigation():
        page.locator("#request-submit").click()
    request = ActionRequest.objects.get()
    assert page.url.endswith(f"/requests/{request.id}/")
    expect(page.locator("#request-status")).to_have_text("pending")
    expect(page.locator("#request-patch")).to_contain_text('"path": "/customer"')
    expect(page.locator("#patch-preview .patch-preview-row")).to_have_count(5)

    tab.logout()
    tab.login("approver", f"/requests/{request.id}/")
    expect(page.locator("#preview-diff-1 .diff-added").last).to_contain_text('"customer"')
    tab.accept_dialogs = True
    with page.expect_navigation():
        page.locator("#approve-submit").click()
    # The approval's answer is a redirect to the request's page: until that page shows the
    # outcome, a navigation of the test's own would interrupt it.
    expect(page.locator("#request-status")).to_have_text("approved")
    request.refresh_from_db()
    assert request.status == "approved"
    request = action_request_execute(request_id=request.id, spark=engine.spark)
    assert (request.status, request.done) == ("done", 5)
    refresh()

    tab.goto(f"/messages/{refused[0]}/")
    expect(page.locator("#body-version-2")).to_contain_text(f"request {request.id}")
    expect(page.locator("#body-diff-2 .diff-added").last).to_have_text(
        '+   "customer": "<b>ACME</b>"'
    )
    assert not tab.errors and not tab.csp_violations
