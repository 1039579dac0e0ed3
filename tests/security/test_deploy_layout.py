"""Attack: a stranger on the network, against the documented production layout (gunicorn on
127.0.0.1 behind a TLS proxy on the same host, deploy/systemd/antidote.env.example). As it was
documented, with TRUSTED_PROXY_COUNT at 0 and /metrics open to the loopback, every request came
from the proxy's loopback address: /metrics answered everyone, and failing logins on a
colleague's name locked the colleague out for everyone. The documented settings now close both;
`manage.py check --deploy` names each setting that would open them again."""

import ipaddress
import os
import secrets

import pytest
from axes.models import AccessAttempt
from django.test import Client
from django.urls import reverse

from console.accounts.checks import proxy_layout_check
from tests.console_process import ROOT, deploy_check

ENV_EXAMPLE = ROOT / "deploy" / "systemd" / "antidote.env.example"
PROXY = "127.0.0.1"  # where every request through the same-host proxy comes from
STRANGER = "192.0.2.66"  # the attacker, as the proxy writes its address in X-Forwarded-For
VICTIM = "198.51.100.7"


def documented():
    """The environment the documented layout sets, as a host would fill it in: the file's
    settings, each `change-me` placeholder a secret of its own."""
    env = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            name, _, value = line.partition("=")
            env[name] = secrets.token_urlsafe(48) if value.startswith("change-me") else value
    return env


def _check_deploy(tmp_path, **overrides):
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    env.update(documented())
    # HSTS preloading is each site's own commitment (Django's security.W021 asks for it): taken
    # here as tests/test_deploy_check.py takes it, so that whatever else is said is ours.
    env["SECURE_HSTS_PRELOAD"] = "true"
    # This machine's places for what the file puts under /srv/antidote.
    env.update(
        DJANGO_SETTINGS_MODULE="console.settings",
        VAR_DIR=str(tmp_path / "var"),
        STATIC_ROOT=str(tmp_path / "static"),
        LAKE_URI=str(tmp_path / "lake"),
        DATABASE_URL=f"sqlite:///{tmp_path / 'console.sqlite3'}",
    )
    for name, value in overrides.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    done = deploy_check(env)
    return done.returncode, done.stdout + done.stderr


def test_the_documented_layout_passes_the_deployment_checks(tmp_path):
    code, said = _check_deploy(tmp_path)

    assert code == 0, said
    assert "System check identified no issues" in said


LOOPBACK = "127.0.0.1,::1"


@pytest.mark.parametrize(
    ("overrides", "ids", "named"),
    [
        ({"TRUSTED_PROXY_COUNT": "0"}, ("proxy.W001",), "TRUSTED_PROXY_COUNT is 0"),
        (
            {"TRUSTED_PROXY_COUNT": "0", "METRICS_ALLOWED_IPS": LOOPBACK},
            ("proxy.W001", "metrics.W001"),
            "METRICS_ALLOWED_IPS holds the loopback",
        ),
        (
            {"METRICS_ALLOWED_IPS": LOOPBACK, "METRICS_TOKEN": None},
            ("metrics.W002",),
            "METRICS_TOKEN is not set",
        ),
    ],
    ids=["proxy-count-0", "metrics-public", "metrics-loopback-without-token"],
)
def test_the_checks_warn_naming_the_setting_that_opens_the_layout(tmp_path, overrides, ids, named):
    code, said = _check_deploy(tmp_path, **overrides)

    assert code != 0
    for check in ids:
        assert check in said, said
    assert named in said


# --- The attack through the test client ----------------------------------------------------------


@pytest.fixture
def as_documented(settings):
    """This process's settings as the documented environment gives them."""
    env = documented()
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.TRUSTED_PROXY_COUNT = int(env["TRUSTED_PROXY_COUNT"])
    settings.METRICS_ALLOWED_IPS = [
        ipaddress.ip_network(item) for item in env["METRICS_ALLOWED_IPS"].split(",") if item
    ]
    settings.METRICS_TOKEN = env["METRICS_TOKEN"]
    settings.AXES_FAILURE_LIMIT = 3
    return settings


