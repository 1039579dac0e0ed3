"""/api/v1/poison-list: the shared poison list as an API (R9, the AMPS pattern), for each role."""

import pytest
from rest_framework.test import APIClient

from console.audit.models import AuditEntry
from console.delivery.models import PoisonChange, PoisonEntry
from console.delivery.poison import poison_cursor, poison_entries_put, poison_remove
from tests.roles import ROLES, who

A = "a" * 64
B = "b" * 64
URL = "/api/v1/poison-list"


def api(user=None):
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


@pytest.fixture
def listed(db, lake_root):
    """Five entries, m0 … m4; m0 and m1 share a body."""
    poison_entries_put(
        entries=[(f"m{i}", "orders", f"reason {i}", A if i < 2 else "") for i in range(5)],
        source="engine",
    )


# --- Reading the list ----------------------------------------------------------------------------


def test_it_reads_the_list_page_by_page_with_the_cursor(listed, personas):
    client = api(personas["viewer"])

    first = client.get(URL, {"limit": 2}).json()
    second = client.get(URL, {"limit": 2, "after": first["next"]}).json()
    last = client.get(URL, {"limit": 2, "after": second["next"]}).json()

    assert [e["message_id"] for e in first["results"]] == ["m0", "m1"]
    assert first["results"][0] == {
        "message_id": "m0",
        "body_sha256": A,
        "queue": "orders",
        "reason": "reason 0",
        "source": "engine",
        "added_at": first["results"][0]["added_at"],
    }
    assert [e["message_id"] for e in second["results"]] == ["m2", "m3"]
    assert ([e["message_id"] for e in last["results"]], last["next"]) == (["m4"], None)
    assert first["cursor"] == poison_cursor()


def test_the_changes_since_a_cursor_hold_additions_and_removals(listed, personas):
    cursor = api(personas["viewer"]).get(URL).json()["cursor"]
    poison_entries_put(entries=[("m9", "orders", "new", B)], source="engine")
    poison_remove(actor=personas["admin"], message_id="m0")

    answer = api(personas["viewer"]).get(f"{URL}/changes", {"since": cursor}).json()

    assert [(c["kind"], c["message_id"], c["body_sha256"]) for c in answer["results"]] == [
        ("added", "m9", B),
        ("removed", "m0", A),
    ]
    assert answer["results"][1]["source"] == "admin"
    assert answer["cursor"] == answer["results"][-1]["cursor"] == poison_cursor()
    assert answer["more"] is False
    again = api(personas["viewer"]).get(f"{URL}/changes", {"since": answer["cursor"]}).json()
    assert (again["results"], again["cursor"], again["more"]) == ([], answer["cursor"], False)


def test_the_changes_come_a_page_at_a_time(listed, personas):
    client = api(personas["viewer"])

    page = client.get(f"{URL}/changes", {"since": 0, "limit": 3}).json()
    rest = client.get(f"{URL}/changes", {"since": page["cursor"], "limit": 3}).json()

    assert ([c["message_id"] for c in page["results"]], page["more"]) == (["m0", "m1", "m2"], True)
    assert ([c["message_id"] for c in rest["results"]], rest["more"]) == (["m3", "m4"], False)


def test_one_entry_is_read_by_its_id(listed, personas):
    response = api(personas["operator"]).get(f"{URL}/entries/m3")

    assert response.status_code == 200
    assert response.json()["reason"] == "reason 3"
    assert api(personas["operator"]).get(f"{URL}/entries/nope").status_code == 404


def test_an_id_with_a_slash_names_one_entry(db, lake_root, personas):
    poison_entries_put(entries=[("orders/7", "orders", "r", "")], source="engine")

    assert api(personas["viewer"]).get(f"{URL}/entries/orders/7").json()["message_id"] == (
        "orders/7"
    )
    assert api(personas["admin"]).delete(f"{URL}/entries/orders/7").status_code == 204


# --- Checking -----------------------------------------------------------------------------------


