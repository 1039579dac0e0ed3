"""Bodies, headers, reasons, queue names, senders and ids are attacker-controlled: every page shows
them as inert text, and every page sends a Content-Security-Policy that would stop an inline
script anyway."""

import re
from urllib.parse import quote

import pytest
from django.urls import reverse

from console.queues.models import Queue
from tests.browse.conftest import login
from tests.html_tags import assert_attributes_inert, html_tags

SCRIPT = "<script>alert(1)</script>"
ATTR = '" onerror="alert(2)'
LINK = "javascript:alert(3)"
SVG = "<svg onload=alert(4)>"
PAYLOAD = f"{SCRIPT} {ATTR} {LINK} {SVG}"
EVIL_QUEUE = f"q{SCRIPT}{SVG}"
EVIL_ID = f'm/{SCRIPT}"?#{ATTR}'


@pytest.fixture
def hostile(index, personas):
    queue = index.queue(EVIL_QUEUE)
    Queue.objects.filter(pk=queue.pk).update(enabled=False, disabled_reason=PAYLOAD)
    index.group(
        "g-evil",
        queue=EVIL_QUEUE,
        pattern=PAYLOAD,
        sample_reason=PAYLOAD,
        sample_stack=PAYLOAD,
        exception_type=SVG,
        sample_message_id=EVIL_ID,
    )
    index.message(
        EVIL_ID,
        PAYLOAD,
        queue=EVIL_QUEUE,
        reason=PAYLOAD,
        exception_type=SVG,
        sender=LINK,
        conversation_id=SCRIPT,
        group_id="g-evil",
        ingest={
            "headers": {SCRIPT: PAYLOAD, "x-link": LINK},
            "sender": LINK,
            "conversation_id": SCRIPT,
            "content_type": "text/html",
        },
    )
    index.row("sibling", queue=EVIL_QUEUE, conversation_id=SCRIPT, reason=PAYLOAD)
    index.stats(EVIL_QUEUE, NDLV=1)
    return EVIL_ID


def _pages():
    return [
        reverse("dashboard"),
        reverse("message-list"),
        reverse("message-list") + "?q=alert",
        reverse("message-detail", args=[EVIL_ID]),
        reverse("message-detail", args=["sibling"]),
        reverse("group-list"),
        reverse("group-detail", args=["g-evil"]),
        reverse("queue-list"),
    ]


# The charts the templates draw (console.browse.charts); any other embedded document is not ours.
CHARTS = {"inflow-chart", "quarantine-flow-chart", "rates-chart"}


def _our_chart(attrs):
    """One of our drawings: a chart, a sparkline, the copy buttons' icon."""
    return attrs.get("id") in CHARTS or attrs.get("class") in ("sparkline", "copy-icon")


def _assert_inert(html):
    tags = html_tags(html)
    for tag, attrs in tags:
        assert tag not in ("svg", "iframe", "object", "embed") or _our_chart(attrs), (tag, attrs)
        assert_attributes_inert(tag, attrs)
        if tag == "script":
            # The only scripts are local files.
            assert attrs.get("src", "").startswith("/static/"), attrs
    scripts = {attrs.get("src") for tag, attrs in tags if tag == "script"}
    ours = {
        f"/static/js/{name}.js"
        for name in ("console", "live_stats", "live_regions", "menus", "copy_ids")
    }
    assert scripts <= ours, scripts
    assert "<script>alert" not in html
    assert "<svg onload" not in html


@pytest.mark.parametrize("role", ["operator", "viewer", "admin"])
def test_hostile_data_is_shown_as_text_on_every_page(hostile, personas, role):
    client = login(personas[role])
    for url in _pages():
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        _assert_inert(html)
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html, url


