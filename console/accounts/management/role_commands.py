"""What the accounts app's commands share: they change roles and users as the command line."""

from django.core.management.base import CommandError

from console.access.actor import acting_as, cli_actor
from console.accounts.roles import RoleError


def as_the_command_line(service):
    """`service()`, acted as the command line (the audit trail says so); a role refused is the
    command's error, said without a traceback."""
    try:
        with acting_as(cli_actor()):
            return service()
    except RoleError as exc:
        raise CommandError(str(exc)) from exc