def test_a_check_answers_which_ids_and_bodies_are_listed(listed, personas):
    response = api(personas["application"]).post(
        f"{URL}/check",
        {"ids": ["m2", "unknown", "m2"], "body_sha256": [A.upper(), B]},
        format="json",
    )

    assert response.status_code == 200
    assert response.json() == {
        "ids": [{"message_id": "m2", "reason": "reason 2"}],
        "body_sha256": [{"body_sha256": A, "reason": "reason 1"}],
    }


def test_a_check_of_nothing_finds_nothing(listed, personas):
    response = api(personas["application"]).post(f"{URL}/check", {}, format="json")

    assert response.json() == {"ids": [], "body_sha256": []}


# --- Reporting ----------------------------------------------------------------------------------


def test_a_report_puts_the_message_on_the_list_in_the_callers_name_and_is_audited(
    db, lake_root, personas
):
    response = api(personas["application"]).post(
        f"{URL}/reports",
        {
            "message_id": "ext-1",
            "reason": "crashed the billing app",
            "queue": "billing",
            "body_sha256": B.upper(),
        },
        format="json",
    )

    assert response.status_code == 201
    body = response.json()
    assert (body["message_id"], body["source"], body["body_sha256"]) == ("ext-1", "application", B)
    entry = PoisonEntry.objects.get(message_id="ext-1")
    assert (entry.reason, entry.queue, entry.source) == (
        "crashed the billing app",
        "billing",
        "application",
    )
    change = PoisonChange.objects.get()
    assert (change.kind, change.source, change.body_sha256) == ("added", "application", B)
    audit = AuditEntry.objects.get(action="poison.reported")
    assert (audit.actor, audit.target_id) == ("application", "ext-1")
    assert audit.details["reason"] == "crashed the billing app"


def test_a_report_without_a_body_keeps_the_body_already_listed(listed, personas):
    response = api(personas["application"]).post(
        f"{URL}/reports", {"message_id": "m0", "reason": "seen again"}, format="json"
    )

    assert response.status_code == 201
    assert (response.json()["body_sha256"], response.json()["reason"]) == (A, "seen again")
    assert AuditEntry.objects.filter(action="poison.reported").count() == 1


# --- Removing -----------------------------------------------------------------------------------


def test_an_admin_removes_an_entry_and_it_is_audited(listed, personas):
    response = api(personas["admin"]).delete(f"{URL}/entries/m1")

    assert response.status_code == 204
    assert not PoisonEntry.objects.filter(message_id="m1").exists()
    assert PoisonEntry.objects.get(message_id="m0").body_sha256 == A
    audit = AuditEntry.objects.get(action="poison.removed")
    assert (audit.actor, audit.target_id) == ("admin", "m1")
    assert audit.details == {
        "message_id": "m1",
        "body_sha256": A,
        "queue": "orders",
        "reason": "reason 1",
        "source": "engine",
    }


def test_removing_an_id_that_is_not_listed_is_not_found(listed, personas):
    response = api(personas["admin"]).delete(f"{URL}/entries/nope")

    assert response.status_code == 404
    assert response.json() == {"detail": "not on the poison list"}
    assert not AuditEntry.objects.filter(action="poison.removed").exists()


