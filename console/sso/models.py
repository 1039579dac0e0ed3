"""Who a person is at a sign-in provider, for the account that person has here."""

from django.conf import settings
from django.db import models


class ProviderAccount(models.Model):
    """The link between an account here and one identity at a provider: the OpenID provider's
    subject (`sub`), or the directory's distinguished name. A sign-in finds its account by this
    link, never by a user name alone (a provider's "admin" is not our local admin)."""

    OIDC = "oidc"
    LDAP = "ldap"
    PROVIDERS = [(OIDC, "OpenID Connect"), (LDAP, "LDAP")]

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="provider_account"
    )
    provider = models.CharField(max_length=10, choices=PROVIDERS)
    subject = models.CharField(max_length=255)
    # The groups each sign-in saw are in its audit entry (sso.signed_in), and when it was in the
    # user's last_login: not kept here a second time.
    # Deactivated because the provider refused the person: a later sign-in the provider accepts
    # makes the account active again. An account an administrator deactivated stays so.
    deactivated_by_provider = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["provider", "subject"], name="uq_provider_subject"),
        ]

    def __str__(self):
        return f"{self.provider}:{self.subject} for user {self.user_id}"
