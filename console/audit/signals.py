"""What the audit trail tells the rest of the console, without knowing who listens (console.audit
is below every app: it imports none of them). The alerts (console.alerts) listen."""

from django.dispatch import Signal

# An entry was appended. Sent inside the transaction that appends it, which is its cause's own:
# a receiver's writes commit, or roll back, with the cause.
recorded = Signal()  # entry

# A full walk of the chain found it broken (console.audit.watch).
verify_failed = Signal()  # result
