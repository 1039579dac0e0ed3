"""The message list as a file (console.browse.exports), from the page's links and the API: what
the list shows for a filter, in its order, CSV or JSON Lines, streamed; bodies base64 for those who
may read them; CSV cells guarded against formulas; every export in the audit trail."""

import base64
import csv
import io
import json
from datetime import timedelta

import pytest
from django.urls import reverse

from console.audit.models import AuditEntry
from console.audit.selectors import audit_verify
from console.browse import exports
from console.readmodels.models import MessageIndex
from tests.browse.conftest import T0, api, login
from tests.browse.listing_order import order_by_hand, pages_walked, rows_with_ties

PAGE = "/messages/export"
API = "/api/v1/index/messages/export"


def _content(response):
    assert response.streaming, "the file is streamed"
    return b"".join(response.streaming_content).decode("utf-8")


def _csv(response):
    return list(csv.DictReader(io.StringIO(_content(response))))


def _jsonl(response):
    return [json.loads(line) for line in _content(response).splitlines()]


def _by_hand(filters, sort):
    """The same order worked out here, from the rows the filters match."""
    return order_by_hand([r for r in MessageIndex.objects.all() if _matches(r, filters)], sort)


def _matches(row, filters):
    since = filters.get("since")
    return (
        row.queue == filters.get("queue", row.queue)
        and row.state == filters.get("state", row.state)
        and (since is None or (row.last_failure_at is not None and row.last_failure_at >= since))
    )


def _exports():
    return list(
        AuditEntry.objects.filter(action="messages.exported")
        .order_by("seq")
        .values_list("actor", "details")
    )


@pytest.fixture
def many(index, monkeypatch):
    """40 rows over three queues, with ties in the failure time and some that never failed; the
    export reads 7 rows a query, so a file spans many of them."""
    monkeypatch.setattr(exports, "PAGE_ROWS", 7)
    rows_with_ties(
        index,
        40,
        never_failed_every=9,
        enqueued_hours=5,
        attempts=6,
        states=("WAIT", "NDLV", "NDLV", "NDLV"),
    )


@pytest.mark.parametrize("file_format", ["csv", "jsonl"])
@pytest.mark.parametrize(
    ("filters", "sort"),
    [
        ({}, "-last_failure"),
        ({"queue": "payments"}, "-last_failure"),
        ({"state": "WAIT"}, "last_failure"),
        ({"queue": "orders", "state": "NDLV"}, "-delivery_count"),
        ({}, "enqueued"),
        ({"since": T0 + timedelta(minutes=2)}, "-queue"),
    ],
)
def test_a_file_holds_what_the_list_shows_for_the_filter_in_its_order(
    many, personas, file_format, filters, sort
):
    params = {
        "format": file_format,
        "sort": sort,
        **{k: v.isoformat() if hasattr(v, "isoformat") else v for k, v in filters.items()},
    }
    response = login(personas["viewer"]).get(PAGE, params)

    assert response.status_code == 200
    rows = _csv(response) if file_format == "csv" else _jsonl(response)
    expected, _ = pages_walked(filters, sort, 3)
    assert [row["id"] for row in rows] == expected == _by_hand(filters, sort)
    assert 0 < len(expected) <= 40


def test_a_file_filtered_by_queue_holds_only_that_queues_messages(many, personas):
    rows = _jsonl(api(personas["viewer"]).get(API, {"format": "jsonl", "queue": "shipping"}))

    assert sorted(row["id"] for row in rows) == [f"m-{i:02d}" for i in range(2, 40, 3)]
    assert {row["queue"] for row in rows} == {"shipping"}


def test_a_json_line_describes_a_message_as_the_index_api_does(seeded, personas):
    listed = api(personas["viewer"]).get("/api/v1/index/messages").json()["results"]

    exported = _jsonl(api(personas["viewer"]).get(API, {"format": "jsonl"}))

    assert exported == listed


