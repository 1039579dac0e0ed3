"""The message detail page: metadata, headers, body (for those allowed), reason and stack, the
history timeline and the conversation; and R12: looking changes nothing."""

import hashlib
import os
import re

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from console.ingest.models import MessageKey
from console.lake.models import LakeCommit
from console.readmodels.models import MessageIndex
from tests.browse.conftest import api, login
from tests.browse.history import history_event


def _html(response):
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def _pre(html, element_id):
    match = re.search(rf'<pre id="{element_id}"[^>]*>(.*?)</pre>', html, re.S)
    return match.group(1) if match else None


def test_an_operator_reads_the_json_body_pretty_printed(seeded, personas):
    html = _html(login(personas["operator"]).get(reverse("message-detail", args=[seeded])))

    assert _pre(html, "message-body") == (
        "{\n  &quot;order&quot;: 1,\n  &quot;items&quot;: [\n    7\n  ]\n}"
    )
    assert 'id="body-hidden"' not in html
    assert 'id="body-truncated"' not in html
    assert f'href="{reverse("message-raw", args=[seeded])}"' in html


@pytest.mark.parametrize("role", ["viewer", "admin"])
def test_those_without_the_body_permission_see_a_notice_instead(seeded, personas, role):
    html = _html(login(personas[role]).get(reverse("message-detail", args=[seeded])))

    assert 'id="body-hidden"' in html
    assert 'id="message-body"' not in html
    assert "order&quot;: 1" not in html and '"order": 1' not in html
    assert reverse("message-raw", args=[seeded]) not in html
    assert 'id="message-headers"' in html  # metadata is still theirs


def test_it_shows_metadata_headers_and_the_history_timeline(seeded, personas):
    html = _html(login(personas["viewer"]).get(reverse("message-detail", args=[seeded])))

    headers = html[html.index('id="message-headers"') :]
    assert "<td>trace</td><td>abc</td>" in headers[: headers.index("</table>")]
    assert '<dd id="message-sender">shop@example.test</dd>' in html
    assert '<dd id="message-conversation-id">c-1</dd>' in html
    assert f'href="{reverse("group-detail", args=["g1"])}"' in html
    history = html[html.index('id="message-history"') :]
    history = history[: history.index("</ol>")]
    assert history.count('<li class="event') == 1  # ingested: one TBDL event
    assert "TBDL" in history and "ingested" in history


def test_it_shows_the_reason_and_stack_of_the_latest_failure(seeded, personas, monkeypatch):
    from console.browse import selectors

    events = [
        history_event(None, "TBDL", attempt=0, actor="test", run_id=None, reason="ingested"),
        history_event("TBDL", "DLNG"),
        history_event(
            "DLNG",
            "NDLV",
            delivery_count=1,
            reason="unknown sku 7",
            stack="Traceback...\nKeyError: 7",
            exception_type="KeyError",
        ),
    ]
    monkeypatch.setattr(selectors, "message_history", lambda *, message_id: events)

    html = _html(login(personas["viewer"]).get(reverse("message-detail", args=[seeded])))

    assert _pre(html, "message-reason") == "unknown sku 7"
    assert _pre(html, "message-stack") == "Traceback...\nKeyError: 7"
    timeline = html[html.index('id="message-history"') :]
    assert timeline.count('<li class="event') == 3
    assert "worker-7 (run r1)" in timeline
    assert '<span class="pill state-NDLV" title="quarantined (NDLV): Not delivered' in html
    assert re.search(r'<dd id="message-state"><span [^>]*>NDLV</span>', html)


def test_it_lists_the_other_indexed_messages_of_its_conversation(seeded, index, personas):
    index.row("order-2", conversation_id="c-1", state="WAIT")
    index.row("elsewhere", conversation_id="c-9")

    html = _html(login(personas["viewer"]).get(reverse("message-detail", args=[seeded])))

    section = html[html.index('id="message-conversation"') :]
    assert reverse("message-detail", args=["order-2"]) in section
    assert "elsewhere" not in section
    assert f'href="{reverse("message-detail", args=[seeded])}"' not in section
    assert 'id="conversation-note"' in html


def test_a_message_not_in_the_index_is_found_by_its_message_key(index, personas):
    index.ingest("fresh", "plain text body", headers={"k": "v"})

    html = _html(login(personas["operator"]).get(reverse("message-detail", args=["fresh"])))

    assert 'id="message-not-indexed"' in html
    assert _pre(html, "message-body") == "plain text body"
    assert re.search(r'<dd id="message-state"><span class="pill state-TBDL"[^>]*>TBDL</span>', html)


def test_an_unknown_message_is_404(index, personas):
    client = login(personas["operator"])

    assert client.get(reverse("message-detail", args=["nope"])).status_code == 404
    assert client.get(reverse("message-raw", args=["nope"])).status_code == 404
    assert api(personas["operator"]).get("/api/v1/messages/nope/body").status_code == 404


def test_a_body_missing_from_the_lake_is_said_not_crashed_on(index, personas):
    index.row("purged", body_path="messages/20260101/gone")

    html = _html(login(personas["operator"]).get(reverse("message-detail", args=["purged"])))

    assert 'id="body-missing"' in html


def test_a_large_body_shows_its_first_64_kib_and_a_truncated_mark(index, personas):
    body = "x" * (64 * 1024) + "TAIL"
    index.message("big", body)
    client = login(personas["operator"])

    html = _html(client.get(reverse("message-detail", args=["big"])))
    raw = client.get(reverse("message-raw", args=["big"]))

    assert len(_pre(html, "message-body")) == 64 * 1024
    assert "TAIL" not in html
    assert 'id="body-truncated"' in html
    assert raw.content == body.encode()


def test_the_raw_download_has_the_body_bytes_exactly(index, personas):
    data = bytes(range(256)) * 3
    import base64

    index.message("bin", base64.b64encode(data).decode(), ingest={"body_encoding": "base64"})

    raw = login(personas["operator"]).get(reverse("message-raw", args=["bin"]))

    assert raw.content == data
    assert (
        hashlib.sha256(raw.content).hexdigest()
        == MessageKey.objects.get(message_id="bin").body_sha256
    )


def _lake_files(root):
    found = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            stat = os.stat(path)
            found[path] = (stat.st_size, stat.st_mtime_ns)
    return found


def _snapshot(lake_root):
    return (
        list(LakeCommit.objects.order_by("id").values_list()),
        list(MessageIndex.objects.order_by("message_id").values_list()),
        list(MessageKey.objects.order_by("message_id").values_list()),
        _lake_files(lake_root),
    )


def test_reading_detail_body_raw_and_history_changes_nothing_r12(seeded, personas, lake_root):
    before = _snapshot(lake_root)
    page = login(personas["operator"])
    client = APIClient()
    client.force_authenticate(personas["operator"])

    for _ in range(2):
        assert page.get(reverse("message-detail", args=[seeded])).status_code == 200
        assert page.get(reverse("message-raw", args=[seeded])).status_code == 200
        assert client.get(f"/api/v1/messages/{seeded}/body").status_code == 200
        assert client.get(f"/api/v1/messages/{seeded}").status_code == 200  # its history
        assert page.get(reverse("message-list")).status_code == 200
        assert page.get(reverse("group-detail", args=["g1"])).status_code == 200

    assert _snapshot(lake_root) == before
