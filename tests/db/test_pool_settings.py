"""The pool's settings: read once, loudly, and only PostgreSQL gets a pool. Each start is a fresh
interpreter, as in tests/test_settings.py: settings are read at import."""

import json

import pytest

from console.settings import _process_name
from tests.console_process import console_python

SHOW = (
    "import json, django; django.setup(); from django.conf import settings; "
    "print(json.dumps(settings.DATABASES['default'], default=str))"
)
POSTGRES = "postgres://antidote@db.example.test:5432/antidote"
_OURS = ("DATABASE_URL", "DB_POOL_MAX", "DB_POOL_MIN", "DB_POOL_TIMEOUT", "DB_APPLICATION_NAME")


def _start(tmp_path, **env):
    return console_python(SHOW, var_dir=tmp_path, unset=_OURS, **env)


def _database(tmp_path, **env):
    done = _start(tmp_path, **env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_postgres_gets_a_bounded_pool_and_no_persistent_connections(tmp_path):
    db = _database(tmp_path, DATABASE_URL=POSTGRES, DB_APPLICATION_NAME="antidote-web")

    assert db["CONN_MAX_AGE"] == 0
    assert db["CONN_HEALTH_CHECKS"] is True
    assert db["OPTIONS"]["application_name"] == "antidote-web"
    assert db["OPTIONS"]["pool"] == {
        "min_size": 1,
        "max_size": 10,
        "timeout": 10,
        "name": "antidote-web",
    }


def test_the_pool_follows_its_variables(tmp_path):
    db = _database(
        tmp_path, DATABASE_URL=POSTGRES, DB_POOL_MAX="4", DB_POOL_MIN="0", DB_POOL_TIMEOUT="3"
    )

    assert db["OPTIONS"]["pool"]["max_size"] == 4
    assert db["OPTIONS"]["pool"]["min_size"] == 0
    assert db["OPTIONS"]["pool"]["timeout"] == 3


def test_an_application_name_in_the_url_is_kept(tmp_path):
    db = _database(tmp_path, DATABASE_URL=POSTGRES + "?application_name=reporting")

    assert db["OPTIONS"]["application_name"] == "reporting"


def test_sqlite_has_no_pool(tmp_path):
    db = _database(tmp_path, DB_POOL_MAX="4")

    assert db["ENGINE"] == "django.db.backends.sqlite3"
    assert "pool" not in db["OPTIONS"]
    assert db["CONN_MAX_AGE"] == 0


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"DB_POOL_MAX": "0"}, "DB_POOL_MAX must be at least 1, not 0"),
        ({"DB_POOL_MAX": "many"}, "DB_POOL_MAX must be an integer, not 'many'"),
        ({"DB_POOL_MIN": "-1"}, "DB_POOL_MIN must be at least 0, not -1"),
        ({"DB_POOL_TIMEOUT": "0"}, "DB_POOL_TIMEOUT must be at least 1, not 0"),
        ({"DB_POOL_MAX": "2", "DB_POOL_MIN": "3"}, "DB_POOL_MIN (3) must not be more than"),
    ],
)
def test_a_bad_pool_value_stops_the_start(tmp_path, env, says):
    done = _start(tmp_path, DATABASE_URL=POSTGRES, **env)

    assert done.returncode != 0
    assert "ImproperlyConfigured" in done.stderr
    assert says in done.stderr


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["manage.py", "runserver"], "web"),
        (["/srv/venv/bin/gunicorn", "console.wsgi", "-w", "4"], "web"),
        (
            ["/srv/venv/bin/celery", "-A", "workers", "worker", "-Q", "spark", "-c", "4"],
            "spark-worker",
        ),
        (
            ["/srv/venv/lib/celery/__main__.py", "-A", "workers", "worker", "--queues=spark"],
            "spark-worker",
        ),
        (["/srv/venv/bin/celery", "-A", "workers", "worker", "-Q", "default"], "worker"),
        (["/srv/venv/bin/celery", "-A", "workers", "beat", "-s", "schedule"], "beat"),
        (["manage.py", "consume_rabbitmq"], "consumer"),
        (["manage.py", "consume_sources"], "consumer"),
        (["manage.py", "migrate"], "migrate"),
        (["-c"], "python"),
    ],
)
def test_each_process_names_itself_for_pg_stat_activity(argv, name):
    assert _process_name(argv) == name
