"""Shared fixtures: one real Spark session per test run, a fresh lake folder per test, and one
persona per role. Tests that need an outside service call `require_service`, which skips when it is
missing on a developer's machine and fails when REQUIRE_SERVICES=1 (CI)."""

import os
import shutil
import socket
from pathlib import Path

import pytest

# The outbound guard's: a test receiver let through exactly, every connect watched.
from tests.outbound import connections, outbound_allow, receiver  # noqa: F401 - fixtures

REQUIRE_SERVICES = os.environ.get("REQUIRE_SERVICES") == "1"


def require_service(name, host="127.0.0.1", port=None, *, path=None):
    """Skip (or fail under REQUIRE_SERVICES=1) unless the service answers."""
    ok = True
    if path is not None:
        ok = shutil.which(path) is not None or os.path.exists(path)
    if port is not None:
        try:
            with socket.create_connection((host, port), timeout=2):
                pass
        except OSError:
            ok = False
    if not ok:
        message = f"{name} is not available"
        if REQUIRE_SERVICES:
            pytest.fail(f"{message} and REQUIRE_SERVICES=1")
        pytest.skip(message)


# CI runs the suite twice side by side: on SQLite, then on PostgreSQL + Redis with
# DATABASE_TESTS_ONLY=1. The second run leaves out what cannot behave differently there, having
# run in the first: Spark jobs tested as pure transforms (no database), the Spark deployment
# modes (a standalone cluster, Spark Connect: marked `spark_deployment`), and the browser tests
# (tests/browser: what they add to the view tests, which run on PostgreSQL, is the pages'
# script, policy and layout in Chromium, which no database changes).
_DATABASE_FIXTURES = {"db", "transactional_db", "live_server", "django_db_setup"}


# The tests of the shared NATS server's JetStream: its parking streams all capture
# `antidote.refused.>`, and JetStream lets one stream only capture a subject, so two runs side by
# side would refuse each other's. What they check is the broker's side, which no database changes:
# the embedded run takes them all, one after the other.
_NATS_TESTS = Path(__file__).resolve().parent / "brokers" / "nats"


def _database_blind(item):
    if item.get_closest_marker("spark_deployment") or item.path.parent.name == "browser":
        return True
    if item.path.resolve().parent == _NATS_TESTS:
        return True
    if item.get_closest_marker("database_blind"):
        return True
    uses_database = item.get_closest_marker("django_db") or _DATABASE_FIXTURES & set(
        getattr(item, "fixturenames", ())
    )
    return bool(item.get_closest_marker("spark")) and not uses_database


def _left_to_the_other_run(item):
    """A test marked `one_database(name)` in CI's other run (SPLIT_RUN names this one): heavy,
    and what it checks on the other database is checked by another test there."""
    marker = item.get_closest_marker("one_database")
    this_run = os.environ.get("SPLIT_RUN")
    return bool(marker and this_run and marker.args[0] != this_run)


def _blind_run(item):
    """The CI run that takes a database-blind test: the embedded one, which also carries the
    browser tests, except the Spark deployments (a standalone cluster, Spark Connect: some 100 s),
    which the PostgreSQL run takes so that the two runs, side by side, end together."""
    return "postgresql" if item.get_closest_marker("spark_deployment") else "sqlite"


def _left_out(item):
    if _left_to_the_other_run(item):
        return True
    if not _database_blind(item):
        return False
    this_run = os.environ.get("SPLIT_RUN")
    if this_run:
        return _blind_run(item) != this_run
    return os.environ.get("DATABASE_TESTS_ONLY") == "1"


def pytest_collection_modifyitems(config, items):
    left_out = [item for item in items if _left_out(item)]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if not _left_out(item)]


