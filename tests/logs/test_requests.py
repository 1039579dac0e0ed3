"""LOG_FORMAT=json: every line of an HTTP request carries its id, which the answer's X-Request-ID
gives back; a sane id the client sent is kept, anything else replaced. The plain format is as it
was, and a format the settings do not know stops the start."""

import json
import logging
import re

from django.test import Client
from rest_framework.test import APIClient

from tests.test_refusal_logs import _run as _start

# Answers 404 without a database: the refusal's line is the request's one line.
NOWHERE = "/api/v1/no-such-thing"
REQUEST = (
    "import django; django.setup()\n"
    "from django.test import Client\n"
    f"answer = Client(HTTP_HOST='localhost').get({NOWHERE!r})\n"
    "print(answer['X-Request-ID'])\n"
)


def _of(lines, request_id):
    return [line for line in lines if line.get("request_id") == request_id]


def test_with_log_format_json_a_request_logs_json_lines_carrying_its_id(tmp_path):
    done = _start(REQUEST, tmp_path, LOG_FORMAT="json")

    assert done.returncode == 0, done.stderr
    request_id = done.stdout.strip()
    assert re.fullmatch(r"[0-9a-f]{32}", request_id)
    lines = [json.loads(line) for line in done.stderr.splitlines()]
    [line] = _of(lines, request_id)
    assert line["message"].startswith(f"refused 404 GET {NOWHERE} (anonymous from 127.0.0.1)")
    assert (line["level"], line["logger"], line["process"]) == (
        "INFO",
        "console.refusals",
        "python",
    )
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", line["time"])
    assert line["host"] and isinstance(line["pid"], int)
    # Only the fields that are set: no run, no queue, no message on a request's line.
    assert "run_id" not in line and "message_id" not in line and "exc_info" not in line


def test_by_default_the_lines_are_plain_as_before(tmp_path):
    done = _start(REQUEST, tmp_path)

    assert done.returncode == 0, done.stderr
    [line] = [line for line in done.stderr.splitlines() if NOWHERE in line]
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO console\.refusals: refused 404 GET "
        rf"{NOWHERE} \(anonymous from 127\.0\.0\.1\): no such path: .*",
        line,
    )
    assert done.stdout.strip() not in line


def test_an_unknown_log_format_stops_the_start(tmp_path):
    done = _start(REQUEST, tmp_path, LOG_FORMAT="xml")

    assert done.returncode != 0
    assert "django.core.exceptions.ImproperlyConfigured" in done.stderr
    assert "LOG_FORMAT must be one of plain, json, not 'xml'" in done.stderr


def test_a_sane_request_id_the_client_sent_is_kept(db, json_lines):
    answer = Client().get(NOWHERE, HTTP_X_REQUEST_ID="lb-7f3a.2_x")

    assert answer["X-Request-ID"] == "lb-7f3a.2_x"
    [line] = _of(json_lines(), "lb-7f3a.2_x")
    assert line["logger"] == "console.refusals"


def test_a_request_id_too_long_or_with_odd_characters_is_replaced(db, json_lines):
    sent = ["a" * 201, "two words", "x\u00e9", "a;b", "id\nINFO forged", ""]

    given = [Client().get(NOWHERE, HTTP_X_REQUEST_ID=s)["X-Request-ID"] for s in sent]

    assert all(re.fullmatch(r"[0-9a-f]{32}", g) for g in given), given
    assert len(set(given)) == len(sent)
    assert [len(_of(json_lines(), g)) for g in given] == [1] * len(sent)
    # 200 characters is still sane.
    assert Client().get(NOWHERE, HTTP_X_REQUEST_ID="b" * 200)["X-Request-ID"] == "b" * 200


def test_each_request_has_an_id_of_its_own_and_none_is_left_behind(db, json_lines):
    first = Client().get(NOWHERE)["X-Request-ID"]
    second = Client().get(NOWHERE)["X-Request-ID"]
    logging.getLogger("tests.logs").info("after the requests")

    assert first != second
    assert [line.get("request_id") for line in json_lines()] == [first, second, None]


def test_a_request_about_one_message_logs_its_id(personas, json_lines):
    api = APIClient()
    api.force_authenticate(personas["viewer"])

    answer = api.get("/api/v1/messages/orders-0042", HTTP_X_REQUEST_ID="r-1")

    assert answer.status_code == 404
    [line] = _of(json_lines(), "r-1")
    assert line["message_id"] == "orders-0042"
    assert line["message"].startswith("refused 404 GET /api/v1/messages/orders-0042")
