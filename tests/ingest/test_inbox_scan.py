import json

import pytest

from console.ingest.models import InboxFile, MessageKey
from console.ingest.services import inbox_scan
from console.queues.models import Queue
from tests.ingest.conftest import lake_events, settle

pytestmark = pytest.mark.django_db


def _drop(inbox, name, *records):
    path = inbox / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return settle(path)


def test_it_ingests_a_file_and_moves_it_to_processed(orders, inbox):
    _drop(inbox, "a.jsonl", {"id": "m-1", "queue": "orders", "body": "x"})

    [outcome] = inbox_scan()

    assert (outcome.name, outcome.status, outcome.result.accepted) == ("a.jsonl", "processed", 1)
    assert not (inbox / "a.jsonl").exists()
    assert (inbox / "processed" / "a.jsonl").exists()
    record = InboxFile.objects.get()
    assert (record.name, record.accepted, record.rejected) == ("a.jsonl", 1, 0)
    assert lake_events()[0]["actor"] == "inbox:a.jsonl"


def test_it_does_not_take_the_same_file_twice(orders, inbox):
    record = {"id": "m-1", "queue": "orders", "body": "x"}
    _drop(inbox, "a.jsonl", record)
    inbox_scan()

    _drop(inbox, "a.jsonl", record)
    [outcome] = inbox_scan()

    assert outcome.status == "already taken"
    assert outcome.result is None
    assert InboxFile.objects.count() == 1
    assert len(lake_events()) == 1
    moved = [p.name for p in (inbox / "processed").iterdir()]
    assert "a.jsonl" in moved
    assert len(moved) == 2
    assert not (inbox / "a.jsonl").exists()


def test_it_takes_the_good_lines_and_lists_the_bad_ones(orders, inbox):
    path = inbox / "mixed.jsonl"
    path.write_bytes(
        b'{"id": "m-1", "queue": "orders", "body": "x"}\n'
        b"\xff\xfe\n"
        b'{"id": "m-3", "queue": "orders", "body": "z"}\n'
    )
    settle(path)

    [outcome] = inbox_scan()

    assert outcome.status == "processed"
    assert (outcome.result.accepted, outcome.result.refused) == (2, 1)
    errors = (inbox / "processed" / "mixed.jsonl.errors.txt").read_text()
    assert errors == "line 2: not valid UTF-8\n"
    assert InboxFile.objects.get().errors == [{"line": 2, "id": None, "error": "not valid UTF-8"}]


def test_it_moves_a_file_with_nothing_readable_to_failed_with_its_errors(orders, inbox):
    path = inbox / "junk.jsonl"
    path.write_bytes(b"not json\n\xff\n")
    settle(path)

    [outcome] = inbox_scan()

    assert outcome.status == "failed"
    assert (inbox / "failed" / "junk.jsonl").exists()
    errors = (inbox / "failed" / "junk.jsonl.errors.txt").read_text().splitlines()
    assert errors[0].startswith("line 1: not valid JSON")
    assert errors[1] == "line 2: not valid UTF-8"


def test_it_takes_a_failed_file_again_once_its_queue_exists(orders, inbox):
    record = {"id": "m-1", "queue": "invoices", "body": "x"}
    _drop(inbox, "a.jsonl", record)
    [first] = inbox_scan()
    Queue.objects.create(name="invoices", handler="workers.demo.handlers.noop")

    _drop(inbox, "a.jsonl", record)
    [second] = inbox_scan()

    assert (first.status, second.status) == ("failed", "processed")
    assert MessageKey.objects.get().queue == "invoices"
    assert InboxFile.objects.get().accepted == 1


def test_it_leaves_dotfiles_other_files_and_files_still_being_written(orders, inbox):
    record = {"id": "m-1", "queue": "orders", "body": "x"}
    _drop(inbox, ".hidden.jsonl", record)
    _drop(inbox, "notes.txt", record)
    fresh = inbox / "fresh.jsonl"
    fresh.write_text(json.dumps(record) + "\n")

    assert inbox_scan() == []

    assert {p.name for p in inbox.iterdir()} >= {".hidden.jsonl", "notes.txt", "fresh.jsonl"}
    assert not MessageKey.objects.exists()
