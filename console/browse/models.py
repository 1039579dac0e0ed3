"""What the browser keeps for a person: the filters they saved on the message list."""

from django.conf import settings
from django.db import models


class SavedFilter(models.Model):
    """A message list's filters (and sort and page size) under a name, its owner's alone. The
    query is the list's own GET parameters, checked again by the list's form when used."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="saved_filters"
    )
    name = models.CharField(max_length=100)
    query = models.CharField(max_length=4000)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="one_saved_filter_per_name")
        ]

    def __str__(self):
        return f"{self.name} ({self.owner})"
