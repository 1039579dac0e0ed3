from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from console.access.actor import cli_actor
from console.retention.execution import purge_run
from console.retention.services import PurgeBusy


class Command(BaseCommand):
    help = (
        "Purge the final messages (DLVD, FAIL, ENDED) past their queue's retention_days, in the "
        "foreground (R15); --dry-run only counts them."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--dry-run", action="store_true", help="count and hash what would go; change nothing"
        )
        parser.add_argument("--queue", default="", help="only this queue's messages")

    def handle(self, *args, dry_run=False, queue="", **options):
        try:
            purge = purge_run(actor=cli_actor(), dry_run=dry_run, queue=queue)
        except PurgeBusy as exc:
            raise CommandError(str(exc)) from None
        except ValidationError as exc:
            raise CommandError(exc.messages[0]) from None
        if purge is None or purge.status != purge.DONE:
            error = purge.error if purge else "it was taken over by another worker"
            raise CommandError(f"purge {purge.id if purge else ''} did not finish: {error}")
        kind = "would purge" if purge.dry_run else "purged"
        self.stdout.write(f"purge {purge.id} ({purge.now.isoformat()}): {kind} {purge.total}")
        for queue_name, counted in purge.counts.items():
            self.stdout.write(f"  {queue_name}: {counted['count']}  sha256 {counted['sha256']}")
        self.stdout.write(f"ids sha256 {purge.ids_sha256} (ids in the lake at {purge.ids_path})")
