"""Issue 30, item 3, in a real Chromium: a request comment holding a right-to-left override is
shown, not obeyed. On the request page an approver reads, and in the audit trail, the override is
a visible marker, ⟨U+202E⟩, and the text after it reads in the order it was stored, left to right
on the screen too; the same text written raw into a page is drawn reversed, which is what the
marker prevents."""

import pytest

from console.decisions.services import Action, action_request_create
from console.textshown import controls_marked
from tests.browse.conftest import T0, Index
from tests.test_textshown import EVERY_LISTED, ORDINARY

pytestmark = [pytest.mark.slow]

RLO = "\u202e"
COMMENT = f"approve ids.txt{RLO}txt.exe now"
SHOWN = "approve ids.txt⟨U+202E⟩txt.exe now"

# Where, on the screen, the marker and the first and the seventh character after it ("t" and
# "e" of "txt.exe") are drawn: on one line, left to right.
GEOMETRY = """(element) => {
    const marker = element.querySelector('.ctl');
    const after = marker.nextSibling;
    const box = (node, at) => {
        const range = document.createRange();
        range.setStart(node, at);
        range.setEnd(node, at + 1);
        return range.getBoundingClientRect();
    };
    const [mark, first, seventh] = [marker.getBoundingClientRect(), box(after, 0), box(after, 6)];
    return {
        marker: mark.right,
        first: first.left,
        seventh: seventh.left,
        oneLine: first.top < mark.bottom && mark.top < first.bottom && first.top === seventh.top,
    };
}"""

# The stored text written raw into the page, as it was shown before: where its characters after
# the override are drawn.
RAW = """(text) => {
    const pre = document.createElement('pre');
    pre.textContent = text;
    document.querySelector('main').append(pre);
    const node = pre.firstChild;
    const at = text.indexOf('\\u202e') + 1;
    const box = (i) => {
        const range = document.createRange();
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        return range.getBoundingClientRect();
    };
    const drawn = {first: box(at).left, seventh: box(at + 6).left};
    pre.remove();
    return drawn;
}"""


@pytest.fixture
def hostile_request(transactional_db, lake_root, personas, settings):
    """A request awaiting approval (two messages, over APPROVAL_OVER) whose comment holds an
    override."""
    settings.APPROVAL_OVER = 1
    index = Index()
    index.queue("orders")
    for message_id in ("m-01", "m-03"):
        index.row(
            message_id,
            reason="order not found",
            exception_type="KeyError",
            body_path="messages/x",
            enqueued_at=T0,
            first_failure_at=None,
        )
    request = action_request_create(
        actor=personas["operator"],
        scope={"kind": "selection", "ids": ["m-01", "m-03"]},
        action=Action(kind="fail"),
        comment=COMMENT,
    )
    assert request.status == "pending"
    return request


def _reads_in_stored_order(element):
    drawn = element.evaluate(GEOMETRY)
    assert drawn["oneLine"], drawn
    assert drawn["marker"] <= drawn["first"] < drawn["seventh"], drawn


def test_an_override_in_a_comment_is_a_marker_on_the_request_page_and_in_the_audit_trail(
    hostile_request, tab
):
    page = tab.page

    # The approver, before approving.
    tab.login("approver", f"/requests/{hostile_request.id}/")
    comment = page.locator("#request-comment")
    assert comment.inner_text() == SHOWN
    marker = comment.locator(".ctl")
    assert marker.is_visible()
    assert marker.get_attribute("title") == "RIGHT-TO-LEFT OVERRIDE"
    _reads_in_stored_order(comment)
    trail = page.locator("#request-audit .audit-row .reason").first
    assert trail.inner_text() == SHOWN
    _reads_in_stored_order(trail)
    # Written raw, the characters after the override would be drawn right to left.
    raw = page.evaluate(RAW, COMMENT)
    assert raw["first"] > raw["seventh"], raw
    assert page.locator("#approve-submit").is_visible()
    assert tab.errors == [] and tab.csp_violations == []
    tab.logout()

    # The auditor, in the audit trail.
    tab.login("auditor", "/audit/?action=request.created")
    details = page.locator("#audit-table .audit-details code").first
    assert f'"comment": "{SHOWN}"' in details.inner_text()
    assert details.locator(".ctl").is_visible()
    _reads_in_stored_order(details)
    assert tab.errors == [] and tab.csp_violations == []


def test_text_a_poll_brings_is_marked_in_the_page_as_the_server_marks_it(transactional_db, tab):
    """request_progress.js and lake_query.js write reasons and errors they poll with
    console.js's showText: it marks what console/textshown.py marks, and keeps what it keeps."""
    texts = [*ORDINARY, *(f"a{ch}b" for ch in EVERY_LISTED), "😀\ufe01\ufe02", "ad\u200dmin"]
    tab.goto("/login/")

    shown = tab.page.evaluate(
        """(texts) => texts.map((text) => {
            const element = document.createElement('p');
            window.Antidote.showText(element, text);
            return [element.textContent, element.querySelectorAll('.ctl').length];
        })""",
        texts,
    )

    assert [text for text, _ in shown] == [controls_marked(text) for text in texts]
    assert [n for _, n in shown] == [controls_marked(text).count("⟨U+") for text in texts]
