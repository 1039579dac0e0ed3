"""The poison list's feed as a running delivery run reads it (R9): hand-written feed files, no
Django, no Spark."""

import os

import pyarrow as pa
import pyarrow.parquet as pq

from workers.engine.poison_feed import (
    FEED_SCHEMA,
    PoisonFeed,
    feed_files,
    feed_prune,
    feed_write,
)

A = "a" * 64
B = "b" * 64


def _file(directory, after, upto, rows, *, written_at=None):
    """A feed file holding `rows` [(cursor, kind, message_id, body_sha256, reason)], written as
    the format says, by hand."""
    directory.mkdir(exist_ok=True)
    path = directory / f"{after:020d}-{upto:020d}.parquet"
    columns = list(zip(*rows, strict=True)) if rows else [[]] * 5
    pq.write_table(pa.Table.from_arrays([pa.array(c) for c in columns], schema=FEED_SCHEMA), path)
    if written_at is not None:
        os.utime(path, (written_at, written_at))
    return path


class Clock:
    def __init__(self, now):
        self.now = now

    def __call__(self):
        return self.now


def test_it_answers_from_the_list_it_was_given(tmp_path):
    feed = PoisonFeed(
        tmp_path / "feed", 7, ids=[("m1", "crashed the billing app")], hashes=[(A, "bad", 1)]
    )

    assert feed.reason("m1", by_body=False) == "crashed the billing app"
    assert feed.reason("m2", A, by_body=False) is None
    assert feed.reason("m2", A, by_body=True) == "same body as a poisoned message: bad"
    assert feed.reason("m2", B, by_body=True) is None
    # No folder yet: nothing to read.
    assert feed.refresh() == 0
    assert feed.cursor == 7


def test_it_applies_additions_removals_and_body_clears_in_cursor_order(tmp_path):
    feed = PoisonFeed(tmp_path, 10, ids=[("m1", "old")], hashes=[(A, "old", 1)])
    _file(
        tmp_path,
        10,
        14,
        [
            # Out of order in the file on purpose: the cursor orders them.
            (13, "removed", "m1", A, "reprocessed (request 4)"),
            (11, "added", "m2", B, "permanent failure"),
            (14, "body_cleared", "m2", B, "a message with this body was reprocessed"),
            (12, "added", "m3", "", "reported by billing"),
        ],
    )

    assert feed.refresh() == 4

    assert feed.cursor == 14
    assert feed.reason("m1", A, by_body=True) is None
    assert feed.reason("m2", by_body=False) == "permanent failure"
    assert feed.reason("other", B, by_body=True) is None
    assert feed.reason("m3", by_body=False) == "reported by billing"


def test_a_body_shared_by_two_entries_poisons_until_neither_carries_it(tmp_path):
    feed = PoisonFeed(tmp_path, 0, ids=[("m1", "r1"), ("m2", "r2")], hashes=[(A, "r2", 2)])
    _file(tmp_path, 0, 1, [(1, "removed", "m1", A, "removed by admin")])
    feed.refresh()

    assert feed.reason("copy", A, by_body=True) == "same body as a poisoned message: r2"

    _file(tmp_path, 1, 2, [(2, "body_cleared", "m2", A, "reprocessed")])
    feed.refresh()

    assert feed.reason("copy", A, by_body=True) is None
    assert feed.reason("m2", A, by_body=True) == "r2"  # still listed by id


def test_a_replaced_entry_counts_its_body_once(tmp_path):
    feed = PoisonFeed(tmp_path, 0, ids=[("m1", "first")], hashes=[(A, "first", 1)])
    _file(
        tmp_path,
        0,
        2,
        [
            (1, "body_cleared", "m1", A, "replaced by a newer entry"),
            (2, "added", "m1", A, "second"),
        ],
    )
    _file(tmp_path, 2, 3, [(3, "removed", "m1", A, "reprocessed")])

    feed.refresh()

    assert feed.reason("m1", A, by_body=True) is None
    assert feed.reason("copy", A, by_body=True) is None


