"""Screens that showed the wrong thing or crushed their columns (issue 31): the message list's
page-size picker shows the size in effect, and the audit table keeps every column at least as
wide as its longest word, at 1280 and at 800 px (a narrow screen scrolls the table inside its
box, never the page). No Spark: the index rows and the audit entries are written directly."""

import pytest

from console.audit.services import audit_record
from tests.browse.conftest import Index

pytestmark = [pytest.mark.slow]


@pytest.fixture
def sixty(transactional_db):
    index = Index()
    for i in range(60):
        index.row(f"m-{i:03d}")


def _rows(page):
    return page.locator("#message-table tr.message-row").count()


def test_the_page_size_picker_shows_the_size_in_effect(transactional_db, personas, sixty, tab):
    page = tab.page
    tab.login("viewer")

    tab.goto("/messages/")
    assert page.locator("select[name=size]").input_value() == "50"
    assert _rows(page) == 50

    page.select_option("select[name=size]", "25")
    with page.expect_navigation():
        page.click("#filters-apply")
    assert page.locator("select[name=size]").input_value() == "25"
    assert _rows(page) == 25

    page.select_option("select[name=size]", "100")
    with page.expect_navigation():
        page.click("#filters-apply")
    assert page.locator("select[name=size]").input_value() == "100"
    assert _rows(page) == 60

    # Loaded fresh, the picker shows the default that is in effect again.
    tab.goto("/messages/")
    assert page.locator("select[name=size]").input_value() == "50"
    assert _rows(page) == 50
    assert not tab.csp_violations and not tab.errors


# Each cell: its words (the text between spaces) must fit its content box, and nothing may spill
# out of it. The details column breaks long JSON by design: there only the spilling is checked.
# A value cut short on purpose (.cut, or an id's .id-text: an ellipsis) must carry its whole text
# as its title.
_MEASURE = """(selector) => {
  const probe = document.createElement("span");
  probe.style.cssText = "position:absolute;visibility:hidden;white-space:nowrap;left:0;top:0";
  document.body.appendChild(probe);
  const problems = [];
  for (const cell of document.querySelectorAll(selector + " th, " + selector + " td")) {
    const style = getComputedStyle(cell);
    const room = cell.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    if (cell.scrollWidth > cell.clientWidth + 1) {
      problems.push(["spills", cell.className, cell.innerText.slice(0, 40)]);
    }
    if (cell.classList.contains("audit-details")) {
      continue;
    }
    // A value cut short (an ellipsis) keeps its whole text on hover; the rest is measured.
    const shown = cell.cloneNode(true);
    for (const cut of cell.querySelectorAll(".cut, .id-text")) {
      if (cut.title !== cut.textContent) {
        problems.push(["cut without its whole value on hover", cell.className, cut.textContent]);
      }
    }
    shown.querySelectorAll(".cut, .id-text").forEach((cut) => cut.remove());
    probe.style.font = style.font;
    probe.style.fontWeight = style.fontWeight;
    for (const word of shown.textContent.split(/\\s+/).filter(Boolean)) {
      probe.textContent = word;
      const width = probe.getBoundingClientRect().width;
      if (width > room + 0.5) {
        problems.push(["narrower than its word", cell.className, word, width, room]);
      }
    }
  }
  // Numbers and times on one line each.
  for (const one of document.querySelectorAll(selector + " td.num, " + selector + " time")) {
    const range = document.createRange();
    range.selectNodeContents(one);
    const lines = new Set([...range.getClientRects()].map((rect) => Math.round(rect.top)));
    if (lines.size > 1) {
      problems.push(["wraps", one.className || one.tagName, one.innerText]);
    }
  }
  probe.remove();
  return problems;
}"""


@pytest.fixture
def trail(transactional_db, personas):
    actions = [
        ("access.role_grant_requested", "user", "bob", {"role": "approver", "comment": "x" * 80}),
        ("message.body_viewed", "message", "order-1234567890", {"via": "page"}),
        ("request.created", "request", "42", {"action": "reprocess", "count": 12}),
        (
            "queue.paused",
            "queue",
            "orders",
            {"reason": "ledger in maintenance " * 8, "sha256": "ab" * 32},
        ),
    ]
    for i in range(120):
        action, target_type, target_id, details = actions[i % len(actions)]
        audit_record(
            actor="approver-with-a-long-name" if i % 3 else "alice",
            action=action,
            target_type=target_type,
            target_id=target_id,
            details=details,
        )


@pytest.mark.parametrize("width", [1280, 800])
def test_the_audit_tables_columns_are_never_narrower_than_their_words(trail, tab, width):
    page = tab.page
    page.set_viewport_size({"width": width, "height": 900})
    tab.login("auditor", "/audit/")

    assert page.locator("#audit-table tr.audit-row").count() == 50
    problems = page.evaluate(_MEASURE, "#audit-table")
    assert problems == []
    page_overflow = page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert page_overflow <= 0
    # The time column shows the absolute time, how long ago on hover.
    time = page.locator("#audit-table td.audit-time time").first
    assert len(time.inner_text()) == len("2026-11-27 09:12:03")
    assert "ago" in time.get_attribute("title") or "now" in time.get_attribute("title")
    assert not tab.csp_violations and not tab.errors
