"""manage.py token_create USER --name NAME [--days N]: a service account's API token, printed
once."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from console.access.actor import cli_actor
from console.accounts.tokens.selectors import DAYS_MAX, account_named
from console.accounts.tokens.services import token_create


class Command(BaseCommand):
    help = (
        "Make an API token for a service account (the application role alone, no way to sign "
        "in) and print it once (only its digest is stored). A token acts only for a service "
        "account: never for a person's account. The token is in the audit trail, made by the "
        'server account that ran the command ("cli:<account>").'
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", required=True, help="What the token is for.")
        parser.add_argument(
            "--days",
            type=int,
            help=f"How long it lasts, 1 to {DAYS_MAX} days; API_TOKEN_DAYS (90) by default.",
        )

    def handle(self, *args, username, name, days, **options):
        user = account_named(username)
        if user is None:
            raise CommandError(f"no such user: {username}")
        try:
            token, clear = token_create(actor=cli_actor(), user=user, name=name, days=days)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stderr.write(
            f"Token {token.name!r} for {username}, key {token.token_key}, expires "
            f"{token.expiry:%Y-%m-%d %H:%M} UTC. It is shown once: copy it now."
        )
        self.stdout.write(clear)