def test_the_detail_page_shows_each_hostile_field_escaped(hostile, personas):
    html = login(personas["operator"]).get(reverse("message-detail", args=[EVIL_ID])).content
    html = html.decode()

    escaped_payload = (
        "&lt;script&gt;alert(1)&lt;/script&gt; &quot; onerror=&quot;alert(2) javascript:alert(3) "
        "&lt;svg onload=alert(4)&gt;"
    )
    body = re.search(r'<pre id="message-body"[^>]*>(.*?)</pre>', html, re.S).group(1)
    assert body == escaped_payload
    reason = re.search(r'<pre id="message-reason"[^>]*>(.*?)</pre>', html, re.S).group(1)
    assert reason == escaped_payload
    assert f"<td>{escaped_payload}</td>" in html  # a header value
    assert '<dd id="message-sender">javascript:alert(3)</dd>' in html
    assert "&lt;svg onload=alert(4)&gt;" in html  # queue name and exception type


def test_links_to_a_hostile_id_lead_to_that_message(hostile, personas):
    client = login(personas["operator"])
    html = client.get(reverse("message-list")).content.decode()
    hrefs = re.findall(r'<a class="message-link" href="([^"]*)"', html)
    detail = reverse("message-detail", args=[EVIL_ID])

    assert detail.replace("'", "&#x27;") in hrefs
    # No character of the id escapes the path: no raw slash, quote, '?' or '#' after /messages/.
    assert re.fullmatch(r"/messages/[A-Za-z0-9%._\-~!$&'()*+,;=:@]+/", detail)
    response = client.get(detail)
    assert response.status_code == 200
    assert response.context["m"].message_id == EVIL_ID
    raw = client.get(reverse("message-raw", args=[EVIL_ID]))
    assert raw.status_code == 200
    assert raw.content == PAYLOAD.encode()


@pytest.mark.parametrize(
    "message_id", ["a/b", "a/../b", "..", ".", "a?b=1#c", "100%", "a%2Fb", "'\"", " x "]
)
def test_ids_with_url_characters_round_trip_through_their_links(index, personas, message_id):
    index.message(message_id, "hello")
    client = login(personas["operator"])

    url = reverse("message-detail", args=[message_id])
    response = client.get(url)

    assert "/../" not in url and not url.endswith("/./")
    assert response.status_code == 200
    assert response.context["m"].message_id == message_id
    assert client.get(reverse("message-raw", args=[message_id])).content == b"hello"


def test_a_hand_typed_link_with_the_id_as_it_is_still_works(index, personas):
    index.message("a/b", "hello")

    response = login(personas["operator"]).get("/messages/a/b/")

    assert response.context["m"].message_id == "a/b"


def test_the_raw_download_is_an_attachment_no_browser_renders(hostile, personas):
    response = login(personas["operator"]).get(reverse("message-raw", args=[EVIL_ID]))

    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"].startswith("attachment; ")
    assert "<" not in response["Content-Disposition"]
    assert "\n" not in response["Content-Disposition"]
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Security-Policy"] == "sandbox"


def test_the_body_api_answers_like_the_raw_download(hostile, personas):
    from tests.browse.conftest import api

    response = api(personas["operator"]).get(f"/api/v1/messages/{quote(EVIL_ID)}/body")

    assert response.status_code == 200
    assert response.content == PAYLOAD.encode()
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"].startswith("attachment; ")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Security-Policy"] == "sandbox"


def test_every_page_sends_a_csp_without_unsafe_inline(hostile, personas):
    client = login(personas["operator"])
    pages = [*_pages(), reverse("login")]
    for url in pages:
        response = client.get(url)
        csp = response["Content-Security-Policy"]
        directives = dict(d.strip().split(" ", 1) for d in csp.split(";") if d.strip())
        assert "unsafe-inline" not in csp, url
        assert "unsafe-eval" not in csp, url
        assert directives["default-src"] == "'self'"
        assert directives["script-src"] == "'self'"
        assert directives["style-src"] == "'self'"
        assert directives["img-src"] == "'self' data:"
        assert directives["object-src"] == "'none'"
        assert directives["base-uri"] == "'none'"
        assert directives["frame-ancestors"] == "'none'"
        assert directives["form-action"] == "'self'"


def test_the_login_and_forbidden_pages_send_the_csp_too(hostile, personas):
    assert "script-src 'self'" in login().get(reverse("login"))["Content-Security-Policy"]
    forbidden = login(personas["auditor"]).get(reverse("message-list"))
    assert forbidden.status_code == 403
    assert "script-src 'self'" in forbidden["Content-Security-Policy"]
