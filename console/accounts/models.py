"""API tokens. Roles are Django groups (console.accounts.roles): no model of their own."""

from django.conf import settings
from django.db import models
from django.utils import timezone
from knox.models import AbstractAuthToken
from knox.settings import CONSTANTS

NAME_MAX = 100


class ApiToken(AbstractAuthToken):
    """A token for the API, as knox keeps it: only its SHA-512 digest and the first characters of
    the token (`token_key`, to find it and to name it on screens). The token itself is shown once
    and stored nowhere.

    Revoking a token deletes its row, as knox does when one expires: the list shows the tokens
    that still open the API, and the audit trail keeps who made and revoked each (by name and key).
    """

    # Unique, where knox only indexes it: the screens and the API name a token by its key. Sixty
    # random bits: two tokens sharing one is not to be expected.
    token_key = models.CharField(
        max_length=CONSTANTS.MAXIMUM_TOKEN_PREFIX_LENGTH + CONSTANTS.TOKEN_KEY_LENGTH, unique=True
    )
    name = models.CharField(max_length=NAME_MAX, help_text="What the token is for.")
    last_used_at = models.DateTimeField(null=True, blank=True)
    # An administrator, for a service account's token; nobody, for one made by a command.
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created"]

    @property
    def expired(self):
        return self.expiry is not None and self.expiry <= timezone.now()

    def __str__(self):
        return f"{self.token_key} ({self.name}) of {self.user}"


class AddressThrottle(models.Model):
    """An address slowed down for too many failed logins, whatever the names it tried
    (console.accounts.lockouts). Its failures are django-axes' AccessAttempt rows: this only
    records when the throttle started and the latest attempt from it let through to a password
    check, which the next one has to wait after. One row per address."""

    ip_address = models.GenericIPAddressField(unique=True)
    started_at = models.DateTimeField()
    last_attempt_at = models.DateTimeField()

    def __str__(self):
        return f"{self.ip_address} slowed down since {self.started_at:%Y-%m-%d %H:%M:%S}"
