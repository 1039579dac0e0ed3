"""What the audit trail's tests hold the product to, written out by hand."""

# The columns an entry's hash covers, in the chain's order; the trail adds "hash" itself.
HASHED = ("seq", "at", "actor", "action", "target_type", "target_id", "details", "prev_hash")
