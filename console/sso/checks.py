"""`manage.py check` (and every process's start) refuses a sign-in configuration that cannot
work, rather than the first person's sign-in finding out."""

from django.conf import settings
from django.core import checks

from console.sso.mapping import GroupRolesError, group_roles


@checks.register(checks.Tags.security)
def sso_configuration(app_configs, **kwargs):
    errors = []
    if settings.SSO_GROUP_ROLES:
        try:
            group_roles()
        except GroupRolesError as error:
            errors.append(checks.Error(str(error), id="sso.E001"))
    if settings.OIDC_ISSUER and not (settings.OIDC_CLIENT_ID and settings.OIDC_CLIENT_SECRET):
        errors.append(
            checks.Error(
                "OIDC_ISSUER is set: OIDC_CLIENT_ID and OIDC_CLIENT_SECRET are needed too",
                id="sso.E002",
            )
        )
    if settings.LDAP_SERVER_URI:
        try:
            import django_auth_ldap  # noqa: F401
            import ldap  # noqa: F401
        except ImportError:
            errors.append(
                checks.Error(
                    "LDAP_SERVER_URI is set but django-auth-ldap and python-ldap are not "
                    "installed: pip install -r requirements-ldap.txt (python-ldap builds against "
                    "OpenLDAP's headers: Debian's libldap2-dev and libsasl2-dev)",
                    id="sso.E003",
                )
            )
    if not settings.LOCAL_PASSWORDS and not settings.LOCAL_PASSWORD_USERS:
        errors.append(
            checks.Warning(
                "LOCAL_PASSWORDS is off and LOCAL_PASSWORD_USERS names nobody: when the sign-in "
                "provider cannot be reached, nobody can sign in",
                id="sso.W001",
            )
        )
    return errors
