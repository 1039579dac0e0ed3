from io import StringIO

import pytest
from django.core.cache import cache
from django.core.management import call_command

# The environment variable of each broker demo: off unless a test turns its own on.
DEMO_URL_ENVS = ("ANTIDOTE_AMQP_URL", "ANTIDOTE_NATS_URL", "ANTIDOTE_REDIS_STREAMS_URL")


def demo_dirs_own(settings, tmp_path, monkeypatch):
    """The demo's var/ a test's own, fast password hashes, and no broker demo but the one a test
    turns on, whatever the shell has set."""
    settings.VAR_DIR = tmp_path / "var"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    for name in DEMO_URL_ENVS:
        monkeypatch.delenv(name, raising=False)


def demo_seeded(settings, tmp_path, monkeypatch, *, orders):
    """`manage.py seed_demo --orders N` as the pages and guides read it: into a var/ of the
    test's own, refreshed by the test (not on each commit), with an empty cache."""
    demo_dirs_own(settings, tmp_path, monkeypatch)
    settings.REFRESH_ON_COMMIT = False
    cache.clear()
    call_command("seed_demo", "--orders", str(orders), stdout=StringIO())


@pytest.fixture
def demo_dirs(settings, tmp_path, lake_root, monkeypatch):
    """The demo seeded into a var/ and a lake of the test's own, with fast password hashes, and
    no broker demo but the one a test turns on, whatever the shell has set."""
    demo_dirs_own(settings, tmp_path, monkeypatch)
