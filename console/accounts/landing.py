"""Where a person lands after signing in, for the login page, company sign-in and the
console's home alike."""

from django.shortcuts import resolve_url

from console.permissions import VIEW_AUDIT, VIEW_STATS


def landing_url(user):
    """Where a user lands after logging in: the first of the dashboard, the audit trail (the
    auditor role) and My account that does not refuse them. My account takes those who see
    neither (a person whose role waits for a second administrator, or a service account's
    session): it says which roles they hold, what each lets them do, and where the API's
    documentation is, where the dashboard would only say "Not allowed"."""
    if user.has_perm(VIEW_STATS):
        return resolve_url("dashboard")
    if user.has_perm(VIEW_AUDIT):
        return resolve_url("audit-list")
    return resolve_url("my-account")
