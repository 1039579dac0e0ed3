"""What the queues' bookkeeping tells the apps above it, without knowing who listens."""

from django.dispatch import Signal

# A broker source's consumer changed state (starting, connecting, consuming, down, stopped).
# Sent inside the transaction that records it.
source_state_changed = Signal()  # name, state, error
