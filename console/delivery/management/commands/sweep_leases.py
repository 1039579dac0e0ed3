from django.core.management.base import BaseCommand

from console.delivery.execution import leases_sweep


class Command(BaseCommand):
    help = "Recover the messages held by delivery runs whose heartbeat stopped (R7)."

    def handle(self, *args, **options):
        recovered = leases_sweep()
        self.stdout.write(f"{recovered} message(s) recovered from dead runs")
