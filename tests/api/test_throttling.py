"""The API's rates (console.throttles): per token, per user on a session, per address for
anonymous calls; a call over the rate is a 429 with Retry-After."""

import subprocess
import sys
from pathlib import Path

import pytest
from django.core.cache import cache
from django.test import Client
from rest_framework.test import APIClient

from console.accounts.tokens.services import token_create

ROOT = Path(__file__).resolve().parent.parent.parent
URL = "/api/v1/queues"
RATE = 3


@pytest.fixture(autouse=True)
def low_rates(settings):
    """RATE calls a minute. DRF reloads its settings when REST_FRAMEWORK changes, and the
    throttles read their rates from them at each call."""
    cache.clear()
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"caller": f"{RATE}/min", "anonymous": f"{RATE}/min"},
    }
    yield
    cache.clear()


# What a service account (the application role) may call: a token acts only for one (R19).
TOKEN_URL = "/api/v1/poison-list"


def _token_client(user, name):
    _, token = token_create(actor="command:test", user=user, name=name)
    return APIClient(headers={"Authorization": f"Token {token}"})


def _calls(client, n, url=URL):
    return [client.get(url) for _ in range(n)]


def test_a_token_over_its_rate_gets_429_with_retry_after(personas):
    client = _token_client(personas["application"], "script")

    answers = _calls(client, RATE + 1, TOKEN_URL)

    assert [a.status_code for a in answers] == [200] * RATE + [429]
    assert 0 < int(answers[-1]["Retry-After"]) <= 60
    assert "throttled" in answers[-1].json()["detail"]


def test_another_token_of_the_same_user_has_a_rate_of_its_own(personas):
    first = _token_client(personas["application"], "first script")
    second = _token_client(personas["application"], "second script")
    _calls(first, RATE + 1, TOKEN_URL)

    assert [a.status_code for a in _calls(second, RATE, TOKEN_URL)] == [200] * RATE
    assert first.get(TOKEN_URL).status_code == 429


def test_a_session_is_counted_by_user(personas):
    viewer, operator = Client(), Client()
    viewer.force_login(personas["viewer"])
    operator.force_login(personas["operator"])
    again = Client()
    again.force_login(personas["viewer"])
    _calls(viewer, RATE)

    assert again.get(URL).status_code == 429
    assert operator.get(URL).status_code == 200


def test_a_call_refused_for_credentials_does_not_count(personas):
    anonymous = APIClient()

    assert {a.status_code for a in _calls(anonymous, RATE + 2)} == {401}


def _rates_with(tmp_path, **environ):
    code = (
        "from django.conf import settings\nprint(settings.REST_FRAMEWORK['DEFAULT_THROTTLE_RATES'])"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={"DJANGO_SETTINGS_MODULE": "console.settings", "VAR_DIR": str(tmp_path), **environ},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_rates_come_from_the_environment(tmp_path):
    ok = _rates_with(tmp_path, API_THROTTLE_RATE="100/hour", API_ANON_THROTTLE_RATE="5/s")
    bad = _rates_with(tmp_path, API_THROTTLE_RATE="lots")

    assert "{'caller': '100/hour', 'anonymous': '5/s'}" in ok.stdout, ok.stderr
    assert "API_THROTTLE_RATE must be a rate such as 600/min, not 'lots'" in bad.stderr
