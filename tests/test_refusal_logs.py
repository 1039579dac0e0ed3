"""Quiet, useful logs: a refused request (401, 403, 404, 405, 429) is one line at INFO saying
who and what, with no traceback and no second copy (console.refusals); libraries say nothing
at start-up (django-axes' BEGIN line) in the output of a manage.py command."""

import logging
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.cache import cache
from django.test import Client
from rest_framework.test import APIClient

ROOT = Path(__file__).resolve().parent.parent


def _signed_in(user, caplog, **client):
    """A test client (`client`: its options) signed in as `user`; the log captured (INFO and up)
    from then on."""
    caplog.set_level(logging.INFO)
    signed_in = Client(**client)
    signed_in.force_login(user)
    caplog.clear()
    return signed_in


def _lines(caplog):
    """What the request logged, as the console shows it, and from which loggers."""
    records = [r for r in caplog.records if r.name.startswith(("django", "console.refusals"))]
    return records, [r.getMessage() for r in records]


@pytest.fixture
def api(personas):
    client = APIClient(REMOTE_ADDR="192.0.2.10")
    client.force_authenticate(personas["viewer"])
    return client


def test_a_permission_refused_by_the_api_is_one_line_at_info_saying_who_and_what(api, caplog):
    caplog.set_level(logging.INFO)

    api.post("/api/v1/requests", {}, format="json")

    records, lines = _lines(caplog)
    assert lines == [
        "refused 403 POST /api/v1/requests (viewer from 192.0.2.10): this needs permission for "
        "requesting actions (the approver or operator role)"
    ]
    assert records[0].levelno == logging.INFO
    assert records[0].name == "console.refusals"
    assert records[0].exc_info is None


def test_a_screen_refused_is_one_line_without_a_traceback(personas, caplog):
    client = _signed_in(personas["viewer"], caplog, REMOTE_ADDR="192.0.2.11")

    client.get("/lockouts/")

    records, lines = _lines(caplog)
    assert lines == [
        "refused 403 GET /lockouts/ (viewer from 192.0.2.11): this needs permission for "
        "managing users (the admin role)"
    ]
    assert records[0].exc_info is None
    assert "Traceback" not in caplog.text


def test_an_anonymous_call_and_an_unknown_path_say_anonymous(db, caplog):
    caplog.set_level(logging.INFO)
    client = Client(REMOTE_ADDR="192.0.2.12")

    client.get("/api/v1/queues")
    client.get("/api/v1/no-such-thing")
    client.get("/no-such-page/")

    _, lines = _lines(caplog)
    assert len(lines) == 3
    assert lines[0].startswith(
        "refused 401 GET /api/v1/queues (anonymous from 192.0.2.12): no credentials: "
    )
    assert lines[1] == (
        "refused 404 GET /api/v1/no-such-thing (anonymous from 192.0.2.12): no such path: "
        "/api/v1/no-such-thing (the API's paths are at /api/docs/)"
    )
    assert lines[2] == "refused 404 GET /no-such-page/ (anonymous from 192.0.2.12): Not Found"


def test_a_wrong_method_and_too_many_calls_are_one_line_each(api, caplog, settings):
    cache.clear()
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        # The wrong method counts: DRF checks the rate before the method.
        "DEFAULT_THROTTLE_RATES": {"caller": "2/min", "anonymous": "2/min"},
    }
    caplog.set_level(logging.INFO)

    api.delete("/api/v1/queues")
    api.get("/api/v1/queues")
    api.get("/api/v1/queues")

    _, lines = _lines(caplog)
    assert lines[0] == (
        "refused 405 DELETE /api/v1/queues (viewer from 192.0.2.10): DELETE is not allowed on "
        "/api/v1/queues; it takes GET, HEAD, OPTIONS"
    )
    assert lines[1].startswith(
        "refused 429 GET /api/v1/queues (viewer from 192.0.2.10): throttled: this token or user "
        "made more than 2 calls a min; try again in "
    )
    assert len(lines) == 2
    cache.clear()


def test_a_form_without_its_csrf_token_is_one_line_with_djangos_reason(personas, caplog):
    client = _signed_in(
        personas["admin"], caplog, enforce_csrf_checks=True, REMOTE_ADDR="192.0.2.13"
    )

    client.post("/queues/orders/enable")

    _, lines = _lines(caplog)
    assert lines == [
        "refused 403 POST /queues/orders/enable (admin from 192.0.2.13): "
        "Forbidden (CSRF cookie not set.)"
    ]


def test_a_server_error_is_still_logged_with_its_traceback(personas, caplog, monkeypatch):
    from console.browse import apis

    def broken(*args, **kwargs):
        raise ValueError("boom")

    monkeypatch.setattr(apis.selectors, "group_list", broken)
    client = APIClient(raise_request_exception=False)
    client.force_authenticate(personas["viewer"])

    client.get("/api/v1/groups")

    errors = [r for r in caplog.records if r.name == "django.request"]
    assert [r.levelno for r in errors] == [logging.ERROR]
    assert errors[0].exc_info is not None


def _run(code, tmp_path, **environ):
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={
            "PATH": "/usr/bin:/bin",
            "DJANGO_SETTINGS_MODULE": "console.settings",
            "VAR_DIR": str(tmp_path),
            **environ,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_manage_py_command_prints_no_library_start_up_line(tmp_path):
    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "VAR_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout == "System check identified no issues (0 silenced).\n"


def test_under_debug_a_refusal_is_printed_once(tmp_path):
    code = (
        "import django; django.setup()\n"
        "from django.test import Client\n"
        "Client(HTTP_HOST='localhost').get('/api/v1/no-such-thing')\n"
    )

    done = _run(code, tmp_path, DEBUG="1")

    printed = [line for line in done.stderr.splitlines() if "/api/v1/no-such-thing" in line]
    assert len(printed) == 1, done.stderr
    assert "INFO console.refusals: refused 404 GET /api/v1/no-such-thing" in printed[0]