def test_a_csv_row_has_the_index_apis_fields_as_text(seeded, personas):
    listed = api(personas["viewer"]).get("/api/v1/index/messages").json()["results"]

    rows = _csv(login(personas["viewer"]).get(PAGE, {"format": "csv"}))

    assert list(rows[0]) == list(listed[0])
    assert rows[0]["id"] == "order-1"
    assert rows[0]["candidate"] == "false"
    assert rows[0]["next_attempt_at"] == ""
    assert rows[0]["last_failure_at"] == listed[0]["last_failure_at"] == "2026-03-01T12:00:00Z"
    assert rows[0]["delivery_count"] == "5"


@pytest.mark.parametrize("via", ["page", "api"])
def test_attacker_text_cannot_become_a_formula_in_a_csv_cell(index, personas, via):
    index.row(
        "=1+1",
        reason='=HYPERLINK("http://evil.test","click")',
        sender="+cmd|'/C calc'!A0",
        exception_type="@SUM(A1)",
        conversation_id="-2+3",
        queue="\tq",
    )
    client = login(personas["viewer"]) if via == "page" else api(personas["viewer"])

    rows = _csv(client.get(PAGE if via == "page" else API, {"format": "csv"}))

    assert rows == [
        {
            **rows[0],
            "id": "'=1+1",
            "reason": '\'=HYPERLINK("http://evil.test","click")',
            "sender": "'+cmd|'/C calc'!A0",
            "exception_type": "'@SUM(A1)",
            "conversation_id": "'-2+3",
            "queue": "'\tq",
        }
    ]


def test_json_lines_keep_attacker_text_as_it_is(index, personas):
    index.row("=1+1", reason='=HYPERLINK("x")\n{"id": "forged"}', sender="+cmd")

    rows = _jsonl(api(personas["viewer"]).get(API, {"format": "jsonl"}))

    assert [(r["id"], r["reason"], r["sender"]) for r in rows] == [
        ("=1+1", '=HYPERLINK("x")\n{"id": "forged"}', "+cmd")
    ]


# Bytes no text encoding survives: NUL, invalid UTF-8, and a first byte whose base64 starts
# with "+" (a formula character, so the CSV cell is guarded).
BINARY = b"\xf8\x00\xff\xfe binary \x80\x81"
TEXT = '{"order": 2, "note": "=cmd"}'


@pytest.fixture
def with_bodies(index):
    index.message(
        "bin-1", BINARY, ingest={"content_type": "application/octet-stream"}, body_size=12
    )
    index.message("text-1", TEXT, last_failure_at=T0 - timedelta(minutes=1))
    index.row(
        "purged-1", body_path="messages/20260101/gone", last_failure_at=T0 - timedelta(hours=1)
    )
    return {"bin-1": BINARY, "text-1": TEXT.encode()}


@pytest.mark.parametrize("via", ["page", "api"])
def test_bodies_in_json_lines_are_base64_and_round_trip(with_bodies, personas, via):
    client = login(personas["operator"]) if via == "page" else api(personas["operator"])

    rows = _jsonl(client.get(PAGE if via == "page" else API, {"format": "jsonl", "bodies": "1"}))

    assert [row["id"] for row in rows] == ["bin-1", "text-1", "purged-1"]
    bodies = {row["id"]: row["body_base64"] for row in rows}
    assert base64.b64decode(bodies["bin-1"], validate=True) == BINARY
    assert base64.b64decode(bodies["text-1"], validate=True) == TEXT.encode()
    assert bodies["purged-1"] is None  # the lake no longer has it: said, not invented


def test_bodies_in_csv_are_base64_behind_the_formula_guard(with_bodies, personas):
    rows = _csv(login(personas["operator"]).get(PAGE, {"format": "csv", "bodies": "1"}))

    cells = {row["id"]: row["body_base64"] for row in rows}
    assert cells["bin-1"].startswith("'+")  # the guard's quote, then the base64
    assert base64.b64decode(cells["bin-1"].removeprefix("'"), validate=True) == BINARY
    assert base64.b64decode(cells["text-1"], validate=True) == TEXT.encode()
    assert cells["purged-1"] == ""


