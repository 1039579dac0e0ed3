"""static/clients/antidote_poison.py, the client outside applications copy, against a live server:
load the list, skip what is on it, report what failed, refresh between batches (R9, the AMPS
pattern)."""

import hashlib

import pytest

from console.delivery.models import PoisonEntry
from console.delivery.poison import poison_entries_put, poison_remove
from tests.poison_client import client_module, poison_list

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def another_application(personas, django_user_model):
    """A second application's service account, which shares the list."""
    user = django_user_model.objects.create_user("inventory-app")
    user.groups.add(personas["application"].groups.get())
    return user


@pytest.fixture
def listed(lake_root, personas):
    """m00 … m11 on the list, m00 with the body "crash"."""
    crash = hashlib.sha256(b"crash").hexdigest()
    poison_entries_put(
        entries=[
            (f"m{i:02d}", "orders", f"reason {i}", crash if i == 0 else "") for i in range(12)
        ],
        source="engine",
    )


def test_it_loads_the_whole_list_page_by_page(listed, live_server, personas):
    poison = poison_list(live_server, personas["application"], page_size=5)

    assert poison.load() == 12

    assert poison.is_poisoned("m07")
    assert poison.reason("m07") == "reason 7"
    assert not poison.is_poisoned("order-1")
    # By body: the body itself, or its hash; only when one is given.
    assert poison.is_poisoned("order-1", body=b"crash")
    assert poison.is_poisoned(body="crash")
    assert poison.is_poisoned(body_sha256=hashlib.sha256(b"crash").hexdigest().upper())
    assert poison.reason(body=b"crash") == "same body as a poisoned message: reason 0"
    assert not poison.is_poisoned("order-1", body=b"fine")


def test_a_report_is_on_the_list_for_the_reporter_and_for_everyone_else(
    listed, live_server, personas, another_application
):
    reporter = poison_list(live_server, personas["application"])
    reporter.load()
    other = poison_list(live_server, another_application)
    other.load()

    entry = reporter.report("ext-1", "crashed the billing app", queue="billing", body=b"boom")

    assert (entry["source"], entry["body_sha256"]) == (
        "application",
        hashlib.sha256(b"boom").hexdigest(),
    )
    assert reporter.is_poisoned("ext-1")
    assert PoisonEntry.objects.get(message_id="ext-1").source == "application"
    assert not other.is_poisoned("ext-1")
    assert other.refresh() == 1
    assert other.is_poisoned("ext-1")
    assert other.is_poisoned("ext-2", body=b"boom")


def test_a_refresh_sees_a_removal(listed, live_server, personas):
    poison = poison_list(live_server, personas["application"])
    poison.load()

    poison_remove(actor=personas["admin"], message_id="m00")

    assert poison.refresh() == 1
    assert not poison.is_poisoned("m00")
    assert not poison.is_poisoned(body=b"crash")
    assert len(poison) == 11


def test_a_check_asks_the_console_without_a_copy(listed, live_server, personas):
    poison = poison_list(live_server, personas["application"])

    ids, bodies = poison.check(["m03", "nope"], bodies=[b"crash", b"fine"])

    assert ids == {"m03": "reason 3"}
    assert bodies == {hashlib.sha256(b"crash").hexdigest(): "reason 0"}


def test_a_refusal_raises_with_the_consoles_reason(listed, live_server, personas):
    from django.contrib.auth.models import Group, Permission

    client = client_module()
    application = poison_list(live_server, personas["application"])
    # An install whose application role may not report (its rights are read at each call).
    report = Permission.objects.get(content_type__app_label="delivery", codename="add_poisonentry")
    Group.objects.get(name="application").permissions.remove(report)

    with pytest.raises(client.PoisonListError, match="403") as refused:
        application.report("ext-1", "crashed")
    assert refused.value.status == 403
    assert "this needs permission for reporting to the poison list" in refused.value.detail

    Group.objects.get(name="application").permissions.add(report)
    with pytest.raises(client.PoisonListError, match="400") as bad:
        application.report("ext-1", "crashed", body_sha256="not a hash")
    assert "body_sha256" in bad.value.detail

    stranger = client.PoisonList(live_server.url, "not-a-token")
    with pytest.raises(client.PoisonListError, match="401"):
        stranger.load()


def test_it_asks_for_a_load_before_anything_else(live_server, personas, db):
    poison = poison_list(live_server, personas["application"])

    with pytest.raises(client_module().PoisonListError, match="load"):
        poison.is_poisoned("m00")
    with pytest.raises(client_module().PoisonListError, match="load"):
        poison.refresh()


def test_it_refuses_an_address_that_is_not_http():
    with pytest.raises(ValueError, match="http"):
        client_module().PoisonList("file:///etc/passwd", "token")


def test_the_console_serves_the_client_for_download(live_server):
    import urllib.request

    from tests.poison_client import CLIENT

    url = f"{live_server.url}/static/clients/antidote_poison.py"
    with urllib.request.urlopen(url) as response:  # noqa: S310 (the live server, http)
        assert response.read() == CLIENT.read_bytes()
