"""What ingest tells the apps above it, without knowing who listens."""

from django.dispatch import Signal

# New messages in these queues (`queues`, a set of names) are (or will be, once the sender's
# transaction commits) in the lake, TBDL. Sent inside the transaction; receivers act on commit.
messages_arrived = Signal()