def _through_the_proxy(client_address, **headers):
    # What the documented proxy passes on: the client's address in X-Forwarded-For.
    return Client(REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=client_address, **headers)


@pytest.mark.django_db
def test_a_stranger_through_the_proxy_cannot_read_metrics(as_documented):
    documented_ips = as_documented.METRICS_ALLOWED_IPS
    # As the layout was documented: the loopback allowed, the proxy not counted. The hole.
    as_documented.TRUSTED_PROXY_COUNT = 0
    as_documented.METRICS_ALLOWED_IPS = [ipaddress.ip_network(a) for a in ("127.0.0.1", "::1")]
    assert _through_the_proxy(STRANGER).get("/metrics").status_code == 200

    as_documented.TRUSTED_PROXY_COUNT = 1
    as_documented.METRICS_ALLOWED_IPS = documented_ips
    refused = _through_the_proxy(STRANGER).get("/metrics")
    # Writing the loopback into X-Forwarded-For itself, the stranger only adds an entry the
    # proxy's own comes after; and a request the proxy passed on without the header, or one
    # from anything else on the host, is the loopback's, which no longer suffices.
    forged = _through_the_proxy(f"127.0.0.1, {STRANGER}").get("/metrics")
    bare = Client(REMOTE_ADDR=PROXY).get("/metrics")

    assert refused.status_code == forged.status_code == bare.status_code == 403
    assert refused.content.decode() == (
        f"metrics: {STRANGER} is not in METRICS_ALLOWED_IPS and no bearer token was given\n"
    )
    token = f"Bearer {as_documented.METRICS_TOKEN}"
    remote_scrape = _through_the_proxy("203.0.113.9", HTTP_AUTHORIZATION=token).get("/metrics")
    local_scrape = Client(REMOTE_ADDR=PROXY, HTTP_AUTHORIZATION=token).get("/metrics")
    assert remote_scrape.status_code == local_scrape.status_code == 200


def _fail_logins(username, times):
    for _ in range(times):
        _through_the_proxy(STRANGER).post(
            reverse("login"), {"username": username, "password": "not-the-password"}
        )


def _victim_signs_in():
    client = _through_the_proxy(VICTIM)
    answer = client.post(reverse("login"), {"username": "viewer", "password": "pw-viewer-1234"})
    return answer.status_code, "_auth_user_id" in client.session


@pytest.mark.django_db
def test_a_stranger_cannot_lock_a_colleague_out_through_the_proxy(personas, as_documented):
    as_documented.TRUSTED_PROXY_COUNT = 0
    _fail_logins("viewer", 3)
    assert _victim_signs_in() == (429, False)  # the hole: one address for everyone

    AccessAttempt.objects.all().delete()  # the lockout lifted; now as documented
    as_documented.TRUSTED_PROXY_COUNT = 1
    _fail_logins("viewer", 3)

    assert _victim_signs_in() == (302, True)
    assert AccessAttempt.objects.get().ip_address == STRANGER  # the stranger alone is counted


# --- The other unsafe combinations -----------------------------------------------------------


def _ids(settings, **values):
    for name, value in values.items():
        setattr(settings, name, value)
    return [w.id for w in proxy_layout_check()]


def test_a_proxy_count_with_no_proxy_in_front_is_named(settings):
    settings.SECURE_PROXY_SSL_HEADER = None

    assert _ids(settings, TRUSTED_PROXY_COUNT=1) == ["proxy.W002"]


def test_metrics_open_to_every_address_or_with_a_short_token_are_named(settings):
    settings.SECURE_PROXY_SSL_HEADER = None
    settings.TRUSTED_PROXY_COUNT = 0

    assert _ids(settings, METRICS_ALLOWED_IPS=[ipaddress.ip_network("0.0.0.0/0")]) == [
        "metrics.W003"
    ]
    assert _ids(settings, METRICS_ALLOWED_IPS=[], METRICS_TOKEN="short") == ["metrics.W004"]