def test_it_reads_only_what_is_after_its_cursor(tmp_path):
    tmp_path.joinpath(f"{0:020d}-{5:020d}.parquet").write_bytes(b"not parquet: never opened")
    _file(tmp_path, 3, 7, [(4, "added", "early", "", "x"), (6, "added", "late", "", "y")])
    feed = PoisonFeed(tmp_path, 5)

    assert feed.refresh() == 1

    assert feed.reason("early", by_body=False) is None
    assert feed.reason("late", by_body=False) == "y"
    # Nothing new: nothing read (the broken file would raise if it were).
    assert feed.refresh() == 0


def test_of_two_files_that_overlap_it_takes_the_one_that_reaches_further(tmp_path):
    _file(tmp_path, 0, 1, [(1, "added", "m1", "", "one")])
    _file(tmp_path, 0, 2, [(1, "added", "m1", "", "one"), (2, "added", "m2", "", "two")])
    feed = PoisonFeed(tmp_path, 0)

    assert feed.refresh() == 2

    assert (feed.cursor, len(feed)) == (2, 2)


def test_it_waits_for_a_late_file_before_going_on(tmp_path):
    clock = Clock(1_000_000.0)
    feed = PoisonFeed(tmp_path, 0, clock=clock, gap_seconds=120)
    _file(tmp_path, 2, 3, [(3, "removed", "m1", "", "removed by admin")], written_at=clock.now)

    assert feed.refresh() == 0
    assert feed.cursor == 0

    _file(tmp_path, 0, 2, [(1, "added", "m1", "", "one"), (2, "added", "m2", "", "two")])

    assert feed.refresh() == 3
    assert feed.reason("m1", by_body=False) is None
    assert feed.reason("m2", by_body=False) == "two"
    assert feed.skipped == []


def test_it_gives_up_on_a_file_that_never_comes(tmp_path):
    clock = Clock(1_000_000.0)
    feed = PoisonFeed(tmp_path, 0, clock=clock, gap_seconds=120)
    _file(tmp_path, 2, 3, [(3, "added", "m3", "", "three")], written_at=clock.now - 60)
    assert feed.refresh() == 0

    clock.now += 61

    assert feed.refresh() == 1
    assert feed.reason("m3", by_body=False) == "three"
    assert feed.skipped == [(0, 2)]


def test_it_ignores_files_being_written_and_strangers(tmp_path):
    _file(tmp_path, 0, 1, [(1, "added", "m1", "", "one")])
    tmp_path.joinpath(f".{1:020d}-{2:020d}.parquet.0f3a.tmp").write_bytes(b"half a file")
    tmp_path.joinpath("notes.txt").write_text("hello")

    assert [name for _, _, name in feed_files(tmp_path)] == [f"{0:020d}-{1:020d}.parquet"]
    feed = PoisonFeed(tmp_path, 0)
    assert feed.refresh() == 1


def test_a_written_file_is_what_a_feed_reads_and_writing_it_again_changes_nothing(tmp_path):
    rows = pa.Table.from_pylist(
        [
            {"cursor": 8, "kind": "added", "message_id": "m8", "body_sha256": B, "reason": "r"},
            {"cursor": 9, "kind": "removed", "message_id": "m1", "body_sha256": "", "reason": ""},
        ],
        schema=FEED_SCHEMA,
    )
    path = feed_write(tmp_path / "feed", 7, 9, [rows.slice(0, 1), rows.slice(1)])
    again = feed_write(tmp_path / "feed", 7, 9, [rows])

    assert path == again
    assert os.listdir(tmp_path / "feed") == [f"{7:020d}-{9:020d}.parquet"]
    feed = PoisonFeed(tmp_path / "feed", 7, ids=[("m1", "old")])
    assert feed.refresh() == 2
    assert feed.reason("m1", by_body=False) is None
    assert feed.reason("x", B, by_body=True) == "same body as a poisoned message: r"


def test_pruning_deletes_only_the_old_files(tmp_path):
    old = _file(tmp_path, 0, 1, [(1, "added", "m1", "", "one")], written_at=1_000)
    new = _file(tmp_path, 1, 2, [(2, "added", "m2", "", "two")], written_at=5_000)

    assert feed_prune(tmp_path, older_than=2_000) == 1

    assert not old.exists()
    assert new.exists()
