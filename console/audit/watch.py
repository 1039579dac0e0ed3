"""The audit chain walked by the scheduler and by the "verify now" button: a broken chain is
told to whoever listens (the alerts, to auditors), not only to whoever happens to look."""

from console.audit.selectors import audit_verify
from console.audit.signals import verify_failed


def audit_verify_watched():
    """audit_verify(), and the verify_failed signal when the chain is not intact."""
    result = audit_verify()
    if not result.ok:
        verify_failed.send(sender=audit_verify_watched, result=result)
    return result
