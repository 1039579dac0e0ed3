"""What the lake tells the rest of the console, without knowing who listens (console.lake is
below every app that reads the lake: it imports none of them)."""

from django.dispatch import Signal

# Events commits are (or will be, once the sender's transaction commits) visible that the read
# models have not folded. Sent inside the transaction; receivers act on commit.
events_to_fold = Signal()
