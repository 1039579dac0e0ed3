"""What the read models tell the apps above them, without knowing who listens."""

from django.dispatch import Signal

# A refresh brought failure groups that were not in the read models before. Sent inside the
# transaction that loads them.
groups_appeared = Signal()  # fingerprints

# A refresh loaded the failure groups' latest failures (every refresh, full or incremental). Sent
# inside its transaction, after groups_appeared: a listener reads FailureGroup as it now is.
groups_refreshed = Signal()

# The counts the console shows are not what the lake says: a move took one below zero, or a
# check (console.readmodels.verify) recounted them and found a difference. Sent inside the
# transaction of its cause. `about`: what drifted (one alert per thing and period); `text`: for
# people; `details`: what differs.
counts_drifted = Signal()  # about, text, details
