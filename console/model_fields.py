"""Model fields that several apps' tables share, each written once."""

from django.conf import settings
from django.db import models


def person(*, optional=False):
    """A person a record names (who asked, decided, ended, changed it): they stay while it names
    them (an account is deactivated, never deleted under its records), and users get no reverse
    accessor. `optional`: nobody yet, or nobody at all (the product itself)."""
    return models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="+",
        null=optional,
        blank=optional,
    )