def _rows_deleted(test_case, flush):
    """A transactional test's database emptied on PostgreSQL by deleting its rows, where Django
    truncates every table and makes the content types and permissions again: TRUNCATE gives each
    of some sixty tables a new file, which took 0.5 s a test (two minutes of a CI run), where
    deleting the few rows a test wrote takes milliseconds. The content types and permissions
    stay, as the migrations left them; sequences go on, as they do after Django's flush."""
    from django.db import connections as databases
    from django.db import transaction

    names = test_case._databases_names(include_mirrors=False)
    if any(databases[name].vendor != "postgresql" for name in names):
        return flush(test_case)  # SQLite's flush is quick
    keep = {"django_content_type", "auth_permission", "django_migrations"}
    for name in names:
        connection = databases[name]
        tables = connection.introspection.django_table_names(
            only_existing=True, include_views=False
        )
        with transaction.atomic(using=name), connection.cursor() as cursor:
            # Foreign keys are deferred to the commit, so the order of the deletes does not matter.
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")
            for table in sorted(set(tables) - keep):
                # The models' own table names, quoted: nothing from outside.
                cursor.execute(f"DELETE FROM {connection.ops.quote_name(table)}")  # noqa: S608


def _teardown_by_deleting_rows():
    from django.test import TransactionTestCase

    flush = TransactionTestCase._fixture_teardown
    TransactionTestCase._fixture_teardown = lambda self: _rows_deleted(self, flush)


_teardown_by_deleting_rows()


@pytest.fixture(scope="session")
def spark():
    from workers.spark import spark_session, spark_stop

    # The JVM's options as the workers the tests start take them (`make test` sets them).
    session = spark_session(
        master="local[2]",
        driver_memory="2g",
        java_options=os.environ.get("SPARK_DRIVER_JAVA_OPTIONS", ""),
    )
    yield session
    spark_stop()


@pytest.fixture(autouse=True)
def _audit_checkpoint_folder(settings, tmp_path):
    """Checkpoint files outlive a test's database: each test files them in a folder of its own
    (another test's, or another run's, would be reported as entries removed)."""
    settings.AUDIT_CHECKPOINT_DIR = tmp_path / "audit-checkpoints"


@pytest.fixture
def lake_root(tmp_path, settings):
    root = tmp_path / "lake"
    root.mkdir()
    settings.LAKE_URI = str(root)
    return root


@pytest.fixture
def personas(db, settings):
    """One user per role, named after it, plus an outsider with no role at all. The application
    role's is a service account (console.access.service_accounts): it has no password."""
    from django.contrib.auth.models import Group, User

    from console.accounts.roles import ROLES, roles_seed
    from console.audit.models import AuditEntry

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    start = AuditEntry.objects.order_by("-seq").values_list("seq", flat=True).first() or 0
    roles_seed()
    users = {}
    for role in ROLES:
        # The application role's account is a service account: no password (R19).
        password = None if role == "application" else f"pw-{role}-1234"
        user = User.objects.create_user(role, password=password)
        user.groups.add(Group.objects.get(name=role))
        users[role] = user
    users["outsider"] = User.objects.create_user("outsider", password="pw-outsider-1234")
    users = {name: settled(user) for name, user in users.items()}
    # The team's accounts and roles were set up long ago: the trail a test reads starts after
    # them (taking entries off the end leaves the chain whole).
    AuditEntry.objects.filter(seq__gt=start).delete()
    return users


def settled(user, days=30):
    """`user` as an account made, and last given its rights, `days` ago: past the approver
    cool-down (console.access), as a team's accounts are. Returns it read again."""
    from datetime import timedelta

    from django.contrib.auth.models import User
    from django.utils import timezone

    from console.access.models import AccountRights

    then = timezone.now() - timedelta(days=days)
    User.objects.filter(pk=user.pk).update(date_joined=then)
    AccountRights.objects.filter(user_id=user.pk).update(changed_at=then)
    return User.objects.get(pk=user.pk)


def session_headers(user):
    """HTTP headers that call the API as `user`, signed in, from outside Django's test client (a
    live server, schemathesis): the cookie of a session of theirs, and a CSRF token for the
    unsafe methods. A person has no API token (R19): this is how they call the API."""
    import secrets

    from django.conf import settings as django_settings
    from django.test import Client

    client = Client()
    client.force_login(user)
    session = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    csrf = secrets.token_hex(16)  # any 32 letters and digits: the cookie's and the header's match
    return {
        "Cookie": f"{django_settings.SESSION_COOKIE_NAME}={session}; "
        f"{django_settings.CSRF_COOKIE_NAME}={csrf}",
        "X-CSRFToken": csrf,
    }
