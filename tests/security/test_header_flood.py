"""Issue 43, point 7: a producer floods a message with headers.

200,000 headers were accepted, and the message's page then cost seconds of CPU and megabytes.
Now ingest refuses a message over MAX_HEADER_COUNT headers, MAX_HEADER_NAME_BYTES a name,
MAX_HEADER_VALUE_BYTES a value or MAX_HEADERS_TOTAL_BYTES in all, on every route in (the API, the
inbox, `manage.py ingest`, a broker source, which parks it), with an error that names the limit
and its setting. A message stored before the limits existed (written here with the limits raised,
as they were: none) still shows a page of bounded size: at most HEADERS_SHOWN headers, long values
cut, and what is left out said, with the whole headers a download or a page of the API away.
"""

import json

import pika
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from console.accounts.tokens.services import token_create
from console.browse.headers import HEADER_VALUE_SHOWN, HEADERS_PAGE_MAX, HEADERS_SHOWN
from console.ingest.models import MessageKey
from console.ingest.services import inbox_scan
from tests.browse.conftest import Index, api, login
from tests.ingest.conftest import settle
from tests.ingest.test_rabbitmq_consumer import (  # noqa: F401 - `broker` is a fixture
    broker,
    consuming,
    drained_to,
    source_load,
    source_now,
)
from tests.processes.conftest import wait_for
from workers.brokers.rabbitmq.source import REFUSED_REASON_HEADER, REFUSED_SUFFIX

URL = "/api/v1/messages"
FLOOD = 200_000
COUNT_REFUSED = "over the limit of 1,000 headers (MAX_HEADER_COUNT)"


@pytest.fixture
def producer(personas, lake_root):
    """An application's producer: its service account's token, sending into queue `orders`."""
    Index().queue("orders")
    _, token = token_create(actor="command:test", user=personas["application"], name="producer")
    return APIClient(headers={"Authorization": f"Token {token}"})


def _send(client, *records):
    return client.post(URL, data=json.dumps(list(records)), content_type="application/json")


def _flooded(message_id, count):
    headers = {f"x-flood-{i:06d}": f"value {i}" for i in range(count)}
    return {"id": message_id, "queue": "orders", "body": "{}", "headers": headers}


def _unlimited(settings):
    """The limits as they were before issue 43: none (what an old stored message went through)."""
    settings.MAX_HEADER_COUNT = 10**9
    settings.MAX_HEADER_NAME_BYTES = 10**9
    settings.MAX_HEADER_VALUE_BYTES = 10**9
    settings.MAX_HEADERS_TOTAL_BYTES = 10**12


# --- At ingest: refused, by name, on every route --------------------------------------------------


def test_a_producer_flooding_a_message_with_headers_through_the_api_is_refused_by_name(producer):
    response = _send(producer, _flooded("flood-1", FLOOD))

    assert response.status_code == 400, response.content[:300]
    assert response.json()["errors"] == [
        {"index": 0, "id": "flood-1", "error": f"200,000 headers, {COUNT_REFUSED}"}
    ]
    assert not MessageKey.objects.filter(message_id="flood-1").exists()


