"""Issue 3, untrusted data: in a real Chromium, messages whose body, headers, reason, exception
type, sender, conversation and id carry script payloads are shown as text and run no script.

Queue names cannot carry a payload: a queue name is letters, digits, '.', '_' and '-' (its
validation refuses the rest), so the other fields an attacker controls carry them instead.
"""

import base64
import json
import re
from urllib.parse import quote

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SCRIPT = "<script>window.__xss=1</script>"
ONERROR = '<img src=x onerror="window.__xss=1">'
LINK = '<a href="javascript:window.__xss=1">javascript:window.__xss=1</a>'
SVG = '<svg onload="window.__xss=1">'
ALERT = '<img src=x onerror="alert(document.domain)">'
BREAKOUT = '"><svg onload="window.__xss=1">'  # leaves an attribute it was put in
PAYLOADS = [SCRIPT, ONERROR, LINK, SVG, ALERT, BREAKOUT]
EVERY_PAYLOAD = "\n".join(PAYLOADS)

MESSAGES = {
    # id: (body, ingest fields)
    "xss-text": (
        EVERY_PAYLOAD,
        {
            "content_type": "text/plain",
            "headers": {"reason": f"{SCRIPT} {LINK}", SVG: ONERROR},
            "sender": ONERROR,
            "conversation_id": BREAKOUT,
        },
    ),
    "xss-html": (
        f"<!doctype html><html><body>{EVERY_PAYLOAD}</body></html>",
        {"content_type": "text/html", "headers": {"reason": ONERROR}, "sender": SVG},
    ),
    "xss-json": (
        json.dumps({"note": SCRIPT, "link": LINK, SVG: ONERROR}),
        {
            "content_type": "application/json",
            "headers": {"reason": SVG},
            "sender": "javascript:window.__xss=1",
        },
    ),
    "xss-xml": (
        f'<?xml version="1.0"?><order><note>{SCRIPT}</note><svg onload="window.__xss=1"/></order>',
        {"content_type": "application/xml", "headers": {"reason": ALERT}},
    ),
    "xss-binary": (
        base64.b64encode(b"\x00\x01\x02" + SCRIPT.encode()).decode(),
        {"body_encoding": "base64", "headers": {"reason": SCRIPT}},
    ),
    "xss-large": (SCRIPT * 3000, {"content_type": "text/plain", "headers": {"reason": SCRIPT}}),
    # Any printable text is a message id: the id itself is a payload.
    ONERROR: ("id", {"content_type": "text/plain", "headers": {"reason": "its id"}}),
    # The exception type is the handler's exception class name: any string, to Python.
    "xss-type": (
        "typed",
        {"content_type": "text/plain", "headers": {"reason": BREAKOUT, "exception": SVG}},
    ),
}


@pytest.fixture
def quarantined(engine, refresh):
    engine.queue("untrusted", handler="tests.browser.handlers.refuse")
    for message_id, (body, fields) in MESSAGES.items():
        engine.ingest("untrusted", {message_id: body}, **fields)
    run = engine.deliver()
    assert run.outcomes["states"] == {"NDLV": len(MESSAGES)}, run.outcomes
    refresh()
    return list(MESSAGES)


def _visit(tab, path):
    """Open a page and check it ran nothing the data carried."""
    response = tab.goto(path)
    page = tab.page
    page.wait_for_load_state("load")
    policy = response.headers.get("content-security-policy", "")
    assert "script-src" in policy or "default-src" in policy, (path, policy)
    assert "unsafe-inline" not in policy, (path, policy)
    assert page.evaluate("window.__xss") is None, path
    assert page.locator('a[href^="javascript:" i]').count() == 0, path
    assert page.locator("svg[onload], img[onerror]").count() == 0, path
    assert tab.dialogs == [], (path, tab.dialogs)
    assert tab.errors == [], (path, tab.errors)
    # The pages themselves keep to their policy: nothing of theirs is refused.
    assert tab.csp_violations == [], (path, tab.csp_violations)
    return page


def _text(page, selector="body"):
    return page.locator(selector).inner_text()


def test_payloads_are_shown_as_text_and_run_no_script(personas, quarantined, tab):
    tab.login("operator")

    page = _visit(tab, "/")
    ran, report = tab.csp_probe()
    assert not ran, "an inline script ran: the Content-Security-Policy is not in force"
    assert report is not None and "inline script" in report, report
    tab.csp_violations.clear()

    page = _visit(tab, "/messages/")
    table = _text(page, "#message-table")
    for message_id in MESSAGES:
        assert message_id in table
    assert "window.__xss=1" in table  # the reasons, as text

    page = _visit(tab, "/messages/xss-text/")
    body = _text(page, "#message-body")
    for payload in PAYLOADS:
        assert payload in body, payload
    assert SCRIPT in _text(page, "#message-reason")
    assert LINK in _text(page, "#message-reason")
    assert ONERROR in _text(page, "#message-sender")
    assert BREAKOUT in _text(page, "#message-conversation-id")
    headers = _text(page, "#message-headers")
    assert SVG in headers and ONERROR in headers  # a header's name and its value
    assert SCRIPT in _text(page, "#message-history")  # the failure event's reason
    assert page.locator("#body-truncated").count() == 0
    # Text, not markup: the payload is a text node of the body's element.
    assert page.get_by_text(SCRIPT, exact=False).first.is_visible()

    page = _visit(tab, "/messages/xss-html/")
    assert SCRIPT in _text(page, "#message-body")
    assert ONERROR in _text(page, "#message-reason")

    page = _visit(tab, "/messages/xss-json/")
    assert SCRIPT in _text(page, "#message-body")
    assert SVG in _text(page, "#message-reason")
    assert "javascript:window.__xss=1" in _text(page, "#message-sender")

    page = _visit(tab, "/messages/xss-xml/")
    assert "window.__xss=1" in _text(page, "#message-body")
    assert ALERT in _text(page, "#message-reason")

    page = _visit(tab, "/messages/xss-binary/")
    assert "|...<script>windo|" in _text(page, "#message-body")  # the hex dump's text column

    page = _visit(tab, "/messages/xss-type/")
    assert SVG in _text(page, "main")  # the exception type
    assert BREAKOUT in _text(page, "#message-reason")
    assert SVG in _text(page, "#message-stack")  # the class name in the trace

    page = _visit(tab, "/messages/xss-large/")
    assert page.locator("#body-truncated").is_visible()  # past the first 64 KiB
    assert SCRIPT in _text(page, "#message-body")

    page = _visit(tab, f"/messages/{quote(ONERROR, safe='')}/")
    assert ONERROR in _text(page, "h1")

    page = _visit(tab, "/groups/")
    groups = sorted(
        {
            href
            for href in page.locator("a[href*='/groups/']").evaluate_all(
                "links => links.map(a => a.getAttribute('href'))"
            )
            if re.search(r"/groups/[^/?#]+/?$", href)
        }
    )
    assert groups, "the groups page links to no group"
    for href in groups:
        _visit(tab, href)

    ran, _ = tab.csp_probe()
    assert not ran
