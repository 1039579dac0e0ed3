"""A queue's delivery policy (SEMANTICS.md), validated in one place.

The Django model, `manage.py load_queues` and the Spark job all build a QueuePolicy through
`policy_from_mapping`, so a setting means the same thing everywhere and a bad one is refused
with the same message everywhere.
"""

import json
import re
from dataclasses import asdict, dataclass, field

QUEUE_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")

EXCEPTION_QUARANTINE = "quarantine"
EXCEPTION_NONE = "none"
EXCEPTION_QUEUE_PREFIX = "queue:"

ON_PERMANENT_CHOICES = ("quarantine", "return_to_sender")
POISON_MATCH_CHOICES = ("id", "id_or_body")

DEFAULTS = {
    "max_failed_deliveries": 5,
    "exception_destination": EXCEPTION_QUARANTINE,
    "blocked_retry_timeout": 60,
    "backoff_every": 1,
    "backoff_delays": [60, 300, 900, 1800],
    "periodic_interval": 900,
    "on_permanent": "quarantine",
    "poison_match": "id",
    "disable_after": 0,
    "retention_days": 30,
}
# Header names a queue keeps out of people's edits: at most this many, each at most this long.
LOCKED_HEADERS_MAX = 100
LOCKED_HEADER_NAME_MAX = 255


class PolicyError(ValueError):
    """A policy setting is invalid; the message names the field and says why."""


@dataclass(frozen=True)
class QueuePolicy:
    name: str
    handler: str
    max_failed_deliveries: int = DEFAULTS["max_failed_deliveries"]
    exception_destination: str = DEFAULTS["exception_destination"]
    blocked_retry_timeout: int = DEFAULTS["blocked_retry_timeout"]
    backoff_every: int = DEFAULTS["backoff_every"]
    backoff_delays: tuple = tuple(DEFAULTS["backoff_delays"])
    periodic_interval: int = DEFAULTS["periodic_interval"]
    on_permanent: str = DEFAULTS["on_permanent"]
    poison_match: str = DEFAULTS["poison_match"]
    disable_after: int = DEFAULTS["disable_after"]
    retention_days: int = DEFAULTS["retention_days"]
    # Settings for a configurable handler (workers.engine.handlers.configurable), such as the
    # exchange a redrive publishes to. Never secrets: those come from the environment.
    handler_options: dict = field(default_factory=dict, hash=False)
    # Header names (in any case) an edit of one of the queue's messages keeps as they are
    # (console.decisions.header_edits): what its consumers trust, a tenant or a signature.
    locked_headers: tuple = ()
    enabled: bool = True
    # Failed attempts in a row on this queue before this run (R11).
    consecutive_failures: int = field(default=0, compare=False)

    @property
    def exception_queue(self):
        if self.exception_destination.startswith(EXCEPTION_QUEUE_PREFIX):
            return self.exception_destination[len(EXCEPTION_QUEUE_PREFIX) :]
        return None

    def as_dict(self):
        data = asdict(self)
        data["backoff_delays"] = list(self.backoff_delays)
        data["locked_headers"] = list(self.locked_headers)
        return data


def _nonnegative_int(data, name, *, minimum=0):
    value = data.get(name, DEFAULTS.get(name))
    if isinstance(value, bool) or not isinstance(value, int):
        raise PolicyError(f"{name}: must be an integer, not {value!r}")
    if value < minimum:
        raise PolicyError(f"{name}: must be at least {minimum}, not {value}")
    return value


def validate_queue_name(name):
    if not isinstance(name, str) or not QUEUE_NAME_RE.match(name):
        raise PolicyError(
            f"name: {name!r} is not a queue name (letters, digits, '.', '_' and '-', at most 100)"
        )
    return name


