import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from console.ingest.models import MessageKey

pytestmark = pytest.mark.django_db


def _write(path, *records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_it_ingests_a_file_and_exits_zero(orders, tmp_path, capsys):
    path = _write(tmp_path / "a.jsonl", {"id": "m-1", "queue": "orders", "body": "x"})

    call_command("ingest", str(path))

    assert "a.jsonl: 1 accepted, 0 duplicates, 0 refused" in capsys.readouterr().out
    assert MessageKey.objects.filter(message_id="m-1").exists()


def test_it_ingests_every_file_of_a_directory(orders, tmp_path, capsys):
    _write(tmp_path / "a.jsonl", {"id": "m-1", "queue": "orders", "body": "x"})
    _write(tmp_path / "b.json", {"id": "m-2", "queue": "orders", "body": "y"})
    _write(tmp_path / "c.txt", {"id": "m-3", "queue": "orders", "body": "z"})

    call_command("ingest", str(tmp_path))

    assert set(MessageKey.objects.values_list("message_id", flat=True)) == {"m-1", "m-2"}
    assert (tmp_path / "a.jsonl").exists()


def test_it_exits_one_and_lists_refused_lines(orders, tmp_path, capsys):
    path = _write(
        tmp_path / "a.jsonl",
        {"id": "m-1", "queue": "orders", "body": "x"},
        {"id": "m-2", "queue": "nope", "body": "y"},
    )

    # run_from_argv turns this into the process's exit status (it also closes the test's
    # database connection, so the test stops one step before it).
    with pytest.raises(CommandError) as refused:
        call_command("ingest", str(path))

    assert refused.value.returncode == 1
    assert str(refused.value) == "1 record(s) refused"
    out = capsys.readouterr().out
    assert "a.jsonl: 1 accepted, 0 duplicates, 1 refused" in out
    assert "  line 2 (id m-2): unknown queue 'nope'" in out
    assert MessageKey.objects.filter(message_id="m-1").exists()


def test_it_shows_only_the_first_twenty_errors(orders, tmp_path, capsys):
    path = _write(tmp_path / "a.jsonl", *({"id": f"m-{i}", "body": "x"} for i in range(25)))

    with pytest.raises(CommandError):
        call_command("ingest", str(path))

    out = capsys.readouterr().out
    assert out.count("queue is required") == 20
    assert "... and 5 more" in out


def test_it_refuses_a_path_that_does_not_exist(orders, tmp_path):
    with pytest.raises(CommandError, match="no such file or directory"):
        call_command("ingest", str(tmp_path / "missing.jsonl"))
