"""One's own account, read: the roles one holds, where each came from, and what each lets one
do, in words."""

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import Group

from console.access.models import ProviderRole, RoleGrant
from console.access.selectors import role_permissions


@dataclass(frozen=True)
class HeldRole:
    name: str
    permissions: list  # what it lets one do, in words
    # Where it came from: the grant that gave it (the administrator who granted it, the second
    # one who confirmed it, when), or None for a role given without a grant (one that needs no
    # confirmation, the demo's accounts, Django's admin).
    granted_by: str | None = None
    confirmed_by: str | None = None
    granted_at: datetime | None = None
    # Or a sign-in provider ("oidc", "ldap") put them in groups that give it (console.sso): held
    # while they are in one of those groups.
    provider: str | None = None
    groups: tuple = ()

    @property
    def provider_name(self):
        return {"oidc": "your OpenID provider", "ldap": "your directory (LDAP)"}.get(
            self.provider, self.provider
        )


def account_roles(user):
    """Each role `user` holds, by name, with where it came from and its permissions in words."""
    held = []
    from_provider = {
        r.role_id: r for r in ProviderRole.objects.select_related("confirmed_by").filter(user=user)
    }
    for role in Group.objects.filter(user=user).order_by("name"):
        if (given := from_provider.get(role.id)) is not None:
            held.append(
                HeldRole(
                    name=role.name,
                    permissions=role_permissions(role),
                    provider=given.provider,
                    groups=tuple(given.groups),
                    confirmed_by=given.confirmed_by.get_username() if given.confirmed_by else None,
                    granted_at=given.since,
                )
            )
            continue
        grant = (
            RoleGrant.objects.select_related("requested_by", "decided_by")
            .filter(user=user, role=role, status=RoleGrant.CONFIRMED)
            .order_by("-decided_at")
            .first()
        )
        where = {}
        if grant is not None:
            where = {
                "granted_by": grant.asked_by,
                "confirmed_by": grant.decided_by.get_username() if grant.decided_by else None,
                "granted_at": grant.decided_at,
            }
        held.append(HeldRole(name=role.name, permissions=role_permissions(role), **where))
    return held
