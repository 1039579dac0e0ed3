"""Issue 30, item 3: a comment, reason or error description holding a right-to-left override is
shown on the request page and in the audit trail as a marker, `⟨U+202E⟩`, with the rest in the
order it was stored; the API and the JSON Lines export return the stored text; the CSV exports
carry the markers, behind their formula guard."""

import csv
import io
import json

import pytest
from django.urls import reverse
from django.utils.html import escape

from console.audit.exports import csv_cell
from console.decisions.services import action_request_approve
from console.readmodels.models import MessageIndex
from tests.browse.conftest import api, login

RLO = "\u202e"
ZWSP = "\u200b"
COMMENT = f"ship ids.txt{RLO}txt.exe please"
MARKER = '<span class="ctl" title="RIGHT-TO-LEFT OVERRIDE">⟨U+202E⟩</span>'


def _marked(text):
    return text.replace(RLO, MARKER)


@pytest.fixture
def hostile(requests, personas):
    """A request to end two messages with an error, every text of it holding an override: the
    requester's comment, the error description, a sampled message's reason, the approver's
    comment."""
    MessageIndex.objects.filter(message_id="m-01").update(reason=f"order 1 {RLO}dnuof ton")
    request = requests.make(
        {"kind": "selection", "ids": ["m-01", "m-03"]},
        kind="end_with_error",
        error_code=f"E{RLO}42",
        error_description=f"refused {RLO}by the shop",
        comment=COMMENT,
    )
    assert request.status == "pending"  # ending with an error always takes a second person
    return action_request_approve(
        actor=personas["approver"], request=request, comment=f"ok {RLO}go"
    )


def test_the_request_page_shows_every_override_as_a_marker_and_obeys_none(hostile, personas):
    page = login(personas["approver"]).get(reverse("request-detail", args=[hostile.id]))

    html = page.content.decode()
    assert page.status_code == 200
    assert RLO not in html
    assert f'<pre id="request-comment" class="comment">{_marked(COMMENT)}</pre>' in html
    assert f'<dd id="request-error-description">refused {MARKER}by the shop</dd>' in html
    assert f'<dd id="request-error-code">E{MARKER}42</dd>' in html
    assert f"order 1 {MARKER}dnuof ton" in html  # the frozen sample's reason
    assert 'title="order 1 ⟨U+202E⟩dnuof ton"' in html  # and its tooltip
    assert f'<td class="reason">{_marked(COMMENT)}</td>' in html  # the page's audit trail
    assert f'<pre id="request-decision-comment" class="comment">ok {MARKER}go</pre>' in html


def test_the_audit_trail_shows_the_comment_with_its_marker(hostile, personas):
    page = login(personas["auditor"]).get(reverse("audit-list"))

    html = page.content.decode()
    assert page.status_code == 200
    assert RLO not in html
    assert _marked(escape(json.dumps(COMMENT, ensure_ascii=False))) in html


def test_the_api_returns_the_text_as_it_was_stored(hostile, personas):
    data = api(personas["viewer"]).get(f"/api/v1/requests/{hostile.id}").json()

    assert data["comment"] == COMMENT
    assert data["error_description"] == f"refused {RLO}by the shop"
    assert data["audit"][0]["details"]["comment"] == COMMENT
    trail = api(personas["auditor"]).get("/api/v1/audit").json()
    assert COMMENT in [
        entry["details"].get("comment") for entry in trail["results"] if entry["details"]
    ]


def test_the_audit_csv_export_writes_the_marker_in_place_of_the_override(hostile, personas):
    response = login(personas["auditor"]).get(reverse("audit-export"))

    text = b"".join(response.streaming_content).decode()
    assert RLO not in text
    details = [row[6] for row in csv.reader(io.StringIO(text))]
    assert json.dumps(COMMENT, ensure_ascii=False).replace(RLO, "⟨U+202E⟩") in "".join(details)


def test_a_csv_cell_is_marked_and_still_guarded_against_formulas():
    assert csv_cell(f"{RLO}=1+1") == "⟨U+202E⟩=1+1"  # starts with the marker: no formula
    assert csv_cell(f"=1+1{ZWSP}") == "'=1+1⟨U+200B⟩"
    assert csv_cell("\t=1") == "'\t=1"
    assert csv_cell("plain") == "plain"


def test_the_message_export_marks_csv_cells_and_keeps_json_lines_as_stored(index, personas):
    index.row("m-rlo", reason=f"card {RLO}denied", sender=f"shop{ZWSP}@example.test")
    client = api(personas["viewer"])
    url = "/api/v1/index/messages/export"

    rows = list(
        csv.DictReader(
            io.StringIO(b"".join(client.get(url, {"format": "csv"}).streaming_content).decode())
        )
    )
    lines = b"".join(client.get(url, {"format": "jsonl"}).streaming_content).decode()
    records = [json.loads(line) for line in lines.splitlines()]

    row = next(r for r in rows if r["id"] == "m-rlo")
    assert (row["reason"], row["sender"]) == ("card ⟨U+202E⟩denied", "shop⟨U+200B⟩@example.test")
    record = next(r for r in records if r["id"] == "m-rlo")
    assert (record["reason"], record["sender"]) == (f"card {RLO}denied", f"shop{ZWSP}@example.test")
