from django.apps import AppConfig


class RulesConfig(AppConfig):
    name = "console.rules"
    label = "rules"
    verbose_name = "standing rules"

    def ready(self):
        # Each hands an app below what it asks of the rules (imports run downwards only).
        import console.rules.history
        import console.rules.queue_file
        import console.rules.redirects  # noqa: F401 - redirects, scopes, request notes (decisions)
