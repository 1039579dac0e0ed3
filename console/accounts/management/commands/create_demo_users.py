"""manage.py create_demo_users: one user per role, with passwords printed once."""

from django.core.management.base import BaseCommand, CommandError

from console.access.actor import acting_as, cli_actor
from console.accounts.roles import RoleError
from console.accounts.services import demo_users_create


class Command(BaseCommand):
    help = (
        "Create one demo user per role (viewer, operator, approver, admin, auditor, application) "
        "and print their passwords. Existing demo users get a fresh password."
    )

    def handle(self, *args, **options):
        try:
            with acting_as(cli_actor()):
                users = demo_users_create()
        except RoleError as exc:
            raise CommandError(str(exc)) from exc
        rows = [("user", "role", "password", "")]
        rows += [
            (u.username, u.role, u.password, "created" if u.created else "password reset")
            for u in users
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        for index, row in enumerate(rows):
            line = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
            self.stdout.write(line.rstrip())
            if index == 0:
                self.stdout.write("  ".join("-" * w for w in widths[:3]))
        self.stdout.write("These passwords are shown once; run the command again for new ones.")
