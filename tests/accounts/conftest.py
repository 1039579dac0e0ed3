import pytest


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # PBKDF2 at full strength costs a second per user; these tests check who gets which
    # password, not the hasher.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
