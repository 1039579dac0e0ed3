"""Reads of the lake catalog: which directories a reader may see."""

from dataclasses import dataclass

from console.lake.models import LakeCommit
from workers.lake.history import Generation


def lake_committed(*, idempotency_key):
    return LakeCommit.objects.filter(idempotency_key=idempotency_key).exists()


def lake_newest(dataset):
    """The id of the newest commit of `dataset` in use, or None."""
    return (
        LakeCommit.objects.filter(dataset=dataset, retired=False)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )


def lake_paths(*, dataset):
    return list(
        LakeCommit.objects.filter(dataset=dataset, retired=False)
        .order_by("id")
        .values_list("path", flat=True)
    )


@dataclass(frozen=True)
class StateInputs:
    """What a reader folds to get every message's current state: the newest state snapshot and
    the event commits made after it."""

    snapshot_paths: list
    event_paths: list
    snapshot_id: int | None
    last_event_commit: int | None
    # "open" when snapshot_paths is an open snapshot (lake_due_inputs): only the messages that
    # were not final.
    dataset: str = "state"


def lake_state_inputs():
    snapshot = LakeCommit.objects.filter(dataset="state", retired=False).order_by("-id").first()
    events = LakeCommit.objects.filter(dataset="events", retired=False)
    if snapshot is not None:
        events = events.filter(id__gt=snapshot.covers_upto)
    events = list(events.order_by("id").values_list("id", "path"))
    return StateInputs(
        snapshot_paths=[snapshot.path] if snapshot else [],
        event_paths=[p for _, p in events],
        snapshot_id=snapshot.id if snapshot else None,
        last_event_commit=events[-1][0] if events else (snapshot.covers_upto if snapshot else None),
    )


def lake_due_inputs(*, upto=None):
    """What a reader folds to get the current state of every message that is not final: the
    newest open snapshot and the event commits after it (up to `upto`, when given). A message in
    neither was final when the snapshot was folded and has had no event since (R15), so it is
    final still. With no open snapshot yet, the whole state's inputs (lake_state_inputs)."""
    snapshot = LakeCommit.objects.filter(dataset="open", retired=False).order_by("-id").first()
    if snapshot is None:
        return lake_state_inputs()
    events = LakeCommit.objects.filter(dataset="events", retired=False, id__gt=snapshot.covers_upto)
    if upto is not None:
        events = events.filter(id__lte=upto)
    events = list(events.order_by("id").values_list("id", "path"))
    return StateInputs(
        snapshot_paths=[snapshot.path],
        event_paths=[p for _, p in events],
        snapshot_id=snapshot.id,
        last_event_commit=events[-1][0] if events else snapshot.covers_upto,
        dataset="open",
    )


@dataclass(frozen=True)
class HistoryInputs:
    """What a reader of messages' histories reads: the history generations (Generation), in the
    order of the commits they cover, and the events commits after the newest one's coverage, as
    (id, path, rows) in id order."""

    generations: list
    events: list

    @property
    def covers_upto(self):
        return self.generations[-1].upto if self.generations else 0


def lake_history_generations():
    rows = (
        LakeCommit.objects.filter(dataset="history", retired=False)
        .order_by("covers_upto")
        .values_list("id", "path", "row_count", "buckets", "covers_upto")
    )
    generations, after = [], 0
    for commit_id, path, count, buckets, upto in rows:
        generations.append(Generation(commit_id, path, count, buckets, after, upto))
        after = upto
    return generations


def lake_history_inputs():
    """The history generations, then the events commits after the newest one's coverage. A
    generation committed between the two reads is not listed, and the commits it folded are
    read as events commits: the same rows either way."""
    generations = lake_history_generations()
    covered = generations[-1].upto if generations else 0
    events = (
        LakeCommit.objects.filter(dataset="events", retired=False, id__gt=covered)
        .order_by("id")
        .values_list("id", "path", "row_count")
    )
    return HistoryInputs(generations=generations, events=list(events))


@dataclass(frozen=True)
class PurgeInputs:
    """What a purge reads (console.retention): every message's current state, and every commit
    it may rewrite, as (id, path) in id order. Read under the lake commit lock, so that no
    commit lands between the reads."""

    state: StateInputs
    snapshot_path: str | None  # the newest state snapshot (also state.snapshot_paths)
    events: list  # every events commit up to state.last_event_commit
    messages: list  # every messages commit
    history: list  # every history generation (Generation), in the order of their coverage
    open_snapshot: tuple | None = None  # (id, path) of the newest open snapshot


def lake_purge_inputs():
    state = lake_state_inputs()
    live = LakeCommit.objects.filter(retired=False).order_by("id")
    events = live.filter(dataset="events")
    if state.last_event_commit is not None:
        events = events.filter(id__lte=state.last_event_commit)
    else:
        events = events.none()
    return PurgeInputs(
        state=state,
        snapshot_path=state.snapshot_paths[0] if state.snapshot_paths else None,
        events=list(events.values_list("id", "path")),
        messages=list(live.filter(dataset="messages").values_list("id", "path")),
        history=lake_history_generations(),
        open_snapshot=(
            LakeCommit.objects.filter(dataset="open", retired=False)
            .order_by("-id")
            .values_list("id", "path")
            .first()
        ),
    )
