"""manage.py load_queues FILE: queues and their policies as code (JSON or YAML), the broker
sources that feed them, and standing rules proposed for a second person to approve."""

import json
from pathlib import Path

import yaml
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from console.access.actor import cli_actor
from console.queues.services import QueueLoadError, queues_load


def read_queue_file(path):
    """Parse a queue file: JSON when it ends in .json, YAML otherwise (YAML also reads JSON)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"cannot read {path}: {exc}") from exc
    try:
        if path.suffix.lower() == ".json":
            return json.loads(text)
        return yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise CommandError(
            f"{path} is not valid {path.suffix.lstrip('.') or 'YAML'}: {exc}"
        ) from exc


class Command(BaseCommand):
    help = (
        "Create or update queues from a JSON or YAML file: a list of queues, or {queues: [...]}, "
        "with the policy field names of SEMANTICS.md, and the broker sources that feed them "
        "({queues: [...], sources: [...]}), and standing rules ({rules: [...]}), each proposed in "
        "the name of --proposer for a second person to approve in the console. All or nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="path of a .json, .yaml or .yml file")
        parser.add_argument(
            "--proposer",
            help="the username the file's standing rules are proposed by (who may then not "
            "approve them); needed when the file has rules",
        )

    def handle(self, *args, file, proposer=None, **options):
        data = read_queue_file(file)
        person = None
        if proposer:
            person = get_user_model().objects.filter(username=proposer, is_active=True).first()
            if person is None:
                raise CommandError(f"--proposer: there is no active user {proposer!r}")
        try:
            results = queues_load(data=data, actor=cli_actor(), proposer=person)
        except QueueLoadError as exc:
            raise CommandError(
                f"{file}: refused, nothing was changed:\n"
                + "\n".join(f"  - {e}" for e in exc.errors)
            ) from exc
        labels = [r.name if r.kind == "queue" else f"{r.kind} {r.name}" for r in results]
        width = max((len(label) for label in labels), default=0)
        for label, result in zip(labels, results, strict=True):
            line = f"{label:<{width}}  {result.status}"
            if result.changed:
                line += f" ({', '.join(result.changed)})"
            self.stdout.write(line)
        counts = {
            s: sum(r.status == s for r in results if r.kind == "queue")
            for s in ("created", "updated", "unchanged")
        }
        self.stdout.write(
            self.style.SUCCESS(", ".join(f"{n} {status}" for status, n in counts.items()))
        )
