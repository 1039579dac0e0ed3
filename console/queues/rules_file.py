"""Standing rules in a queue file: `rules:` beside `queues:` and `sources:`, each proposed by
loading the file (manage.py load_queues FILE --proposer NAME) and approved on screen by a second
person, as one proposed in the console is.

The rules are console.rules', a layer above the queues (pyproject.toml, docs/architecture.md):
the queues may not import them. So the queues say here what they need, and console.rules hands
its loader over when Django starts (console/rules/apps.py), as the read models hand the queues
their counts (console/queues/counts.py)."""

_load = None


def provide(load):
    """Called once, by console.rules at start-up. `load(entries, proposer=, actor=)` proposes the
    rules `entries` (the file's list) in the caller's transaction, after the file's queues are
    written (a rule may name a queue of the same file), and answers (results, errors): results
    [(name, status)], status "proposed" or "unchanged"; errors, one sentence per problem, each
    naming its rule, and then nothing is proposed."""
    global _load
    _load = load


def rules_load(entries, *, proposer, actor):
    if _load is None:
        return [], ["this install has no standing rules (console.rules): a file cannot carry rules"]
    return _load(entries, proposer=proposer, actor=actor)
