"""What notes does when the read models change: a refresh that brings a failure after a group
was resolved reopens the group, in the refresh's own transaction (console.notes.lifecycle)."""

from django.dispatch import receiver

from console.notes.lifecycle import groups_reopen_recurring
from console.readmodels.signals import groups_refreshed


@receiver(groups_refreshed, dispatch_uid="notes.groups_reopen")
def _groups_reopen(sender, **kwargs):
    groups_reopen_recurring()
