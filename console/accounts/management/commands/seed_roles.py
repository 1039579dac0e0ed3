"""manage.py seed_roles: create the six role groups with their permissions (idempotent)."""

from django.core.management.base import BaseCommand, CommandError

from console.access.actor import acting_as, cli_actor
from console.accounts.roles import RoleError, roles_seed


class Command(BaseCommand):
    help = (
        "Create the role groups (viewer, operator, approver, admin, auditor, application) and "
        "their permissions."
    )

    def handle(self, *args, **options):
        try:
            with acting_as(cli_actor()):
                result = roles_seed()
        except RoleError as exc:
            raise CommandError(str(exc)) from exc
        for role, (created, count) in result.items():
            status = "created" if created else "up to date"
            self.stdout.write(f"{role:<9} {status:<10} {count} permission(s)")
