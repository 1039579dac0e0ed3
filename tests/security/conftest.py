"""Fixtures shared by the attack tests."""

# Quarantined messages in the index, for requests on them (tests.decisions).
from tests.decisions.conftest import quarantine  # noqa: F401 - a fixture
