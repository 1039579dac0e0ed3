"""Signing in with LDAP or Active Directory: django-auth-ldap binds as the configured reader,
finds the person (LDAP_USER_SEARCH_BASE, LDAP_USER_FILTER), checks their password by binding as
them, over STARTTLS (LDAP_START_TLS) or ldaps://, and lists their groups (LDAP_GROUP_SEARCH_BASE,
LDAP_GROUP_TYPE). What a sign-in does here is console.sso.signin's, as for OpenID Connect: the
account found by the person's distinguished name, roles from their groups' distinguished names.

Loaded only when LDAP_SERVER_URI is set: django-auth-ldap needs python-ldap, a C extension built
against OpenLDAP's headers (requirements-ldap.txt)."""

import logging

import ldap
from django.conf import settings
from django_auth_ldap.backend import LDAPBackend
from django_auth_ldap.config import (
    ActiveDirectoryGroupType,
    GroupOfNamesType,
    GroupOfUniqueNamesType,
    LDAPSearch,
    NestedActiveDirectoryGroupType,
    NestedGroupOfNamesType,
    PosixGroupType,
)

from console.sso.oidc import Claims
from console.sso.signin import SignInRefused, provider_sign_in

log = logging.getLogger(__name__)

GROUP_TYPES = {
    "groupOfNames": GroupOfNamesType,
    "nestedGroupOfNames": NestedGroupOfNamesType,
    "groupOfUniqueNames": GroupOfUniqueNamesType,
    "posixGroup": PosixGroupType,
    "activeDirectory": ActiveDirectoryGroupType,
    "nestedActiveDirectory": NestedActiveDirectoryGroupType,
}
# The attributes read for a person: inetOrgPerson's and Active Directory's names.
ATTRIBUTES = ["uid", "sAMAccountName", "cn", "givenName", "sn", "mail", "displayName"]


def connection_options():
    """python-ldap options for every connection: the CA to trust (LDAP_CA_FILE), certificates
    always checked, a network timeout; no referrals chased (Active Directory sends some)."""
    options = {
        ldap.OPT_REFERRALS: 0,
        ldap.OPT_NETWORK_TIMEOUT: settings.LDAP_TIMEOUT_SECONDS,
        ldap.OPT_TIMEOUT: settings.LDAP_TIMEOUT_SECONDS,
        ldap.OPT_X_TLS_REQUIRE_CERT: ldap.OPT_X_TLS_DEMAND,
    }
    if settings.LDAP_CA_FILE:
        options[ldap.OPT_X_TLS_CACERTFILE] = settings.LDAP_CA_FILE
    options[ldap.OPT_X_TLS_NEWCTX] = 0  # last: makes the TLS options above take effect
    return options


def _first(attrs, *names):
    for name in names:
        values = attrs.get(name) or attrs.get(name.lower()) or []
        if values:
            return str(values[0])
    return ""


class DirectoryBackend(LDAPBackend):
    """django-auth-ldap's backend, configured from the LDAP_* settings at each sign-in, whose
    account and roles come from console.sso.signin (never django-auth-ldap's own user
    population, mirroring or group permissions)."""

    # No AUTH_LDAP_* setting is read: the LDAP_* ones below say it all.
    settings_prefix = "ANTIDOTE_LDAP_NOT_USED_"

    @property
    def default_settings(self):
        return {
            "SERVER_URI": settings.LDAP_SERVER_URI,
            "START_TLS": settings.LDAP_START_TLS,
            "CONNECTION_OPTIONS": connection_options(),
            "BIND_DN": settings.LDAP_BIND_DN,
            "BIND_PASSWORD": settings.LDAP_BIND_PASSWORD,
            "USER_SEARCH": LDAPSearch(
                settings.LDAP_USER_SEARCH_BASE,
                ldap.SCOPE_SUBTREE,
                settings.LDAP_USER_FILTER,
                ATTRIBUTES,
            ),
            "GROUP_SEARCH": LDAPSearch(
                settings.LDAP_GROUP_SEARCH_BASE, ldap.SCOPE_SUBTREE, "(objectClass=*)"
            ),
            "GROUP_TYPE": GROUP_TYPES[settings.LDAP_GROUP_TYPE](),
            "ALWAYS_UPDATE_USER": False,  # console.sso.signin keeps the account up to date
            "CACHE_TIMEOUT": 0,
        }

    def authenticate(self, request, username=None, password=None, **kwargs):
        if not settings.LDAP_SERVER_URI:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)

    def get_user(self, user_id):
        # django-auth-ldap's returns an account whatever its state: a session of someone the
        # periodic check deactivated would go on. Django's own backends refuse those.
        user = super().get_user(user_id)
        return user if user is not None and user.is_active else None

    def get_or_build_user(self, username, ldap_user):
        """The person's password is checked: sign them in here (made, updated, roles from their
        groups). A refusal is a failed login, its reason kept for the login page."""
        attrs = ldap_user.attrs
        claims = Claims(
            subject=ldap_user.dn,
            username=(_first(attrs, "uid", "sAMAccountName") or username)[:150],
            email=_first(attrs, "mail")[:254],
            first_name=_first(attrs, "givenName")[:150],
            last_name=_first(attrs, "sn")[:150],
            groups=tuple(sorted(ldap_user.group_dns)),
        )
        try:
            user = provider_sign_in("ldap", claims)
        except SignInRefused as refusal:
            request = ldap_user._request
            if request is not None:
                request.sso_refused = f"You cannot sign in here: {refusal}."
            raise ldap_user.AuthenticationFailed(str(refusal)) from None
        return user, False


def _bound():
    """A connection to the directory as the configured reader, over STARTTLS when asked."""
    connection = ldap.initialize(settings.LDAP_SERVER_URI, bytes_mode=False)
    for option, value in connection_options().items():
        connection.set_option(option, value)
    if settings.LDAP_START_TLS:
        connection.start_tls_s()
    connection.simple_bind_s(settings.LDAP_BIND_DN, settings.LDAP_BIND_PASSWORD)
    return connection


def directory_accounts_check():
    """Every active account that signs in with LDAP, looked up in the directory by its
    distinguished name: one whose entry is gone (the person left) is deactivated, recorded with
    the directory as actor. Returns (accounts checked, deactivated).

    Refuses to judge anyone when the directory cannot be asked, or when the people's search base
    itself is missing (a renamed branch, a wrong setting): that must not deactivate everyone."""
    from console.sso.models import ProviderAccount
    from console.sso.signin import provider_refused

    connection = _bound()
    try:
        connection.search_s(
            settings.LDAP_USER_SEARCH_BASE, ldap.SCOPE_BASE, "(objectClass=*)", ["1.1"]
        )
    except ldap.NO_SUCH_OBJECT:
        raise LookupError(
            f"LDAP_USER_SEARCH_BASE {settings.LDAP_USER_SEARCH_BASE!r} is not in the directory: "
            "no account was judged"
        ) from None
    checked = gone = 0
    links = ProviderAccount.objects.filter(provider="ldap", user__is_active=True).select_related(
        "user"
    )
    for link in links.iterator():
        checked += 1
        try:
            connection.search_s(link.subject, ldap.SCOPE_BASE, "(objectClass=*)", ["1.1"])
        except ldap.NO_SUCH_OBJECT:
            provider_refused(link.user, "ldap", f"the directory no longer has {link.subject}")
            gone += 1
    connection.unbind_s()
    log.info("directory check: %d account(s) checked, %d deactivated", checked, gone)
    return checked, gone
