"""Which provider groups give which of Antidote's roles: a YAML file kept as code, like the
queues (SSO_GROUP_ROLES), read at every sign-in so a change takes effect at the next one.

    oidc:                     # groups as the ID token's groups claim names them
      antidote-operators: [operator]
      antidote-leads: [operator, approver]
    ldap:                     # groups by distinguished name (compared without regard to case)
      cn=antidote-admins,ou=groups,dc=example,dc=com: [admin]
"""

from pathlib import Path

import yaml
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from console.accounts.roles import APPLICATION, ROLES

PROVIDERS = ("oidc", "ldap")
# An application's role is for service accounts with tokens, never a person signing in.
PERSON_ROLES = tuple(r for r in ROLES if r != APPLICATION)


class GroupRolesError(ImproperlyConfigured):
    """The groups-to-roles file cannot be read or says something that is not a mapping."""


def _key(provider, group):
    return group.lower() if provider == "ldap" else group


def group_roles_load(path):
    """{provider: {group: [roles]}} from the file at `path`, checked: a mistake is refused with
    where it is and what was expected, never half applied."""
    try:
        raw = yaml.safe_load(Path(path).read_text())
    except OSError as error:
        raise GroupRolesError(f"SSO_GROUP_ROLES: cannot read {path}: {error.strerror}") from None
    except yaml.YAMLError as error:
        raise GroupRolesError(f"SSO_GROUP_ROLES: {path} is not YAML: {error}") from None
    raw = raw or {}
    if not isinstance(raw, dict):
        raise GroupRolesError(f"SSO_GROUP_ROLES: {path} must map providers to groups")
    mapping = {}
    for provider, groups in raw.items():
        if provider not in PROVIDERS:
            raise GroupRolesError(
                f"SSO_GROUP_ROLES: unknown provider {provider!r} (one of {', '.join(PROVIDERS)})"
            )
        if not isinstance(groups, dict):
            raise GroupRolesError(f"SSO_GROUP_ROLES: {provider} must map groups to roles")
        mapping[provider] = {}
        for group, roles in groups.items():
            roles = [roles] if isinstance(roles, str) else roles
            if not isinstance(roles, list) or not roles:
                raise GroupRolesError(
                    f"SSO_GROUP_ROLES: {provider} group {group!r} must name one role or a list"
                )
            for role in roles:
                if role not in PERSON_ROLES:
                    raise GroupRolesError(
                        f"SSO_GROUP_ROLES: {provider} group {group!r} names {role!r}, not a "
                        f"role a person holds ({', '.join(PERSON_ROLES)})"
                    )
            mapping[provider][_key(provider, str(group))] = list(dict.fromkeys(roles))
    return mapping


def group_roles():
    """The configured mapping, read now; {} when SSO_GROUP_ROLES is unset."""
    if not settings.SSO_GROUP_ROLES:
        return {}
    return group_roles_load(settings.SSO_GROUP_ROLES)


def roles_for(provider, groups):
    """{role: [the person's groups that give it]} for a person in `groups` at `provider`."""
    mapping = group_roles().get(provider, {})
    roles = {}
    for group in groups:
        for role in mapping.get(_key(provider, group), ()):
            roles.setdefault(role, []).append(group)
    return roles
