"""manage.py ingest PATH [PATH ...]: ingest JSON Lines, JSON or Parquet files.

A directory stands for the files in it that ingest reads (*.jsonl, *.json, *.parquet, no dotfiles,
not recursive). Files are left where they are; the inbox folder is what moves files aside. The
exit status is 1 if any record was refused, so a script notices.
"""

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from console.ingest.services import ingest_candidates, ingest_file

ERRORS_SHOWN = 20


class Command(BaseCommand):
    help = "Ingest messages from JSON Lines, JSON or Parquet files, or every such file in a folder."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", metavar="PATH", help="a file or a directory")

    def handle(self, *args, paths, **options):
        files = []
        for name in paths:
            path = Path(name)
            if path.is_dir():
                files.extend(ingest_candidates(path))
            elif path.is_file():
                files.append(path)
            else:
                raise CommandError(f"{name}: no such file or directory")

        refused = 0
        for path in files:
            started = time.monotonic()
            result = ingest_file(path=path, source=f"cli:{path.name}")
            seconds = time.monotonic() - started
            refused += result.refused
            self.stdout.write(
                f"{path}: {result.accepted} accepted, {result.duplicates} duplicates, "
                f"{result.refused} refused ({seconds:.1f} s)"
            )
            for error in result.errors[:ERRORS_SHOWN]:
                self.stdout.write(f"  {error}")
            if result.refused > ERRORS_SHOWN:
                self.stdout.write(f"  ... and {result.refused - ERRORS_SHOWN} more")
        if refused:
            raise CommandError(f"{refused} record(s) refused", returncode=1)
