"""/healthz and /readyz, as a probe asks for them: no sign-in, no session. /readyz says which
check failed, in words with no secret in them."""

import pytest
from django.core.management import call_command
from django.test import Client

from console.lake.models import LakeCommit
from tests.processes_health.conftest import _closed_port, database_gone

pytestmark = pytest.mark.django_db


def _probe(path):
    return Client().get(path)


def test_healthz_answers_alive_without_sign_in():
    response = _probe("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "alive"}
    assert "no-cache" in response["Cache-Control"]


def test_healthz_answers_alive_even_when_the_database_is_gone(tmp_path):
    with database_gone(tmp_path):
        response = _probe("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "alive"}


def test_readyz_answers_ready_when_all_is_well(lake_root):
    response = _probe("/readyz")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "ready"
    assert set(body["checks"]) == {"database", "migrations", "broker", "lake"}
    assert all(check["ok"] for check in body["checks"].values())


def test_readyz_answers_503_naming_the_database_when_it_is_gone(tmp_path, lake_root):
    with database_gone(tmp_path):
        response = _probe("/readyz")

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "not ready"
    assert body["checks"]["database"]["ok"] is False
    assert "does not answer (OperationalError)" in body["checks"]["database"]["detail"]
    assert body["checks"]["migrations"] == {
        "ok": False,
        "detail": "not checked: the database does not answer",
    }
    # What does not need the database still answers for itself.
    assert body["checks"]["broker"]["ok"] is True


def test_readyz_says_the_broker_without_its_password_when_it_does_not_answer(settings, lake_root):
    port = _closed_port()
    settings.CELERY_BROKER_URL = f"redis://:s3cret-pw@127.0.0.1:{port}/0"

    response = _probe("/readyz")

    assert response.status_code == 503
    broker = response.json()["checks"]["broker"]
    assert broker["ok"] is False
    assert broker["detail"].startswith(f"the redis broker at 127.0.0.1:{port} does not answer")
    assert "s3cret" not in response.content.decode()


def test_readyz_answers_503_when_the_filesystem_broker_folder_is_gone(settings, tmp_path):
    folder = tmp_path / "broker-in"
    settings.CELERY_BROKER_URL = "filesystem://"
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "processed_folder": str(tmp_path),
    }

    response = _probe("/readyz")

    assert response.status_code == 503
    assert str(folder) in response.json()["checks"]["broker"]["detail"]


def test_a_lake_with_commits_but_no_folder_is_not_ready(settings, tmp_path):
    settings.LAKE_URI = str(tmp_path / "unmounted-lake")
    assert _probe("/readyz").status_code == 200  # a new install: made at the first write
    LakeCommit.objects.create(dataset="events", path="events/x", row_count=1, idempotency_key="k-1")

    response = _probe("/readyz")

    assert response.status_code == 503
    assert response.json()["checks"]["lake"] == {
        "ok": False,
        "detail": f"the lake folder {tmp_path / 'unmounted-lake'} is missing or not a folder",
    }


@pytest.mark.django_db(transaction=True)
def test_readyz_answers_503_naming_a_migration_not_applied(lake_root):
    call_command("migrate", "processes", "zero", verbosity=0)
    try:
        response = _probe("/readyz")
    finally:
        call_command("migrate", "processes", verbosity=0)

    assert response.status_code == 503
    migrations = response.json()["checks"]["migrations"]
    assert migrations["ok"] is False
    assert "processes.0001_initial" in migrations["detail"]
    assert _probe("/readyz").status_code == 200


def test_probes_take_get_and_head_only():
    assert Client().post("/readyz").status_code == 405
    assert Client().head("/healthz").status_code == 200
