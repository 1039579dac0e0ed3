"""What the delivery app announces, for whoever listens (its receivers hand work to workers)."""

import django.dispatch

# A run let go of queues that were asked for while it held them (new messages arrived, a
# decision put some back in TBDL): they want a run of their own now, not at beat's next tick.
# Sent inside the transaction that frees them, with queues=[names].
queues_wanted = django.dispatch.Signal()