def test_each_header_limit_refuses_its_message_naming_the_setting_and_the_rest_go_in(producer):
    big = "é" * 131_073  # 262,146 bytes in UTF-8: a limit counts bytes, not characters
    response = _send(
        producer,
        {"id": "ok-1", "queue": "orders", "body": "{}", "headers": {"trace": "t-1"}},
        _flooded("count-1", 1001),
        {"id": "name-1", "queue": "orders", "body": "{}", "headers": {"n" * 1025: "v"}},
        {"id": "value-1", "queue": "orders", "body": "{}", "headers": {"x-big": big}},
        {
            "id": "total-1",
            "queue": "orders",
            "body": "{}",
            "headers": {f"x-{i}": "v" * 200_000 for i in range(3)},
        },
    )

    assert response.status_code == 200, response.content[:300]
    body = response.json()
    assert (body["accepted"], body["refused"]) == (1, 4)
    assert [(e["id"], e["error"]) for e in body["errors"]] == [
        ("count-1", f"1,001 headers, {COUNT_REFUSED}"),
        (
            "name-1",
            f"header name {'n' * 60!r}... is 1,025 bytes, over the limit of 1,024 bytes "
            "(MAX_HEADER_NAME_BYTES)",
        ),
        (
            "value-1",
            "header 'x-big' is 262,146 bytes, over the limit of 262,144 bytes "
            "(MAX_HEADER_VALUE_BYTES)",
        ),
        (
            "total-1",
            "headers are 600,009 bytes (names and values), over the limit of 524,288 bytes "
            "(MAX_HEADERS_TOTAL_BYTES)",
        ),
    ]
    assert list(MessageKey.objects.values_list("message_id", flat=True)) == ["ok-1"]


def test_a_message_at_every_limit_is_a_real_dead_letter_and_goes_in(producer):
    at_most = {"a" * 1024: "v" * 262_144}  # the longest name, the longest value
    at_most["b"] = "w" * (524_288 - 1024 - 262_144 - 1)  # and the most bytes in all
    response = _send(
        producer,
        {"id": "most-bytes", "queue": "orders", "body": "{}", "headers": at_most},
        _flooded("most-headers", 1000),
    )

    assert response.status_code == 201, response.content[:300]
    assert response.json()["accepted"] == 2


def test_an_inbox_file_and_the_ingest_command_refuse_the_flooded_line_and_take_the_rest(
    producer, settings, tmp_path
):
    lines = [{"id": "ok-1", "queue": "orders", "body": "x"}, _flooded("flood-2", 1001)]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    settings.INBOX_DIR = inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "drop.jsonl").write_text(text)
    settle(inbox / "drop.jsonl")

    [outcome] = inbox_scan()

    assert (outcome.result.accepted, outcome.result.refused) == (1, 1)
    errors = outcome.moved_to.with_name("drop.jsonl.errors.txt").read_text()
    assert errors == f"line 2 (id flood-2): 1,001 headers, {COUNT_REFUSED}\n"

    by_hand = tmp_path / "by-hand.jsonl"
    by_hand.write_text(text.replace('"flood-2"', '"flood-3"').replace('"ok-1"', '"ok-2"'))
    said = []
    with pytest.raises(CommandError, match="1 record"):
        call_command("ingest", str(by_hand), stdout=_Lines(said))
    assert f"  line 2 (id flood-3): 1,001 headers, {COUNT_REFUSED}" in said
    assert set(MessageKey.objects.values_list("message_id", flat=True)) == {"ok-1", "ok-2"}


class _Lines:
    def __init__(self, said):
        self.said = said

    def write(self, text):
        self.said.extend(text.splitlines())

    def flush(self):
        pass


@pytest.mark.services
def test_a_rabbitmq_dead_letter_flooded_with_headers_is_parked_with_the_reason(
    broker,  # noqa: F811 - the fixture imported above
    transactional_db,
    lake_root,
):
    dlq = broker.declare(broker.name("dlq"))
    flood = {f"x-flood-{i:04d}": i for i in range(1001)}
    broker.publish(dlq, b"{}", pika.BasicProperties(message_id="flood-4", headers=flood))
    broker.publish(dlq, b"{}", pika.BasicProperties(message_id="ok-4", headers={"tenant": "a"}))
    source = source_load(broker, dlq, batch_size=10)
    parking = broker.declare(dlq + REFUSED_SUFFIX)  # deleted at the end (the consumer makes it)

    with consuming(source):
        wait_for(lambda: source_now(source).refused == 1, timeout=60, what="the refusal")
        wait_for(drained_to(source, 1), timeout=60, what="the other message")

    assert list(MessageKey.objects.values_list("message_id", flat=True)) == ["ok-4"]
    assert broker.count(dlq) == 0
    ((properties, body),) = broker.get_all(parking)
    assert (properties.message_id, body, len(properties.headers)) == ("flood-4", b"{}", 1002)
    # Counted as they would be stored: the source's own records of the delivery included.
    reason = properties.headers[REFUSED_REASON_HEADER]
    assert reason.endswith(f"headers, {COUNT_REFUSED}"), reason


