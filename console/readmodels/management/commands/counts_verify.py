import json

from django.core.management.base import BaseCommand, CommandError

from console.readmodels.models import CountsCheck
from console.readmodels.verify import counts_verify


class Command(BaseCommand):
    help = (
        "Recount every count the console shows (queues by state, failure groups, hourly flows, "
        "the message index) from the lake and compare. Exits 1 when they differ and were not "
        "repaired."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--repair",
            action="store_true",
            help="load the recount where they differ (audited), as a full refresh would",
        )
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="print the check as JSON"
        )

    def handle(self, *args, repair=False, as_json=False, **options):
        check = counts_verify(repair=repair, actor="manage.py counts_verify")
        if as_json:
            self.stdout.write(_json(check))
        else:
            self._print(check)
        if check.status == CountsCheck.BUSY:
            raise CommandError(check.error, returncode=2)
        if check.status == CountsCheck.DRIFT:
            raise CommandError(
                f"{check.differences:,} count(s) differ from the lake; "
                "run with --repair to load the recount",
                returncode=1,
            )

    def _print(self, check):
        upto = "nothing refreshed yet" if check.upto_commit is None else check.upto_commit
        self.stdout.write(
            f"counts check {check.id}: {check.messages:,} messages recounted, "
            f"read models as of events commit {upto}"
        )
        if not check.differences:
            self.stdout.write("every count agrees with the lake")
            return
        self.stdout.write(f"{check.differences:,} count(s) differ:")
        rows = [("what", "key", "shown", "recounted")] + [
            (d["what"], d["key"], _cell(d["shown"]), _cell(d["recounted"])) for d in check.drift
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        for row in rows:
            cells = [c.ljust(w) for c, w in zip(row[:3], widths, strict=True)]
            self.stdout.write("  ".join([*cells, row[3]]).rstrip())
        if check.differences > len(check.drift):
            self.stdout.write(f"... and {check.differences - len(check.drift):,} more")
        if check.status == CountsCheck.REPAIRED:
            self.stdout.write("repaired: the read models now hold the recount (audited)")


def _cell(value):
    if value is None:
        return "(none)"
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items()) or "(none)"
    return str(value)


def _json(check):
    return json.dumps(
        {
            "id": check.id,
            "status": check.status,
            "upto_commit": check.upto_commit,
            "messages": check.messages,
            "differences": check.differences,
            "drift": check.drift,
            "repaired": check.status == CountsCheck.REPAIRED,
        },
        indent=2,
        default=str,
    )
