"""What apps above the browser say of a message's events on its page: a standing rule that made
the request behind an event, or sent it to another queue (console.rules).

They sit a layer above (pyproject.toml, docs/architecture.md): the browser may not import them,
so it says here what it asks, and each hands its function over when Django starts, as the read
models hand the queues their counts (console/queues/counts.py)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class HistoryNote:
    """A line beside an event of the history, with the page that says more."""

    text: str
    url: str


_providers = []


def provide(notes):
    """Called once per app at start-up: `notes(run_ids)` answers {run_id: [HistoryNote]} for the
    events' runs it has something to say of ("request:12")."""
    if notes not in _providers:
        _providers.append(notes)


def history_notes_attach(history):
    """Set "notes" ([HistoryNote], maybe none) on each event of `history` (a message's, as
    console.delivery.selectors.message_history reads it), in place."""
    run_ids = {e["run_id"] for e in history if e.get("run_id")}
    notes = {}
    for notes_of in _providers if run_ids else ():
        for run_id, said in notes_of(run_ids).items():
            notes.setdefault(run_id, []).extend(said)
    for event in history:
        event["notes"] = notes.get(event.get("run_id"), [])
    return history
