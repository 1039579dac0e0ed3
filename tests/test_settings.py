"""Settings refuse a bad environment value at start, loudly, instead of misbehaving later."""

import pytest

from tests.console_process import console_python

STARTUP = "import django; django.setup(); from django.conf import settings; print(settings.DEBUG)"
# Variables a developer or CI may have set that would change what these tests see.
_OURS = (
    "DEBUG",
    "DATABASE_URL",
    "SPARK_MASTER",
    "SPARK_REMOTE",
    "MAX_BODY_BYTES",
    "CELERY_BROKER_URL",
    "LEASE_SECONDS",
    "LAKE_QUERY_TIMEOUT_SECONDS",
    "CELERY_TASK_ALWAYS_EAGER",
    "HEARTBEAT_SECONDS",
    "HEARTBEAT_STALE_SECONDS",
    "OUTBOUND_ALLOW_INTERNAL",
)


def _start(tmp_path, **env):
    return console_python(STARTUP, var_dir=tmp_path, unset=_OURS, **env)


def test_it_starts_on_embedded_defaults(tmp_path):
    done = _start(tmp_path)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("SPARK_MASTER", "yarn", "SPARK_MASTER must start with one of local, spark://"),
        ("SPARK_REMOTE", "http://spark:15002", "SPARK_REMOTE must start with one of sc://"),
        ("DATABASE_URL", "mysql://x", "DATABASE_URL must start with one of sqlite://"),
        ("MAX_BODY_BYTES", "abc", "MAX_BODY_BYTES must be an integer, not 'abc'"),
        ("MAX_BODY_BYTES", "0", "MAX_BODY_BYTES must be at least 1, not 0"),
        ("LEASE_SECONDS", "1", "LEASE_SECONDS must be at least 5, not 1"),
        # No "never": a costly lake query would hold a worker again.
        ("LAKE_QUERY_TIMEOUT_SECONDS", "0", "LAKE_QUERY_TIMEOUT_SECONDS must be at least 1, not 0"),
        (
            "LAKE_QUERY_TIMEOUT_SECONDS",
            "3601",
            "LAKE_QUERY_TIMEOUT_SECONDS must be at most 3000, not 3601",
        ),
        ("DEBUG", "maybe", "DEBUG must be a boolean (true/false/1/0), not 'maybe'"),
        ("CELERY_TASK_ALWAYS_EAGER", "sometimes", "CELERY_TASK_ALWAYS_EAGER must be a boolean"),
        ("CELERY_BROKER_URL", "sqs://queue", "CELERY_BROKER_URL must start with one of"),
        (
            "HEARTBEAT_STALE_SECONDS",
            "10",
            "HEARTBEAT_STALE_SECONDS (10) must be more than HEARTBEAT_SECONDS (10)",
        ),
        (
            "OUTBOUND_ALLOW_INTERNAL",
            "localhost:8231",
            "OUTBOUND_ALLOW_INTERNAL lists addresses (127.0.0.1), addresses with a port",
        ),
    ],
)
def test_a_bad_value_stops_the_start_with_improperly_configured(tmp_path, name, value, says):
    done = _start(tmp_path, **{name: value})

    assert done.returncode != 0
    assert "django.core.exceptions.ImproperlyConfigured" in done.stderr
    assert says in done.stderr


def test_a_good_value_is_taken(tmp_path):
    done = _start(tmp_path, DEBUG="1")

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