# --- Refusals -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "url", "data", "field"),
    [
        ("get", URL, {"after": "m\x00"}, "after"),
        ("get", URL, {"after": "x" * 201}, "after"),
        ("get", URL, {"limit": 0}, "limit"),
        ("get", URL, {"limit": 1001}, "limit"),
        ("get", f"{URL}/changes", {}, "since"),
        ("get", f"{URL}/changes", {"since": -1}, "since"),
        ("get", f"{URL}/changes", {"since": "yesterday"}, "since"),
        ("post", f"{URL}/check", {"ids": ["m\x00"]}, "ids"),
        ("post", f"{URL}/check", {"ids": ["m"] * 1001}, "ids"),
        ("post", f"{URL}/check", {"body_sha256": ["abc"]}, "body_sha256"),
        ("post", f"{URL}/check", {"body_sha256": ["g" * 64]}, "body_sha256"),
        ("post", f"{URL}/check", {"body_sha256": [A] * 1001}, "body_sha256"),
        ("post", f"{URL}/reports", {"reason": "r"}, "message_id"),
        ("post", f"{URL}/reports", {"message_id": "m", "reason": ""}, "reason"),
        ("post", f"{URL}/reports", {"message_id": "", "reason": "r"}, "message_id"),
        ("post", f"{URL}/reports", {"message_id": "m\x00", "reason": "r"}, "message_id"),
        ("post", f"{URL}/reports", {"message_id": "m\n", "reason": "r"}, "message_id"),
        ("post", f"{URL}/reports", {"message_id": "x" * 201, "reason": "r"}, "message_id"),
        ("post", f"{URL}/reports", {"message_id": "m", "reason": "r\x00"}, "reason"),
        ("post", f"{URL}/reports", {"message_id": "m", "reason": "r" * 2001}, "reason"),
        ("post", f"{URL}/reports", {"message_id": "m", "reason": "r", "queue": "q" * 101}, "queue"),
        (
            "post",
            f"{URL}/reports",
            {"message_id": "m", "reason": "r", "body_sha256": "ab"},
            "body_sha256",
        ),
    ],
)
def test_input_that_is_not_valid_is_a_400_that_says_why(personas, method, url, data, field):
    client = api(personas["application"])
    send = {"get": lambda: client.get(url, data), "post": lambda: client.post(url, data, "json")}
    response = send[method]()

    assert response.status_code == 400, response.content
    body = response.json()
    assert list(body["errors"]) == [field]
    assert body["detail"].startswith(f"{field}")
    assert not PoisonEntry.objects.exists()


def test_a_report_must_be_json(personas):
    response = api(personas["application"]).post(
        f"{URL}/reports", {"message_id": "m", "reason": "r"}
    )

    assert response.status_code == 415


def test_an_entry_id_with_a_nul_character_is_not_found(personas):
    assert api(personas["viewer"]).get(f"{URL}/entries/m%00").status_code == 404
    assert api(personas["admin"]).delete(f"{URL}/entries/m%00").status_code == 404


READ = {"viewer": 200, "operator": 200, "approver": 200, "admin": 200, "application": 200}
# (name, method, url, body, {role: status}); a role not named gets 403.
ENDPOINTS = [
    ("list", "get", URL, None, READ),
    ("changes", "get", f"{URL}/changes?since=0", None, READ),
    ("check", "post", f"{URL}/check", {"ids": ["m0"]}, READ),
    ("entry", "get", f"{URL}/entries/m0", None, READ),
    ("report", "post", f"{URL}/reports", {"message_id": "x", "reason": "r"}, {"application": 201}),
    ("remove", "delete", f"{URL}/entries/m0", None, {"admin": 204}),
]


@pytest.mark.parametrize("role", ROLES, ids=who)
@pytest.mark.parametrize(
    ("name", "method", "url", "data", "allowed"), ENDPOINTS, ids=[e[0] for e in ENDPOINTS]
)
def test_each_endpoint_answers_each_role_as_its_permissions_say(
    listed, personas, role, name, method, url, data, allowed
):
    client = api(personas[role] if role else None)
    response = getattr(client, method)(url, data, format="json")

    expected = 401 if role is None else allowed.get(role, 403)
    assert response.status_code == expected, response.content[:300]


def test_the_application_role_sees_nothing_but_the_poison_list(listed, personas):
    client = api(personas["application"])

    for url in [
        "/api/v1/messages",
        "/api/v1/index/messages",
        "/api/v1/messages/m0",
        "/api/v1/messages/m0/body",
        "/api/v1/requests",
        "/api/v1/stats",
        "/api/v1/queues",
        "/api/v1/audit",
    ]:
        assert client.get(url).status_code == 403, url
    # It sends messages in, though (a producer's service account): refused for what it sent
    # (a queue that may not exist here), not for who it is.
    sent = client.post(
        "/api/v1/messages", {"id": "n", "queue": "orders", "body": "x"}, format="json"
    )
    assert sent.status_code != 403, sent.content