# --- What is stored already: a page of bounded size -----------------------------------------------


def _stored_before_the_limits(settings, message_id, headers):
    _unlimited(settings)
    index = Index()
    index.message(message_id, "{}", ingest={"headers": headers})
    settings.MAX_HEADER_COUNT = 1000  # back to the default: what is stored stays as it is


def _headers_table(html):
    table = html[html.index('id="message-headers"') :]
    return table[: table.index("</table>")]


def test_a_message_stored_with_200000_headers_before_the_limits_shows_a_bounded_page(
    personas, lake_root, settings
):
    headers = {"x-long": "L" * 1_000_000, **_flooded("-", FLOOD)["headers"]}
    _stored_before_the_limits(settings, "flood-old", headers)

    page = login(personas["viewer"]).get(reverse("message-detail", args=["flood-old"]))

    assert page.status_code == 200
    html = page.content.decode()
    table = _headers_table(html)
    assert table.count("<tr>") == 1 + HEADERS_SHOWN  # the head, and no more rows than that
    # Before: 11.5 MB of HTML. Now one header's value is at most HEADER_VALUE_SHOWN characters.
    assert len(page.content) < 64 * 1024
    assert "L" * HEADER_VALUE_SHOWN + "<" in table
    assert f"… and {1_000_000 - HEADER_VALUE_SHOWN} more bytes" in table
    left_out = FLOOD + 1 - HEADERS_SHOWN
    assert f"{left_out} more headers not shown, " in html
    assert reverse("message-headers", args=["flood-old"]) in html

    detail = api(personas["viewer"]).get("/api/v1/messages/flood-old")

    assert detail.status_code == 200
    assert len(detail.content) < 64 * 1024
    body = detail.json()
    assert len(body["headers"]) == HEADERS_SHOWN
    assert len(body["headers"]["x-long"]) == HEADER_VALUE_SHOWN
    shown = body["headers_shown"]
    assert (shown["count"], shown["shown"], shown["more"]) == (FLOOD + 1, HEADERS_SHOWN, left_out)
    assert (shown["cut"], shown["complete"]) == (["x-long"], False)


def test_the_headers_of_such_a_message_are_whole_a_page_of_the_api_at_a_time_or_a_download(
    personas, lake_root, settings
):
    headers = _flooded("-", 2500)["headers"]
    _stored_before_the_limits(settings, "many-old", headers)
    client = api(personas["viewer"])

    pages, offset = [], 0
    while offset is not None:
        response = client.get(
            f"/api/v1/messages/many-old/headers?offset={offset}&limit={HEADERS_PAGE_MAX}"
        )
        assert response.status_code == 200, response.content[:300]
        pages.append(response.json())
        offset = pages[-1]["next"]

    assert [len(p["headers"]) for p in pages] == [1000, 1000, 500]
    assert {p["count"] for p in pages} == {2500}
    assert [name for p in pages for name in p["headers"]] == list(headers)
    assert {k: v for p in pages for k, v in p["headers"].items()} == headers
    too_many = client.get(f"/api/v1/messages/many-old/headers?limit={HEADERS_PAGE_MAX + 1}")
    assert too_many.status_code == 400

    download = login(personas["viewer"]).get(reverse("message-headers", args=["many-old"]))

    assert download.status_code == 200
    assert download["Content-Disposition"].startswith(
        'attachment; filename="many-old.headers.json"'
    )
    assert download["X-Content-Type-Options"] == "nosniff"
    assert json.loads(download.content) == headers