def validate_exception_destination(value):
    if value in (EXCEPTION_QUARANTINE, EXCEPTION_NONE):
        return value
    if isinstance(value, str) and value.startswith(EXCEPTION_QUEUE_PREFIX):
        validate_queue_name(value[len(EXCEPTION_QUEUE_PREFIX) :])
        return value
    raise PolicyError(
        f"exception_destination: must be 'quarantine', 'none' or 'queue:<name>', not {value!r}"
    )


def validate_backoff_delays(value):
    if not isinstance(value, list | tuple):
        raise PolicyError(f"backoff_delays: must be a list of seconds, not {value!r}")
    for delay in value:
        if isinstance(delay, bool) or not isinstance(delay, int) or delay < 0:
            raise PolicyError(f"backoff_delays: {delay!r} is not a number of seconds (>= 0)")
    return tuple(value)


def validate_handler_options(value):
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise PolicyError(f"handler_options: must be a mapping of names to values, not {value!r}")
    try:
        json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise PolicyError(
            f"handler_options: must hold plain values (text, numbers): {exc}"
        ) from None
    return dict(value)


def validate_locked_headers(value):
    if value is None:
        return ()
    if (
        not isinstance(value, list | tuple)
        or len(value) > LOCKED_HEADERS_MAX
        or not all(
            isinstance(name, str) and name.strip() and len(name) <= LOCKED_HEADER_NAME_MAX
            for name in value
        )
    ):
        raise PolicyError(
            f"locked_headers: must be a list of at most {LOCKED_HEADERS_MAX} header names, each "
            f"1 to {LOCKED_HEADER_NAME_MAX} characters, not {value!r}"
        )
    return tuple(value)


def policy_from_mapping(data):
    """Build a QueuePolicy from field names as in SEMANTICS.md; raise PolicyError when invalid."""
    unknown = set(data) - set(QueuePolicy.__dataclass_fields__)
    if unknown:
        raise PolicyError(f"unknown field(s): {', '.join(sorted(unknown))}")
    name = validate_queue_name(data.get("name"))
    handler = data.get("handler")
    if not isinstance(handler, str) or not handler:
        raise PolicyError("handler: a dotted path such as 'package.module.function' is required")
    on_permanent = data.get("on_permanent", DEFAULTS["on_permanent"])
    if on_permanent not in ON_PERMANENT_CHOICES:
        raise PolicyError(
            f"on_permanent: must be one of {ON_PERMANENT_CHOICES}, not {on_permanent!r}"
        )
    poison_match = data.get("poison_match", DEFAULTS["poison_match"])
    if poison_match not in POISON_MATCH_CHOICES:
        raise PolicyError(
            f"poison_match: must be one of {POISON_MATCH_CHOICES}, not {poison_match!r}"
        )
    enabled = data.get("enabled", True)
    if not isinstance(enabled, bool):
        raise PolicyError(f"enabled: must be true or false, not {enabled!r}")
    return QueuePolicy(
        name=name,
        handler=handler,
        max_failed_deliveries=_nonnegative_int(data, "max_failed_deliveries"),
        exception_destination=validate_exception_destination(
            data.get("exception_destination", DEFAULTS["exception_destination"])
        ),
        blocked_retry_timeout=_nonnegative_int(data, "blocked_retry_timeout"),
        backoff_every=_nonnegative_int(data, "backoff_every", minimum=1),
        backoff_delays=validate_backoff_delays(
            data.get("backoff_delays", DEFAULTS["backoff_delays"])
        ),
        periodic_interval=_nonnegative_int(data, "periodic_interval", minimum=1),
        on_permanent=on_permanent,
        poison_match=poison_match,
        disable_after=_nonnegative_int(data, "disable_after"),
        retention_days=_nonnegative_int(data, "retention_days", minimum=1),
        handler_options=validate_handler_options(data.get("handler_options")),
        locked_headers=validate_locked_headers(data.get("locked_headers")),
        enabled=enabled,
        consecutive_failures=data.get("consecutive_failures", 0),
    )
