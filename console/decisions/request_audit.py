"""An action request's entries in the audit trail: each names the request alike, whoever acts."""

from console.audit.services import audit_record


def request_audit(request, action, *, actor, details):
    """Records `action` (e.g. "request.created") on `request`, by `actor`, with `details`."""
    audit_record(
        actor=actor, action=action, target_type="request", target_id=request.id, details=details
    )
