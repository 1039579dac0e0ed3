from django.core.management.base import BaseCommand

from console.audit.checkpoints import checkpoint_dir
from console.audit.services import audit_checkpoint


class Command(BaseCommand):
    help = (
        "Record the audit chain's head, in the database and in a new signed file in "
        "AUDIT_CHECKPOINT_DIR, so that cutting entries off its end is detected."
    )

    def handle(self, *args, **options):
        checkpoint = audit_checkpoint()
        if checkpoint is None:
            self.stdout.write("the audit trail is empty")
        else:
            self.stdout.write(
                f"checkpoint at entry #{checkpoint.seq}, filed in {checkpoint_dir().name}"
            )
