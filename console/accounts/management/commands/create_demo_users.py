"""manage.py create_demo_users: one user per role, with passwords printed once."""

from django.core.management.base import BaseCommand

from console.accounts.management.role_commands import as_the_command_line
from console.accounts.services import demo_users_create

# What the table says for a service account, which has no password.
NO_PASSWORD = "-"  # noqa: S105 - what a table cell says, not a password


class Command(BaseCommand):
    help = (
        "Create one demo user per role (viewer, operator, approver, admin, auditor, application) "
        "and print their passwords. Existing demo users get a fresh password. The application "
        "role's account is a service account: it has none, and calls the API with a token "
        "(the Service tokens page, or manage.py token_create application --name demo)."
    )

    def handle(self, *args, **options):
        users = as_the_command_line(demo_users_create)
        rows = [("user", "role", "password", "")]
        rows += [
            (
                u.username,
                u.role,
                u.password or NO_PASSWORD,
                "created" if u.created else "password reset" if u.password else "",
            )
            for u in users
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        for index, row in enumerate(rows):
            line = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
            self.stdout.write(line.rstrip())
            if index == 0:
                self.stdout.write("  ".join("-" * w for w in widths[:3]))
        self.stdout.write("These passwords are shown once; run the command again for new ones.")
        for u in users:
            if u.password is None:
                self.stdout.write(
                    f"The account {u.username} is a service account: no password, it never "
                    "signs in. It calls the API with a token: "
                    f"manage.py token_create {u.username} --name demo"
                )
