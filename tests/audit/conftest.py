"""An audit trail written through the real service, at times the tests choose."""

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from console.audit import services

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def record(db, monkeypatch):
    """record(action, actor=..., at=..., ...) appends one entry through audit_record; `at`
    defaults to one minute after the previous entry, from T0."""
    clock = {"at": T0 - timedelta(minutes=1)}

    def _record(action="login", *, actor="alice", at=None, **fields):
        clock["at"] = at or clock["at"] + timedelta(minutes=1)
        monkeypatch.setattr(services, "timezone", SimpleNamespace(now=lambda: clock["at"]))
        return services.audit_record(actor=actor, action=action, **fields)

    return _record
