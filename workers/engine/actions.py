"""An administrator's decisions on a quarantined message (R13): their names, as stored in the
console DB and carried by the plan, the words people read, and the state each one leads to.

The console's action requests and the decisions job both take them from here."""

from workers.engine import states as S

REPROCESS = "reprocess"
FAIL = "fail"
END = "end_with_error"

ACTIONS = (REPROCESS, FAIL, END)

# What a person chooses ("reprocess this"), and what the ledger then says was done to it.
LABELS = {REPROCESS: "reprocess", FAIL: "fail", END: "end with error"}
VERBS = {REPROCESS: "reprocessed", FAIL: "failed", END: "ended with an error"}

# The state a decided message (one still NDLV) enters.
TO_STATE = {REPROCESS: S.TBDL, FAIL: S.FAIL, END: S.ENDED}
