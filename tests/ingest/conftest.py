import os
import time

import pytest
from django.contrib.auth.models import Group, User

from console.lake.selectors import lake_paths
from console.lake.services import lake
from console.queues.models import Queue


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def orders(db, lake_root):
    return Queue.objects.create(name="orders", handler="workers.demo.handlers.noop")


@pytest.fixture
def alice(db):
    """A producer's service account (the application role alone, no password): may send
    messages into every queue (R19: a person sends by hand only where two administrators agreed,
    tests/security/test_ingest_by_hand.py)."""
    from console.accounts.roles import APPLICATION, roles_seed

    roles_seed()
    user = User.objects.create_user("alice")
    user.groups.add(Group.objects.get(name=APPLICATION))
    return user


@pytest.fixture
def charlie(db):
    """Signed in, but with no right to send messages in."""
    return User.objects.create_user("charlie", password="pw-charlie-123")


@pytest.fixture
def inbox(tmp_path, settings):
    path = tmp_path / "inbox"
    path.mkdir()
    settings.INBOX_DIR = path
    return path


def settle(path):
    """Make a file look as if nobody had written to it for a minute."""
    past = time.time() - 60
    os.utime(path, (past, past))
    return path


def lake_messages():
    """Every committed messages row, read back with pyarrow, as dicts by message id."""
    table = lake().read_arrow("messages", lake_paths(dataset="messages"))
    return {row["message_id"]: row for row in table.to_pylist()}


def lake_events():
    return lake().read_arrow("events", lake_paths(dataset="events")).to_pylist()
