"""manage.py seed_roles: create the six role groups with their permissions (idempotent)."""

from django.core.management.base import BaseCommand

from console.accounts.management.role_commands import as_the_command_line
from console.accounts.roles import roles_seed


class Command(BaseCommand):
    help = (
        "Create the role groups (viewer, operator, approver, admin, auditor, application) and "
        "their permissions."
    )

    def handle(self, *args, **options):
        result = as_the_command_line(roles_seed)
        for role, (created, count) in result.items():
            status = "created" if created else "up to date"
            self.stdout.write(f"{role:<9} {status:<10} {count} permission(s)")
