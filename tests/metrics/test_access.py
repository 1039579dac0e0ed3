"""/metrics answers the loopback and the addresses of METRICS_ALLOWED_IPS, or a bearer
METRICS_TOKEN from anywhere, with no sign-in; anyone else gets 403 and one line saying why."""

import ipaddress

import pytest
from django.test import Client
from prometheus_client import CONTENT_TYPE_LATEST

pytestmark = pytest.mark.django_db


def _get(remote, **headers):
    return Client().get("/metrics", REMOTE_ADDR=remote, **headers)


@pytest.mark.parametrize("remote", ["127.0.0.1", "::1", "::ffff:127.0.0.1"])
def test_it_answers_the_loopback_without_a_sign_in(remote):
    answer = _get(remote)

    assert answer.status_code == 200
    assert answer["Content-Type"] == CONTENT_TYPE_LATEST
    assert b"# HELP antidote_quarantined " in answer.content


def test_it_refuses_another_address_saying_why():
    answer = _get("203.0.113.7")

    assert answer.status_code == 403
    assert answer.content.decode() == (
        "metrics: 203.0.113.7 is not in METRICS_ALLOWED_IPS and no bearer token was given\n"
    )


def test_it_answers_the_networks_allowed(settings):
    settings.METRICS_ALLOWED_IPS = [ipaddress.ip_network("10.1.0.0/16")]

    assert _get("10.1.2.3").status_code == 200
    assert _get("10.2.0.1").status_code == 403
    assert _get("127.0.0.1").status_code == 403


def test_it_answers_the_bearer_token_from_anywhere(settings):
    settings.METRICS_TOKEN = "s3cret-token-for-prometheus"

    answer = _get("203.0.113.7", HTTP_AUTHORIZATION="Bearer s3cret-token-for-prometheus")

    assert answer.status_code == 200


def test_it_refuses_a_wrong_token_even_from_the_loopback(settings):
    settings.METRICS_TOKEN = "s3cret-token-for-prometheus"

    answer = _get("127.0.0.1", HTTP_AUTHORIZATION="Bearer s3cret-token-for-prometheu")

    assert answer.status_code == 403
    assert answer.content.decode() == "metrics: wrong bearer token\n"


def test_no_token_works_while_metrics_token_is_unset(settings):
    settings.METRICS_TOKEN = ""

    answer = _get("203.0.113.7", HTTP_AUTHORIZATION="Bearer ")

    assert answer.status_code == 403


def test_it_takes_no_post():
    assert Client().post("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 405
