"""/api/v1/purges: administrators run a purge or preview one (queued for the spark worker, 202);
administrators and auditors follow them, list them and read a purge's id list."""

import hashlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.utils import timezone

from console.audit.models import AuditEntry
from console.queues.models import Queue
from console.retention.models import PurgeRun
from tests.browse.conftest import api

pytestmark = pytest.mark.django_db


@pytest.fixture
def orders(db):
    return Queue.objects.create(name="orders", handler="workers.demo.handlers.noop")


@pytest.fixture
def done(lake_root, personas):
    """A finished purge and its id file, in two files as Spark writes a sorted result."""
    from console.lake.services import lake

    store = lake()
    ids_path = store.new_dir("purges", "purge-ids")
    folder = lake_root / ids_path
    folder.mkdir(parents=True)
    for n, ids in enumerate([["a-1", "b-2"], ["c-3"]]):
        table = pa.table(
            {"message_id": ids, "queue": ["orders"] * len(ids), "state": ["DLVD"] * len(ids)}
        )
        pq.write_table(table, folder / f"part-{n:05d}.parquet")
    return PurgeRun.objects.create(
        requested_by="system",
        status=PurgeRun.DONE,
        now=timezone.now(),
        total=3,
        ids_sha256=hashlib.sha256(b"a-1\nb-2\nc-3\n").hexdigest(),
        counts={"orders": {"count": 3, "sha256": hashlib.sha256(b"a-1\nb-2\nc-3\n").hexdigest()}},
        ids_path=ids_path,
        lake_changes={"events": {"rewritten": 2, "retired": 1}},
        finished_at=timezone.now(),
    )


def test_an_administrator_runs_a_purge_which_is_queued_for_the_spark_worker(
    personas, orders, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        response = api(personas["admin"]).post("/api/v1/purges", {"queue": "orders"}, format="json")

    assert response.status_code == 202, response.content
    body = response.json()
    purge = PurgeRun.objects.get(id=body["id"])
    assert (body["status"], body["dry_run"], body["queue"], body["requested_by"]) == (
        "queued",
        False,
        "orders",
        "admin",
    )
    assert (purge.status, purge.queue) == (PurgeRun.QUEUED, "orders")
    assert len(callbacks) == 1  # the task is handed over once the request is committed
    entry = AuditEntry.objects.get(action="retention.requested")
    assert (entry.actor, entry.details) == ("admin", {"dry_run": False, "queue": "orders"})


def test_a_preview_is_a_dry_run_and_may_run_beside_a_purge(personas, orders):
    client = api(personas["admin"])
    assert client.post("/api/v1/purges", {}, format="json").status_code == 202

    response = client.post("/api/v1/purges", {"dry_run": True}, format="json")

    assert response.status_code == 202
    assert response.json()["dry_run"] is True


def test_a_second_purge_while_one_is_queued_is_refused_with_409(personas, orders):
    client = api(personas["admin"])
    client.post("/api/v1/purges", {}, format="json")

    response = client.post("/api/v1/purges", {"queue": "orders"}, format="json")

    assert response.status_code == 409
    assert "a purge is queued or running" in response.json()["detail"]
    assert PurgeRun.objects.count() == 1


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"queue": "nowhere"}, "there is no queue 'nowhere'"),
        ({"dry_run": "perhaps"}, "dry_run: Must be a valid boolean."),
    ],
)
def test_bad_input_gets_a_400_saying_why(personas, orders, data, says):
    response = api(personas["admin"]).post("/api/v1/purges", data, format="json")

    assert response.status_code == 400
    assert response.json()["detail"] == says
    assert not PurgeRun.objects.exists()


@pytest.mark.parametrize(
    ("role", "post", "get"),
    [
        ("admin", 202, 200),
        ("auditor", 403, 200),
        ("approver", 403, 403),
        ("operator", 403, 403),
        ("viewer", 403, 403),
        ("outsider", 403, 403),
        (None, 401, 401),
    ],
)
def test_who_may_run_and_who_may_see_purges(personas, orders, done, role, post, get):
    client = api(personas[role] if role else None)

    assert client.post("/api/v1/purges", {"dry_run": True}, format="json").status_code == post
    assert client.get("/api/v1/purges").status_code == get
    assert client.get(f"/api/v1/purges/{done.id}").status_code == get
    assert client.get(f"/api/v1/purges/{done.id}/ids").status_code == get


def test_a_purge_shows_what_it_purged(personas, done):
    body = api(personas["auditor"]).get(f"/api/v1/purges/{done.id}").json()

    assert {k: body[k] for k in ("status", "total", "ids_sha256", "counts", "lake_changes")} == {
        "status": "done",
        "total": 3,
        "ids_sha256": hashlib.sha256(b"a-1\nb-2\nc-3\n").hexdigest(),
        "counts": {
            "orders": {"count": 3, "sha256": hashlib.sha256(b"a-1\nb-2\nc-3\n").hexdigest()}
        },
        "lake_changes": {"events": {"rewritten": 2, "retired": 1}},
    }
    listed = api(personas["auditor"]).get("/api/v1/purges").json()["results"]
    assert [p["id"] for p in listed] == [done.id]


def test_the_id_list_is_the_text_whose_sha256_the_purge_recorded(personas, done):
    response = api(personas["auditor"]).get(f"/api/v1/purges/{done.id}/ids")

    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    text = b"".join(response.streaming_content)
    assert text == b"a-1\nb-2\nc-3\n"
    assert hashlib.sha256(text).hexdigest() == done.ids_sha256


def test_a_purge_not_finished_has_no_id_list_yet(personas, orders):
    purge = PurgeRun.objects.create(requested_by="admin", status=PurgeRun.RUNNING)

    response = api(personas["admin"]).get(f"/api/v1/purges/{purge.id}/ids")

    assert response.status_code == 409
    assert response.json()["detail"] == f"purge {purge.id} is running: it has no id list"


@pytest.mark.parametrize("purge_id", ["999", "abc", "0", str(2**70)])
def test_an_unknown_purge_is_a_404(personas, purge_id):
    response = api(personas["admin"]).get(f"/api/v1/purges/{purge_id}")

    assert response.status_code == 404
    assert response.json() == {"detail": "no such purge"}
