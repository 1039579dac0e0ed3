"""Message states and the transitions SEMANTICS.md allows; nothing else may be recorded."""

TBDL = "TBDL"
WAIT = "WAIT"
DLNG = "DLNG"
DLVD = "DLVD"
NDLV = "NDLV"
FAIL = "FAIL"
ENDED = "ENDED"

STATES = (TBDL, WAIT, DLNG, DLVD, NDLV, FAIL, ENDED)
FINAL_STATES = frozenset({DLVD, FAIL, ENDED})
# What ending a conversation with an error ends besides the messages ended (R13, and R6's return
# to sender): its others that are not final. DLNG is left to its delivery run; it is not
# "waiting" for anything.
OPEN_STATES = (TBDL, WAIT, NDLV)
# What needs someone's attention, most urgent first: quarantined (a person must decide), then
# waiting for a retry. The console ranks failure groups by these.
ATTENTION_STATES = (NDLV, WAIT)

# None is "not yet known to the product": ingest creates a message as TBDL (R1).
ALLOWED_TRANSITIONS = frozenset(
    {
        (None, TBDL),
        (TBDL, DLNG),
        (DLNG, DLVD),
        (DLNG, WAIT),
        (DLNG, NDLV),
        (DLNG, TBDL),
        (WAIT, TBDL),
        (NDLV, TBDL),
        (NDLV, FAIL),
        (NDLV, ENDED),
        (TBDL, ENDED),
        (WAIT, ENDED),
    }
)


def is_allowed(from_state, to_state):
    return (from_state, to_state) in ALLOWED_TRANSITIONS


# A failure is an attempt that did not deliver: DLNG left for WAIT (a retry), NDLV (quarantine,
# the poison list) or TBDL (a crash, or a move to the exception queue). Ingest and decisions are
# not failures, nor is a message a run claimed and handed back without attempting it (attempt 0,
# R11). The refresh job says the same in Spark (workers.jobs.refresh).
FAILED_TO = frozenset({WAIT, NDLV, TBDL})


def is_failure(from_state, to_state, attempt):
    return from_state == DLNG and to_state in FAILED_TO and bool(attempt)


# What the console counts per queue and hour (the read model QuarantineInflow, the dashboard's
# charts): messages that entered quarantine (NDLV), that left it (a decision: reprocessed, failed
# or ended), that were delivered, and failed attempts (is_failure). One event may count in two
# (a failed attempt that quarantines).
FLOW_QUARANTINED = "quarantined"
FLOW_RELEASED = "released"
FLOW_DELIVERED = "delivered"
FLOW_FAILED = "failed"
FLOWS = (FLOW_QUARANTINED, FLOW_RELEASED, FLOW_DELIVERED, FLOW_FAILED)

# Reasons people read in the console; tests match them exactly.
REASON_CRASH = "in flight when a worker crashed"
REASON_FATAL = "fatal error in handler"
REASON_BLACKLISTED = "blacklisted: in flight during two worker crashes"
REASON_POISON_LIST = "on the poison list"
REASON_MAX_FAILED = "maximum failed deliveries reached"
REASON_PERMANENT = "permanent failure"
REASON_TIMEOUT = "handler timed out"
REASON_CONVERSATION_ENDED = "conversation ended with an error"
REASON_DUE = "retry is due"
REASON_NOT_ATTEMPTED = "not attempted: its queue was disabled during the run"
REASON_RETURNED = "returned to sender"
