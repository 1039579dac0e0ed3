import pytest

# The environment variable of each broker demo: off unless a test turns its own on.
DEMO_URL_ENVS = ("ANTIDOTE_AMQP_URL", "ANTIDOTE_NATS_URL", "ANTIDOTE_REDIS_STREAMS_URL")


@pytest.fixture
def demo_dirs(settings, tmp_path, lake_root, monkeypatch):
    """The demo seeded into a var/ and a lake of the test's own, with fast password hashes, and
    no broker demo but the one a test turns on, whatever the shell has set."""
    settings.VAR_DIR = tmp_path / "var"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    for name in DEMO_URL_ENVS:
        monkeypatch.delenv(name, raising=False)
