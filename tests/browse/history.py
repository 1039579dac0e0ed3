"""A message's history as console.browse.selectors.message_history gives it, for the tests that
put one in its place: a worker's delivery attempt unless told otherwise."""


def history_event(from_state, to_state, **fields):
    return {
        "at": None,
        "from_state": from_state,
        "to_state": to_state,
        "queue": "orders",
        "attempt": 1,
        "delivery_count": 0,
        "candidate": False,
        "actor": "worker-7",
        "run_id": "r1",
        "reason": None,
        "stack": None,
        "exception_type": None,
        "next_attempt_at": None,
        **fields,
    }