def test_bodies_are_read_in_batches_whatever_their_order(with_bodies, personas, monkeypatch):
    monkeypatch.setattr(exports, "BODY_BATCH_ROWS", 1)
    monkeypatch.setattr(exports, "PAGE_ROWS", 2)

    rows = _jsonl(api(personas["operator"]).get(API, {"format": "jsonl", "bodies": "1"}))

    assert {r["id"]: r["body_base64"] and base64.b64decode(r["body_base64"]) for r in rows} == {
        **with_bodies,
        "purged-1": None,
    }


def test_a_file_without_bodies_has_no_body_column(with_bodies, personas):
    csv_rows = _csv(login(personas["operator"]).get(PAGE, {"format": "csv"}))
    json_rows = _jsonl(api(personas["operator"]).get(API, {"format": "jsonl", "bodies": "0"}))

    assert "body_base64" not in csv_rows[0]
    assert all("body_base64" not in row for row in json_rows)


@pytest.mark.parametrize("role", ["viewer", "admin"])
def test_someone_who_may_not_read_bodies_is_refused_them_on_the_page(with_bodies, personas, role):
    response = login(personas[role]).get(PAGE, {"format": "csv", "bodies": "1"})

    assert response.status_code == 403
    assert b"exporting bodies needs the permission to read them" in response.content
    assert _exports() == []


@pytest.mark.parametrize("role", ["viewer", "admin"])
def test_someone_who_may_not_read_bodies_is_refused_them_by_the_api(with_bodies, personas, role):
    response = api(personas[role]).get(API, {"format": "jsonl", "bodies": "1"})

    assert response.status_code == 403
    assert "exporting bodies needs the permission to read them" in response.json()["detail"]
    assert _exports() == []


def test_someone_who_may_not_see_messages_gets_no_file(seeded, personas):
    for role in ("outsider", "auditor"):
        assert login(personas[role]).get(PAGE, {"format": "csv"}).status_code == 403
        assert api(personas[role]).get(API, {"format": "csv"}).status_code == 403
    assert api().get(API, {"format": "csv"}).status_code == 401
    assert login().get(PAGE, {"format": "csv"}).status_code == 302  # to the login page
    assert _exports() == []


@pytest.mark.parametrize(
    ("via", "file_format", "bodies"),
    [
        ("page", "csv", False),
        ("api", "jsonl", True),
        ("page", "jsonl", True),
        ("api", "csv", False),
    ],
)
def test_an_export_is_recorded_before_the_file_streams(
    with_bodies, personas, via, file_format, bodies
):
    params = {"format": file_format, "queue": "orders", "since": "2026-02-01T00:00:00Z"}
    params |= {"sort": "enqueued", "bodies": "1"} if bodies else {}
    client = login(personas["operator"]) if via == "page" else api(personas["operator"])

    response = client.get(PAGE if via == "page" else API, params)

    assert response.status_code == 200
    recorded = {
        "filters": {"queue": "orders", "since": "2026-02-01T00:00:00+00:00"},
        "sort": "enqueued" if bodies else "-last_failure",
        "format": file_format,
        "bodies": bodies,
        "via": via,
    }
    assert _exports() == [("operator", recorded)]  # before a byte of the file was read
    _content(response)
    assert audit_verify().ok


@pytest.mark.parametrize(
    ("file_format", "content_type"),
    [("csv", "text/csv; charset=utf-8"), ("jsonl", "application/x-ndjson")],
)
def test_the_file_is_a_named_attachment_of_its_content_type(
    seeded, personas, file_format, content_type
):
    for response in (
        login(personas["viewer"]).get(PAGE, {"format": file_format}),
        api(personas["viewer"]).get(API, {"format": file_format}, HTTP_ACCEPT="text/csv"),
    ):
        assert response.status_code == 200
        assert response["Content-Type"] == content_type
        disposition = response["Content-Disposition"]
        assert disposition.startswith('attachment; filename="messages-')
        assert disposition.endswith(f'Z.{file_format}"')
        assert response["Cache-Control"] == "no-store"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "format"),
        ({"format": "xlsx"}, "format"),
        ({"format": "json"}, "format"),
        ({"format": "csv", "bodies": "yes"}, "bodies"),
        ({"format": "csv", "since": "yesterday"}, "since"),
        ({"format": "csv", "state": "GONE"}, "state"),
        ({"format": "csv", "sort": "body"}, "sort"),
        ({"format": "csv", "queue": "orders\x00"}, "queue"),
        (
            {"format": "csv", "since": "2026-03-02T00:00:00Z", "until": "2026-03-01T00:00:00Z"},
            "__all__",
        ),
    ],
)
def test_bad_input_is_a_clear_400_and_records_nothing(seeded, personas, params, field):
    page = login(personas["operator"]).get(PAGE, params)
    answer = api(personas["operator"]).get(API, params)

    assert page.status_code == 400
    assert page["Content-Type"] == "text/plain; charset=utf-8"
    assert page.content.decode().startswith("invalid export: ")
    if field != "__all__":
        assert f"{field}: " in page.content.decode()
    assert answer.status_code == 400
    assert list(answer.json()["errors"]) == [field]
    assert _exports() == []


