"""Django's password check, with local passwords turned off (LOCAL_PASSWORDS=false) for everyone
but the break-glass accounts named in LOCAL_PASSWORD_USERS: the people sign in through their
provider, and one local administrator can still get in when the provider cannot be reached."""

from django.conf import settings
from django.contrib.auth.backends import ModelBackend

from console.access.service_accounts import holds_service_role


def local_password_allowed(username):
    return settings.LOCAL_PASSWORDS or username in settings.LOCAL_PASSWORD_USERS


class LocalPasswordBackend(ModelBackend):
    """Also the backend a provider's sign-in logs people in with (console.sso.views): the
    session's user is looked up here, whatever way they signed in."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is not None and not local_password_allowed(username):
            # Refused before the password is checked: a failed login, audited and counted as one.
            return None
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is not None and holds_service_role(user):
            # A service account acts through its tokens only (R19), whatever password a command
            # may have set on it: a failed login, as any other.
            return None
        return user
