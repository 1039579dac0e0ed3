"""What the read models tell the apps above them, without knowing who listens."""

from django.dispatch import Signal

# A refresh brought failure groups that were not in the read models before. Sent inside the
# transaction that loads them.
groups_appeared = Signal()  # fingerprints