def test_the_list_links_to_its_files_with_its_filter_and_sort(seeded, personas):
    response = login(personas["viewer"]).get(
        reverse("message-list"), {"queue": "orders", "sort": "enqueued", "size": 25}
    )

    html = response.content.decode()
    assert (
        'id="export-csv" href="/messages/export?format=csv&amp;queue=orders&amp;sort=enqueued"'
        in html
    )
    assert 'href="/messages/export?format=jsonl&amp;queue=orders&amp;sort=enqueued"' in html
    assert "bodies=1" not in html  # a viewer may not read bodies


def test_the_list_offers_the_bodies_to_those_who_may_read_them(seeded, personas):
    html = login(personas["operator"]).get(reverse("message-list")).content.decode()

    assert (
        'id="export-csv-bodies" href="/messages/export?format=csv&amp;bodies=1&amp;'
        'sort=-last_failure"' in html
    )
    assert 'id="export-jsonl-bodies"' in html


def test_the_list_offers_no_file_when_nothing_matches(seeded, personas):
    html = login(personas["operator"]).get(reverse("message-list"), {"queue": "nope"}).content

    assert b'id="export"' not in html


def test_the_files_follow_the_links_they_are_given(seeded, personas):
    html = login(personas["operator"]).get(reverse("message-list"), {"queue": "orders"})
    link = html.content.decode().split('id="export-jsonl-bodies" href="')[1].split('"')[0]

    rows = _jsonl(login(personas["operator"]).get(link.replace("&amp;", "&")))

    assert [row["id"] for row in rows] == ["order-1"]
    assert base64.b64decode(rows[0]["body_base64"]) == b'{"order": 1, "items": [7]}'


def test_the_schema_documents_the_export(db):
    from tests.api.conftest import openapi_document

    operation = openapi_document()["paths"]["/api/v1/index/messages/export"]["get"]

    assert set(operation["responses"]["200"]["content"]) == {"text/csv", "application/x-ndjson"}
    parameters = {p["name"]: p for p in operation["parameters"]}
    assert parameters["format"]["required"] is True
    assert parameters["format"]["schema"]["enum"] == ["csv", "jsonl"]
    assert parameters["bodies"]["schema"]["enum"] == ["0", "1"]
    assert {"queue", "state", "since", "until", "sort", "q"} <= set(parameters)
    assert not {"after", "before", "page_size"} & set(parameters)


def test_the_owner_filter_and_column_are_the_lists(many, personas):
    from console.notes.models import MESSAGE
    from console.notes.services import investigation_take

    investigation_take(actor=personas["operator"], kind=MESSAGE, target_id="m-07")
    investigation_take(actor=personas["approver"], kind=MESSAGE, target_id="m-08")

    mine = _jsonl(api(personas["operator"]).get(API, {"format": "jsonl", "owner": "mine"}))
    everything = _csv(login(personas["viewer"]).get(PAGE, {"format": "csv"}))

    assert [(row["id"], row["owner"]) for row in mine] == [("m-07", "operator")]
    owners = {row["id"]: row["owner"] for row in everything if row["owner"]}
    assert owners == {"m-07": "operator", "m-08": "approver"}
    assert _exports()[0][1]["filters"] == {"owner": "operator"}  # whose "mine" meant
