from django.core.management.base import BaseCommand, CommandError

from console.audit.selectors import audit_verify


class Command(BaseCommand):
    help = (
        "Check the audit trail's keyed hash chain, its checkpoints and their signed files; "
        "exit 1 on any tampering."
    )

    def handle(self, *args, **options):
        result = audit_verify()
        for problem in result.problems:
            self.stderr.write(problem)
        if not result.ok:
            raise CommandError(
                f"audit trail NOT intact: {len(result.problems)} problem(s) in "
                f"{result.entries} entries"
            )
        self.stdout.write(f"audit trail intact: {result.entries} entries")
