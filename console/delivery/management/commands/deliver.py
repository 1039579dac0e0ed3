from django.core.management.base import BaseCommand, CommandError

from console.delivery.execution import delivery_run


class Command(BaseCommand):
    help = "Run delivery in the foreground: one run, or runs until nothing is due (--until-idle)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--queue",
            action="append",
            dest="queues",
            metavar="Q",
            help="deliver only this queue (repeat for several)",
        )
        parser.add_argument(
            "--until-idle", action="store_true", help="keep running until a run finds nothing due"
        )
        parser.add_argument(
            "--max-runs",
            type=int,
            default=1000,
            help="stop after this many runs with --until-idle (default 1000)",
        )

    def handle(self, *args, queues=None, until_idle=False, max_runs=1000, **options):
        runs = 0
        while True:
            try:
                run = delivery_run(queues=queues)
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
            if run is None:
                raise CommandError(
                    "nothing to deliver now: every enabled queue is held by a running delivery "
                    "run, or none is enabled"
                )
            runs += 1
            states = run.outcomes.get("states", {})
            summary = ", ".join(f"{k} {v}" for k, v in sorted(states.items())) or "nothing due"
            self.stdout.write(f"run {run.id}: {run.claimed} claimed; {summary}")
            for queue, reason in run.outcomes.get("disabled", {}).items():
                self.stdout.write(self.style.WARNING(f"queue {queue}: {reason}"))
            if not until_idle or run.claimed == 0 or runs >= max_runs:
                break
        self.stdout.write(f"{runs} run(s)")
