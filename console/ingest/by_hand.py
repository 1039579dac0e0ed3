"""Messages a person sent in by hand (R19), as their TBDL events name their source: the API
writes "person:<name>" for a person's call, "api:<name>" for a service account's. The message
page (console.browse) reads it back to say so."""

PERSON_SOURCE = "person:"


def person_source(username):
    return f"{PERSON_SOURCE}{username}"


def sent_by_person(history):
    """(who, when) of the person who sent this message in by hand, from its history (oldest
    event first); None when an application, a file or a broker sent it."""
    for event in history:
        if event.get("from_state") is None and (event.get("actor") or "").startswith(PERSON_SOURCE):
            return event["actor"].removeprefix(PERSON_SOURCE), event.get("at")
    return None
