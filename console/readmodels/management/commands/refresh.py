from django.core.management.base import BaseCommand, CommandError

from console.readmodels.execution import read_models_refresh


class Command(BaseCommand):
    help = "Refresh the console's read models in the foreground: the new lake commits, or all."

    def add_arguments(self, parser):
        parser.add_argument(
            "--full",
            action="store_true",
            help="rebuild from the whole ledger, not just new commits",
        )

    def handle(self, *args, full=False, **options):
        run = read_models_refresh(full=full)
        if run is None:
            if full:
                raise CommandError("another refresh is in progress; try again later")
            self.stdout.write("nothing new to refresh (or another refresh is in progress)")
            return
        if run.status != run.COMMITTED:
            raise CommandError(f"refresh {run.id} did not commit: {run.error or run.status}")
        kind = "full" if run.full else f"after commit {run.from_commit}"
        self.stdout.write(
            f"refresh {run.id} ({kind}, up to commit {run.upto_commit}): {run.changed} rows changed"
        )
