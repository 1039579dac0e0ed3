"""/api/v1/audit and /api/v1/audit/export: the screen's trail and export, with its permissions,
by session or token, and described in the OpenAPI schema."""

import csv
import io

import pytest
from rest_framework.test import APIClient

from console.audit.models import AuditEntry
from tests.audit.trail import HASHED
from tests.browse.conftest import api
from tests.roles import role_matrix

APIS = [
    ("audit", "/api/v1/audit"),
    ("audit filtered", "/api/v1/audit?action=request.&page_size=10"),
    ("export", "/api/v1/audit/export"),
]


@role_matrix(("name", "url"), APIS)
def test_each_audit_endpoint_answers_each_role_as_its_permissions_say(personas, role, name, url):
    response = api(personas[role] if role else None).get(url)

    expected = 401 if role is None else 200 if role == "auditor" else 403
    assert response.status_code == expected, response.content[:300]


def test_it_lists_the_trail_newest_first_in_pages(personas, record):
    for n in range(5):
        record("request.created", actor="bob", target_type="request", target_id=str(n))
    client = api(personas["auditor"])

    first = client.get("/api/v1/audit", {"page_size": 2}).json()
    assert [e["seq"] for e in first["results"]] == [5, 4]
    assert (first["previous"], first["next"]) == (None, 4)
    assert first["results"][0] == {
        "seq": 5,
        "at": "2026-03-01T12:04:00Z",
        "actor": "bob",
        "action": "request.created",
        "target_type": "request",
        "target_id": "4",
        "details": {},
        "prev_hash": AuditEntry.objects.get(seq=4).hash,
        "hash": AuditEntry.objects.get(seq=5).hash,
    }

    second = client.get("/api/v1/audit", {"page_size": 2, "after": first["next"]}).json()
    assert [e["seq"] for e in second["results"]] == [3, 2]
    assert (second["previous"], second["next"]) == (3, 2)

    back = client.get("/api/v1/audit", {"page_size": 2, "before": second["previous"]}).json()
    assert [e["seq"] for e in back["results"]] == [5, 4]


def test_it_takes_the_screens_filters(personas, record):
    record("login", actor="alice")
    record("request.created", actor="bob", target_type="request", target_id="1")
    record("request.approved", actor="Alice-Admin", target_type="request", target_id="1")
    client = api(personas["auditor"])

    def seqs(**params):
        return [e["seq"] for e in client.get("/api/v1/audit", params).json()["results"]]

    assert seqs(actor="alice") == [1]
    assert seqs(actor_contains="alice") == [3, 1]
    assert seqs(action="request.") == [3, 2]
    assert seqs(target_type="request", target_id="1", actor="bob") == [2]
    assert seqs(since="2026-03-01T12:01:00Z", until="2026-03-01T12:02:00Z") == [2]


@pytest.mark.parametrize(
    "params",
    [
        {"after": "x"},
        {"after": 3, "before": 5},
        {"page_size": 501},
        {"since": "2026-03-02T00:00Z", "until": "2026-03-01T00:00Z"},
        {"since": "not a time"},
    ],
)
def test_it_refuses_invalid_parameters(personas, params):
    response = api(personas["auditor"]).get("/api/v1/audit", params)

    assert response.status_code == 400
    assert "errors" in response.json()


def test_the_api_export_is_csv_and_recorded(personas, record):
    record("login", actor="alice")

    response = api(personas["auditor"]).get(
        "/api/v1/audit/export", {"actor": "alice"}, HTTP_ACCEPT="text/csv"
    )

    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0][:4] == ["seq", "at", "actor", "action"]
    assert [row[2:4] for row in rows[1:]] == [["alice", "login"]]
    entry = AuditEntry.objects.get(action="audit.exported")
    assert entry.details == {"filters": {"actor": "alice"}, "via": "api"}


def test_the_api_export_refuses_invalid_filters(personas):
    response = api(personas["auditor"]).get("/api/v1/audit/export", {"until": "soon"})

    assert response.status_code == 400
    assert not AuditEntry.objects.filter(action="audit.exported").exists()


def test_an_auditor_signed_in_calls_it_with_their_session(personas, record):
    # A person has no API token (R19): their session is how they call the API.
    record()
    client = APIClient()
    assert client.login(username="auditor", password="pw-auditor-1234")

    assert client.get("/api/v1/audit").status_code == 200
    assert client.get("/api/v1/audit/export").status_code == 200


def test_the_schema_describes_the_filters_the_pages_and_the_csv(db, settings):
    from django.urls import include, path
    from drf_spectacular.generators import SchemaGenerator

    from console.audit.urls import api_urlpatterns

    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    }
    patterns = [path("api/v1/", include(api_urlpatterns))]
    schema = SchemaGenerator(patterns=patterns).get_schema(request=None, public=True)

    listing = schema["paths"]["/api/v1/audit"]["get"]
    names = {p["name"] for p in listing["parameters"]}
    assert names == {
        "actor",
        "actor_contains",
        "action",
        "target_type",
        "target_id",
        "since",
        "until",
        "after",
        "before",
        "page_size",
    }
    page = listing["responses"]["200"]["content"]["application/json"]["schema"]
    assert page == {"$ref": "#/components/schemas/AuditPage"}
    entry = schema["components"]["schemas"]["AuditEntry"]["properties"]
    assert set(entry) == {*HASHED, "hash"}

    export = schema["paths"]["/api/v1/audit/export"]["get"]
    assert {p["name"] for p in export["parameters"]} == names - {"after", "before", "page_size"}
    assert list(export["responses"]["200"]["content"]) == ["text/csv"]
